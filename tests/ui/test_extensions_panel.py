"""The extensions panel of the shipped page, in headless Chromium against a real server: a static
extension from the start, and one the model loads in a turn, listed once that turn is over, each
with its version, grants and tools (the agent's `loaded_extensions()` callable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.extensions.agents import GREETER, NOTES
from tests.ui.conftest import SCREENSHOTS, Browser
from think import Think
from think.extensions import Extension, create_extension_tools
from think.testing import ScriptedModel
from think.testing.models import call

ADDRESS = "extension-assistant"


class ExtensionAssistant(Think):
    workspace_bash = False
    model = ScriptedModel([call("load_extension", name="notes", version="1.2.0", source=NOTES,
                                workspace_access="read-write"), "Loaded."])

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> dict[str, Any]:
        return create_extension_tools(self.extensions, needs_approval=False)

    def get_extensions(self) -> list[Extension]:
        return [Extension({"name": "greeter", "version": "2.0.0", "permissions": {"network": ["api.example.com"]}},
                          GREETER)]


def test_the_panel_lists_static_and_model_loaded_extensions(browser: Browser, serve: Callable[..., Any]) -> None:
    item = "#extensions-panel [data-extension='{}'] {}".format
    with serve([ExtensionAssistant]) as url:
        run = browser.run(url, [
            {"action": "goto", "path": f"/#/{ADDRESS}/one"},
            {"action": "waitText", "selector": "button[aria-label='Extensions']", "text": "Extensions 1"},
            {"action": "fill", "selector": "#composer-input", "text": "Write a notes tool"},
            {"action": "press", "selector": "#composer-input", "key": "Enter"},
            {"action": "waitText", "selector": "button[aria-label='Extensions']", "text": "Extensions 2"},
            {"action": "click", "selector": "button[aria-label='Extensions']"},
            {"action": "waitFor", "selector": item("notes", ".extension-tools")},
            {"action": "text", "selector": "#extensions-panel .mcp-name", "as": "names"},
            {"action": "text", "selector": "#extensions-panel .mcp-state", "as": "versions"},
            {"action": "text", "selector": "#extensions-panel .extension-grants", "as": "grants"},
            {"action": "text", "selector": "#extensions-panel .extension-tools", "as": "tools"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "extensions.png")},
        ])
    values = run.values
    assert values["names"] == ["greeter", "notes"] and values["versions"] == ["v2.0.0", "v1.2.0"]
    assert values["grants"] == ["network api.example.com", "workspace read-write"]
    assert values["tools"] == ["greeter_greet", "notes_save, notes_count"]
    assert not [line for line in run.console if line.startswith(("pageerror", "error"))]
