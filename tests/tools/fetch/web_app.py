"""The app the fetch kill test serves in a subprocess (`python -m uvicorn tests.tools.fetch.web_app:app`)."""

import os

from tests.tools.fetch.web_agents import WebReader
from think.server import create_app

app = create_app([WebReader], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60)
