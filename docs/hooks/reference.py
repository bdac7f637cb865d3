"""MkDocs hook: one API reference page per public package of `think`, generated at build time
(`reference/index.md` is the top-level `think` package, `reference/think.tools.md` and so on the rest).

A package is public when no part of its dotted name starts with `_` and its `__init__.py` assigns a
literal `__all__`; its page documents every name in that `__all__` (mkdocstrings follows the lazy
PEP 562 tables through their `TYPE_CHECKING` imports to the real objects). Nothing is imported:
the `__all__` lists are read with `ast`, so a new package or export shows up on the next build
without touching `mkdocs.yml`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

PACKAGE = "think"
SECTION = "reference"


def public_packages(root: Path) -> dict[str, list[str]]:
    """Map each public package under `root/think` (dotted name) to its `__all__`, in name order."""
    found: dict[str, list[str]] = {}
    for init in sorted((root / PACKAGE).rglob("__init__.py")):
        parts = init.parent.relative_to(root).parts
        if any(part.startswith("_") for part in parts):
            continue
        names = _literal_all(init)
        if names is not None:
            found[".".join(parts)] = names
    return dict(sorted(found.items()))


def _literal_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "__all__":
            return [str(name) for name in ast.literal_eval(value)]
    return None


def page_for(package: str, names: list[str], title: str | None = None, intro: str = "") -> str:
    """The Markdown of one package's reference page."""
    lines = [
        f"# {title or f'`{package}`'}",
        "",
        intro,
        f"::: {package}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
    ]
    for name in sorted(names, key=lambda n: (n.startswith("_"), n.lower())):
        lines += [f"::: {package}.{name}", "    options:", "      show_root_heading: true",
                  "      show_root_full_path: false", ""]
    return "\n".join(lines)


def index_page(packages: dict[str, list[str]]) -> str:
    """The reference's first page: the top-level `think` names, after a table of the subpackages."""
    rows = "\n".join(f"| [`{package}`]({package}.md) | {len(names)} |"
                      for package, names in packages.items() if package != PACKAGE)
    intro = (
        "Generated from the docstrings and type hints of every public package (one whose `__init__.py`\n"
        "has an `__all__`). Most programs need only the top-level `think` names below; the subpackages:\n\n"
        f"| package | public names |\n| --- | --- |\n{rows}\n"
    )
    return page_for(PACKAGE, packages[PACKAGE], title="API reference: `think`", intro=intro)


def on_files(files: Files, config: Any) -> Files:
    root = Path(config.config_file_path).parent
    packages = public_packages(root)
    files.append(File.generated(config, f"{SECTION}/index.md", content=index_page(packages)))
    for package, names in packages.items():
        if package == PACKAGE:
            continue  # on the index page
        files.append(File.generated(config, f"{SECTION}/{package}.md", content=page_for(package, names)))
    return files
