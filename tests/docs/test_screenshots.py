"""The docs' screenshots of the web UI are the browser tests' own and show the UI as built."""

from __future__ import annotations

import json

from tests.docs.screenshots import IMAGES, MANIFEST, ROOT, shown, ui_build

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_every_screenshot_the_docs_show_is_taken_by_a_ui_test() -> None:
    wanted = shown()
    assert wanted, "no docs page shows a screenshot (docs/web-ui.md should)"
    tests = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests" / "ui").glob("test_*.py")))
    for name, pages in wanted.items():
        assert f'SCREENSHOTS / "{name}"' in tests, f"{name} (shown by {pages}) is taken by no test in tests/ui"
        assert (IMAGES / name).read_bytes()[:8] == PNG_MAGIC, f"docs/images/{name} is missing or not a PNG"
    assert sorted(p.name for p in IMAGES.glob("*.png")) == sorted(wanted), "docs/images has screenshots no page shows"


def test_the_screenshots_show_the_ui_as_built() -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert manifest["screenshots"] == sorted(shown())
    assert manifest["ui_build"] == ui_build(), (
        f"the screenshots show UI build {manifest['ui_build']}, the committed UI is {ui_build()}: "
        "take them again with `python -m tests.docs.screenshots`")
