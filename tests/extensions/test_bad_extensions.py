"""Manifests and sources that cannot load: a clear error naming the problem, and nothing loaded
(no tools, no context blocks, no stored row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.extensions.agents import GREETER, Assistant
from think import open_agent
from think.extensions import ExtensionError, ExtensionManifest, sanitize_name
from think.testing.models import ScriptedModel, call

TOOL = '{"description": "D.", "execute": f, "parameters": %s}'

BAD_SOURCES = {
    "syntax": ("def broken(:\n    pass\n", "SyntaxError"),
    "flat object": ("def greet(args, host):\n    return 1\ngreet_tool = {'description': 'x', 'execute': greet}\n",
                    "the source defines no `tools`"),
    "tools not a dict": ("tools = ['a']\n", "`tools` must be a dict"),
    "empty tools": ("tools = {}\n", "`tools` is empty"),
    "no execute": ("tools = {'t': {'description': 'x', 'parameters': {}}}\n", "tool 't' has no execute function"),
    "no description": ("def f(a, h):\n    return 1\ntools = {'t': {'execute': f}}\n", "tool 't' needs a description"),
    "invalid schema": ("def f(a, h):\n    return 1\ntools = {'t': "
                       + TOOL % '{"type": "object", "properties": 3}' + "}\n",
                       "tool 't' has an invalid parameters schema"),
    "schema of a string": ("def f(a, h):\n    return 1\ntools = {'t': " + TOOL % '{"type": "string"}' + "}\n",
                           "parameters must describe an object"),
    "bad tool name": ("def f(a, h):\n    return 1\ntools = {'no spaces': " + TOOL % "{}" + "}\n",
                      "tool name 'no spaces' is not valid"),
    "unknown hook": ("def f(a, h):\n    return 1\nhooks = {'before_step': f}\ntools = {'t': " + TOOL % "{}" + "}\n",
                     "unknown hook 'before_step'"),
    "raises at import": ("raise RuntimeError('boom')\n", "boom"),
    "runs forever": ("while True:\n    pass\n", "TimeoutError"),
    "empty": ("  \n", "the extension source is empty"),
}

BAD_MANIFESTS: dict[str, tuple[dict[str, Any], str]] = {
    "no name": ({}, "name: Field required"),
    "name sanitises to empty": ({"name": "!!! ---"}, "needs a letter or digit"),
    "unknown permission": ({"name": "x", "permissions": {"shell": True}}, "permissions.shell: Extra inputs"),
    "bad workspace level": ({"name": "x", "permissions": {"workspace": "all"}}, "permissions.workspace"),
    "URL instead of host": ({"name": "x", "permissions": {"network": ["https://a.example/x"]}},
                            "is not a host pattern"),
    "wildcard host": ({"name": "x", "permissions": {"network": ["*"]}}, "is not a host pattern"),
    "bad context label": ({"name": "x", "context": [{"label": "a b"}]}, "context.0.label"),
    "duplicate context labels": ({"name": "x", "context": [{"label": "a"}, {"label": "a"}]}, "must be unique"),
    "unknown hook": ({"name": "x", "hooks": ["before_step"]}, "hooks.0"),
    "declared hook missing": ({"name": "x", "hooks": ["on_chunk"]}, "declares hooks the source does not define"),
}


def nothing_loaded(agent: Assistant) -> None:
    assert agent.extensions.list() == [] and agent.extensions.get_tools() == {}
    assert agent.db.value("SELECT count(*) FROM think_extensions") == 0
    assert not [label for label in agent.session.context.labels() if label.startswith("x_")]


@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
async def test_a_bad_source_is_a_clear_error_and_loads_nothing(data_dir: Path, case: str) -> None:
    source, expected = BAD_SOURCES[case]
    async with open_agent(Assistant, "b", data_dir=data_dir) as agent:
        with pytest.raises(ExtensionError) as raised:
            await agent.extensions.load({"name": "x", "context": [{"label": "notes"}]}, source)
        assert expected in str(raised.value), str(raised.value)
        nothing_loaded(agent)


@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
async def test_a_bad_manifest_is_a_clear_error_and_loads_nothing(data_dir: Path, case: str) -> None:
    manifest, expected = BAD_MANIFESTS[case]
    async with open_agent(Assistant, "m", data_dir=data_dir) as agent:
        with pytest.raises(ExtensionError) as raised:
            await agent.extensions.load(manifest, GREETER)
        assert expected in str(raised.value), str(raised.value)
        nothing_loaded(agent)


async def test_duplicate_names_and_prefixes_are_refused(data_dir: Path) -> None:
    async with open_agent(Assistant, "d", data_dir=data_dir) as agent:
        await agent.extensions.load({"name": "my-tools", "version": "1"}, GREETER)
        for name in ("my-tools", "my tools", "my__tools!"):  # the same name, or the same prefix
            with pytest.raises(ExtensionError, match=r"already loaded|would name its tools my_tools_"):
                await agent.extensions.load({"name": name, "version": "2"}, GREETER)
        assert [(e["name"], e["version"]) for e in agent.extensions.list()] == [("my-tools", "1")]


async def test_an_extension_cannot_replace_a_tool_of_the_agent(data_dir: Path) -> None:
    """`load` + `extension` would be `load_extension`; `set` + `context` would be `set_context`."""
    source = ("def f(a, h):\n    return 'mine'\n"
              "tools = {'extension': " + TOOL % "{}" + ", 'context': " + TOOL % "{}" + "}\n")
    async with open_agent(Assistant, "r", data_dir=data_dir) as agent:
        with pytest.raises(ExtensionError, match="would replace tools of this agent: load_extension"):
            await agent.extensions.load({"name": "load"}, source)
        agent.session.context.add("memory")
        with pytest.raises(ExtensionError, match="would replace tools of this agent: set_context"):
            await agent.extensions.load({"name": "set"}, source)
        nothing_loaded(agent)
        await agent.extensions.load({"name": "mine"}, source)  # its own names are fine
        assert sorted(agent.extensions.get_tools()) == ["mine_context", "mine_extension"]


async def test_the_model_gets_the_error_as_its_tool_result(data_dir: Path) -> None:
    Assistant.model = ScriptedModel([call("load_extension", name="x", source="def broken(:\n"), "I see."])
    async with open_agent(Assistant, "t", data_dir=data_dir) as agent:
        await agent.chat("Load it")
        [part] = agent.messages[-1].tool_parts
        assert part.state == "output-error" and "SyntaxError" in (part.error_text or "")
        nothing_loaded(agent)


def test_names_sanitise_as_the_original_does() -> None:
    assert sanitize_name("My Notes!") == "My_Notes"
    assert sanitize_name("--a..b--") == "a_b"
    with pytest.raises(ExtensionError, match="no letters or digits"):
        sanitize_name("¡¿")
    assert ExtensionManifest.parse({"name": "a"}).prefix == "a"
    with pytest.raises(ExtensionError, match="an extension manifest is an object"):
        ExtensionManifest.parse(["a"])  # type: ignore[arg-type]
