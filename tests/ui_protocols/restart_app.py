"""The app the AG-UI and A2A restart tests serve in a subprocess it SIGKILLs (`tests.ui_protocols.restart_app:app`)."""

import os

from tests.node.agents import NodeRecovering
from think.server import create_app

app = create_app([NodeRecovering], data_dir=os.environ["THINK_DATA_DIR"], idle_timeout=60,
                 protocols=["cf_agent", "ag-ui", "a2a"])
