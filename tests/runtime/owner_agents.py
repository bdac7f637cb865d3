"""An agent for the one-process-per-data-dir tests: each HTTP request counts a hit in its database
and answers which process served it."""

from __future__ import annotations

import os
from typing import Any

from starlette.responses import JSONResponse

from think import Agent


class Ledger(Agent):
    async def on_request(self, request: Any) -> Any:
        hits = int(self.kv_get("hits", 0)) + 1
        self.kv_set("hits", hits)
        return JSONResponse({"pid": os.getpid(), "hits": hits})

    def hits(self) -> int:
        return int(self.kv_get("hits", 0))
