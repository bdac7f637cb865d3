"""The app a server subprocess serves (`python -m uvicorn tests.submissions.server_app:app`)."""

import os

from tests.submissions.agents import Ledgered
from think.server import create_app

app = create_app([Ledgered], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60)
