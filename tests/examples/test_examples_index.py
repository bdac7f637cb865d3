"""Every example says how to serve it, greets the web UI, and is listed on the docs' examples page."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from think import Think

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.endswith("_server.py"))


def served_class(path: Path) -> type[Think]:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    found = re.search(rf"think serve examples/{re.escape(path.name)}:(\w+)", doc)
    assert found, f"{path.name}: the docstring does not say `think serve examples/{path.name}:<Class>`"
    spec = importlib.util.spec_from_file_location(f"examples_index_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls: type[Think] = getattr(module, found.group(1))
    return cls


def test_each_example_names_its_class_and_has_a_welcome_and_suggestions() -> None:
    assert len(EXAMPLES) >= 8
    for path in EXAMPLES:
        cls = served_class(path)
        assert issubclass(cls, Think), path.name
        assert cls.welcome and cls.suggestions, f"{path.name}: {cls.__name__} has no welcome or suggestions"


def test_each_example_but_the_quick_start_runs_offline_with_a_scripted_model() -> None:
    for path in EXAMPLES:
        if path.name == "assistant.py":
            continue  # it runs on the offline demo model when nothing is configured
        source = path.read_text(encoding="utf-8")
        assert f"python examples/{path.name}" in source and 'if __name__ == "__main__":' in source, path.name
        assert "ScriptedModel" in source, path.name


def test_the_examples_page_lists_every_example_with_its_class() -> None:
    page = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    for path in EXAMPLES:
        assert f"| `{path.name}` | `{served_class(path).__name__}` |" in page, path.name
