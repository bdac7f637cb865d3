"""The quick-start example agent, run as a user would run it first: with no model configured."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from think import Think, open_agent
from think.messages import TextPart, ToolPart
from think.models import registry
from think.models.default import default_model
from think.models.demo import DemoModel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "assistant.py"
PROVIDER_SETTINGS = ("THINK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def load_assistant() -> type[Think]:
    spec = importlib.util.spec_from_file_location("examples_assistant", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assistant: type[Think] = module.Assistant
    return assistant


@pytest.fixture
def no_model_configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An environment in which the default model resolution ends at the demo model."""
    for name in PROVIDER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(registry, "first_ollama_model", lambda base_url, **_: None)  # no Ollama, at once
    default_model.cache_clear()
    yield
    default_model.cache_clear()


@pytest.mark.usefixtures("no_model_configured")
async def test_the_example_answers_arithmetic_with_the_demo_model(tmp_path: Path) -> None:
    assistant = load_assistant()

    async with open_agent(assistant, "t", data_dir=tmp_path) as agent:
        assert isinstance(agent.resolve_model(agent.get_model()), DemoModel)
        result = await agent.save_messages(["what is 6*7?"])
        assert result.status == "completed"
        assert result.error is None
        transcript = [m.to_json() for m in agent.messages]
        user, reply = agent.messages

    assert user.role == "user"
    assert user.text == "what is 6*7?"
    assert reply.role == "assistant"
    [call] = [p for p in reply.parts if isinstance(p, ToolPart)]
    assert (call.type, call.state, call.input, call.output) == (
        "tool-calculate", "output-available", {"expression": "6*7"}, 42)
    final = reply.parts[-1]
    assert isinstance(final, TextPart)
    assert "42" in final.text

    async with open_agent(assistant, "t", data_dir=tmp_path) as agent:
        assert [m.to_json() for m in agent.messages] == transcript
