"""The app the steer kill test runs in a subprocess (`python -m uvicorn tests.turns.steer_app:app`)."""

import os

from tests.turns.steer_agents import SteerKill
from think.server import create_app

app = create_app([SteerKill], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60)
