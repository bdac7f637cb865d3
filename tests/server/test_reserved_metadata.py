"""`reserved_metadata_keys`: metadata keys of the agent's own that a client's message over the
WebSocket may not carry (stripped, like the server's `channel`, `turnMetadata` and `usage`)."""

from __future__ import annotations

from pathlib import Path

from tests.chat.live_server import connector, serve_in_thread
from think import Think
from think.messages import Message
from think.runtime import EmbeddedRuntime
from think.server import create_app
from think.testing import ScriptedModel


class ReservedChat(Think):
    reserved_metadata_keys = ("tenant", "role")
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(lambda request: f"Echo: {request.last_user_text}")


async def test_a_clients_message_loses_the_agents_reserved_metadata_keys(tmp_path: Path) -> None:
    app = create_app([ReservedChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60))
    with serve_in_thread(app) as live:
        async with connector(live, "reserved-chat")("room") as client:
            claimed = Message.from_json({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}],
                                         "metadata": {"tenant": "acme", "role": "admin", "note": "kept"}})
            turn = await (await client.send_chat([claimed]))
            assert turn.outcome == "completed"
            [user, reply] = await client.get_messages()
    assert user.metadata == {"note": "kept", "channel": "web"}
    assert reply.text == "Echo: hi"
