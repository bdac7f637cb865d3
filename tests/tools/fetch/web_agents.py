"""An agent that reads the web, for the end-to-end and kill tests (`THINK_TEST_SITE_PORT` names
the port of the test site on 127.0.0.1). Its model asks for `fetch_url` on the site's `/once` page,
then answers with what the tool returned."""

from __future__ import annotations

import os
from typing import Any

from think import Think, callable
from think.models.base import ModelRequest, ToolMessage
from think.recovery import ChatRecoveryPolicy
from think.testing.models import ScriptedModel, call
from think.tools.fetch import create_fetch_tools


def _reply(request: ModelRequest) -> Any:
    if request.messages and isinstance(request.messages[-1], ToolMessage):
        seen = "06:12" in str(request.messages[-1])
        return f"High water is at 06:12 (fetched: {seen})."
    return call("fetch_url", url=f"http://127.0.0.1:{os.environ['THINK_TEST_SITE_PORT']}/once")


class WebReader(Think):
    workspace_bash = False
    chat_recovery = ChatRecoveryPolicy(backoff=0.0)

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        port = os.environ["THINK_TEST_SITE_PORT"]
        self.fetch_tools = create_fetch_tools([f"http://127.0.0.1:{port}/**"], allow_private_networks=["127.0.0.1/32"],
                                              timeout=60)
        self.model = ScriptedModel(_reply)

    def get_model(self) -> ScriptedModel:
        return self.model

    @callable
    async def submit(self, question: str) -> str:
        accepted = await self.submit_messages([question], idempotency_key=question)
        return accepted.submission_id
