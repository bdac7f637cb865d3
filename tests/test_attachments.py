"""Reply attachments: `ctx.attach_reply` in tools, capped per turn, dropped with a failed call,
visible in `on_chat_response` and `reply_attachments(request_id)` (also after a restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think import ConfigurationError, Think, ToolContext, ToolFailed, TurnResult, open_agent, tool
from think.attachments import MAX_REPLY_ATTACHMENTS_PER_TURN
from think.testing.models import ScriptedModel, call


@tool
def draft_email(ctx: ToolContext, to: str) -> str:
    """Draft an email."""
    ctx.attach_reply({"type": "email_draft", "to": to, "body": "Hello!"})
    return "drafted"


@tool
def flaky_card(ctx: ToolContext) -> str:
    """Attaches a card, then fails."""
    ctx.attach_reply({"type": "card", "title": "never shown"})
    raise ToolFailed("the card service is down")


@tool
def many_cards(ctx: ToolContext, count: int) -> int:
    """Attach `count` cards."""
    return sum(ctx.attach_reply({"type": "card", "n": n}) for n in range(count))


@tool
def bad_attachment(ctx: ToolContext) -> str:
    """Attach something that is not an attachment."""
    ctx.attach_reply({"title": "no type"})
    return "unreachable"


class Mailer(Think):
    script: Any = None

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.responses: list[TurnResult] = []

    def get_model(self) -> ScriptedModel:
        return ScriptedModel(type(self).script)

    def get_tools(self) -> list[Any]:
        return [draft_email, flaky_card, many_cards, bad_attachment]

    async def on_chat_response(self, result: TurnResult) -> None:
        self.responses.append(result)


def mailer(script: Any) -> type[Mailer]:
    return type("Scripted", (Mailer,), {"script": script})


async def test_attachments_of_successful_calls_reach_the_response_and_storage(data_dir: Path) -> None:
    cls = mailer([[call("draft_email", to="ada@example.com"), call("flaky_card")], "Done."])
    async with open_agent(cls, "mail", data_dir=data_dir) as agent:
        result = await agent.save_messages(["Email Ada"])
        expected = [{"type": "email_draft", "to": "ada@example.com", "body": "Hello!"}]
        assert list(result.attachments) == expected  # the failed call's card was dropped
        assert list(agent.responses[0].attachments) == expected
        assert agent.reply_attachments(result.request_id) == expected
        assert agent.reply_attachments() == expected
        assert agent.reply_attachments("another-turn") == []
    async with open_agent(cls, "mail", data_dir=data_dir) as agent:  # started again
        assert agent.reply_attachments(result.request_id) == expected


async def test_a_turn_keeps_at_most_the_cap(data_dir: Path) -> None:
    cls = mailer([[call("many_cards", count=MAX_REPLY_ATTACHMENTS_PER_TURN + 5)], "Done."])
    async with open_agent(cls, "cap", data_dir=data_dir) as agent:
        result = await agent.save_messages(["cards please"])
        assert len(result.attachments) == MAX_REPLY_ATTACHMENTS_PER_TURN
        assert agent.messages[-1].tool_parts[0].output == MAX_REPLY_ATTACHMENTS_PER_TURN  # the rest said False


async def test_an_invalid_attachment_fails_the_tool_call_and_attach_reply_needs_a_turn(data_dir: Path) -> None:
    cls = mailer([[call("bad_attachment")], "Done."])
    async with open_agent(cls, "bad", data_dir=data_dir) as agent:
        result = await agent.save_messages(["go"])
        part = agent.messages[-1].tool_parts[0]
        assert part.state == "output-error" and "type" in (part.error_text or "")
        assert result.attachments == ()
    with pytest.raises(ConfigurationError, match="inside a turn"):
        ToolContext(tool_call_id="x", tool_name="y").attach_reply({"type": "card"})
