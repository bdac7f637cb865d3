"""MkDocs hook: the pages a newcomer reads first lead the navigation; everything else keeps the
order MkDocs gives it (folders and files by name), so a new page still needs no edit anywhere."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.nav import Navigation

FIRST = ("index.md", "tutorial.md", "how-a-turn-works.md", "examples.md", "testing.md", "deploying.md",
         "security.md")
"""Top-level pages, in reading order, placed before every other entry of the navigation."""


def on_nav(nav: Navigation, config: Any, files: Any) -> Navigation:
    def rank(item: Any) -> int:
        path = getattr(getattr(item, "file", None), "src_uri", None)
        return FIRST.index(path) if path in FIRST else len(FIRST)

    nav.items.sort(key=rank)  # a stable sort: the rest stays in MkDocs' order
    return nav
