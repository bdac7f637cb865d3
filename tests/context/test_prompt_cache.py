"""Prompt-cache-stable truncation (`Think.truncation_step`): older tool outputs are truncated for
the model, but the cutoff moves only every `truncation_step` messages, so the prefix a provider
caches stays byte-identical between moves. A fake provider counts the identical prefix of each
request (by message) and reports it as cached input tokens, as providers do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from think import Think, open_agent, tool
from think.models.base import ModelRequest, ToolMessage
from think.testing.models import Reply, ScriptedModel, call, text, usage


class PrefixCache:
    """What a provider's prompt cache sees: the longest prefix (system + messages) identical to
    the previous request's; tokens are characters / 4."""

    def __init__(self) -> None:
        self.previous: list[str] = []
        self.cached = 0
        self.total = 0

    def __call__(self, request: ModelRequest) -> tuple[int, int]:
        current = [request.system, *(repr(m) for m in request.messages)]
        same = 0
        for before, now in zip(self.previous, current, strict=False):
            if before != now:
                break
            same += 1
        self.previous = current
        total, cached = sum(map(len, current)) // 4, sum(map(len, current[:same])) // 4
        self.total += total
        self.cached += cached
        return total, cached


@tool
def read_doc(name: str) -> str:
    """Read a document.

    Args:
        name: Which one.
    """
    return f"{name}: " + "lorem ipsum " * 200


def agent_class(step: int, cache: PrefixCache) -> type[Think]:
    def script(request: ModelRequest) -> Reply:
        total, cached = cache(request)
        if isinstance(request.messages[-1], ToolMessage):
            return [text(f"Summary of {request.last_user_text}."), usage(input=total, cached=cached, output=5)]
        return [call("read_doc", name=request.last_user_text), usage(input=total, cached=cached, output=5)]

    class Cached(Think):
        truncation_step = step
        workspace_bash = False

        def get_model(self) -> ScriptedModel:
            return ScriptedModel(script)

        def get_tools(self) -> list[Any]:
            return [read_doc]

        def get_system_prompt(self) -> str:
            return "You summarise documents."

    return Cached


async def run(tmp_path: Path, step: int, turns: int = 24) -> float:
    """The share of input tokens the provider served from its cache over `turns` turns."""
    cache = PrefixCache()
    reported = 0
    async with open_agent(agent_class(step, cache), f"step-{step}", data_dir=tmp_path) as agent:
        for i in range(turns):
            result = await agent.save_messages(f"doc-{i}")
            assert result.status == "completed" and result.usage is not None
            reported += sum(s.cached_input_tokens or 0 for s in result.usage.steps)
    assert reported == cache.cached  # what the provider reported reaches the turn's usage
    return cache.cached / cache.total


async def test_a_stepped_cutoff_keeps_the_provider_cache_hitting(tmp_path: Path) -> None:
    every_message = await run(tmp_path / "1", 1)
    stepped = await run(tmp_path / "8", 8)
    print(f"cached input share over 24 turns: cutoff moving every message {every_message:.0%}, "
          f"every 8 messages {stepped:.0%}")
    # Uncached input (what a provider bills in full) at least a third lower with the step.
    assert 1 - stepped < (1 - every_message) * 2 / 3
