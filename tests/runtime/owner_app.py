"""`uvicorn tests.runtime.owner_app:app`: the `Ledger` agent served from `$THINK_DATA_DIR`."""

from tests.runtime.owner_agents import Ledger
from think.server import create_app

app = create_app([Ledger])
