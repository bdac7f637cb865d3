"""The app the crash loop runs in a subprocess (`python -m uvicorn tests.recovery.crash_app:app`)."""

import os

from tests.recovery.crash_agents import Crashy
from think.server import create_app

app = create_app([Crashy], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60)
