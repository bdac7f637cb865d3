"""An extension's context blocks: in the system prompt as `<prefix>_<label>`, written by the model
only when `writable`, by the extension only with a write grant, gone with the extension."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from tests.extensions.agents import call_tool
from think import Think, open_agent
from think.testing.models import ScriptedModel, call

FACTS = '''
def remember(args, host):
    host.set_context("facts", args["fact"])
    host.set_context("index", args["fact"], key="first")
    return "ok"

def peek(args, host):
    return host.get_context("facts")

tools = {"remember": {"description": "Remember a fact.", "execute": remember,
                      "parameters": {"fact": {"type": "string"}}, "required": ["fact"]},
         "peek": {"description": "Read the facts.", "execute": peek, "parameters": {}}}
'''
MANIFEST = {"name": "kb", "permissions": {"context": {"write": "own"}},
            "context": [{"label": "facts", "description": "Known facts", "type": "readonly", "max_tokens": 50},
                        {"label": "scratch", "type": "writable"},
                        {"label": "index", "type": "searchable", "description": "Indexed facts"}]}


class Contextual(Think):
    model: ClassVar[ScriptedModel] = ScriptedModel([])
    workspace_bash = False

    def get_model(self) -> ScriptedModel:
        return type(self).model


async def test_blocks_are_in_the_prompt_and_writable_only_as_granted(data_dir: Path) -> None:
    Contextual.model = ScriptedModel([
        call("kb_remember", fact="The tide turns at 06:12"), "Noted.",
        call("set_context", label="kb_facts", content="model wrote this"),
        call("set_context", label="kb_scratch", content="draft"),
        call("search_context", label="kb_index", query="tide"), "Done.",
        "After unload.",
    ])
    async with open_agent(Contextual, "c", data_dir=data_dir) as agent:
        await agent.extensions.load(MANIFEST, FACTS)
        await agent.chat("Remember the tide")
        await agent.chat("Try to write")
        first, second = Contextual.model.requests[0].system, Contextual.model.requests[2].system
        assert "KB_FACTS (Known facts)" not in first  # empty read-only blocks are not shown
        assert "KB_SCRATCH [writable]" in first and "KB_INDEX (Indexed facts) [searchable]" in first
        assert "KB_FACTS (Known facts) [14% — 7/50 tokens] [readonly]\n" in second
        assert "The tide turns at 06:12" in second
        set_facts, set_scratch, search = agent.messages[-1].tool_parts
        assert set_facts.state == "output-error" and "kb_facts" in (set_facts.error_text or "")
        assert set_scratch.state == "output-available"
        assert (await agent.session.context.get("kb_scratch")).content == "draft"
        assert "[first] The tide turns at 06:12" in str(search.output)
        spec = next(t for t in Contextual.model.requests[2].tools if t.name == "set_context")
        assert spec.input_schema["properties"]["label"]["enum"] == ["kb_scratch"]
        # Unloaded: the blocks leave the prompt and the context tools with them; the content is gone.
        assert await agent.extensions.unload("kb")
        await agent.chat("And now?")
        last = Contextual.model.requests[-1]
        assert "KB_" not in last.system
        assert not {"set_context", "search_context", "kb_peek"} & {t.name for t in last.tools}
        assert agent.db.value("SELECT count(*) FROM think_context_blocks WHERE key LIKE 'ext:%'") == 0


async def test_an_extension_without_a_write_grant_cannot_write_its_own_blocks(data_dir: Path) -> None:
    async with open_agent(Contextual, "n", data_dir=data_dir) as agent:
        await agent.extensions.load({**MANIFEST, "permissions": {"context": {"read": ["facts"]}}}, FACTS)
        result = await call_tool(agent, "kb_remember", fact="x")
        assert "Extension error: permission denied: host.set_context() needs a context write grant" in str(result.error)
        assert (await agent.session.context.get("kb_facts")).content == ""
