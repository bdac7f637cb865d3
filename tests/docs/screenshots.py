"""The web UI's screenshots in the docs: taken by the browser tests, so they cannot go stale.

    python -m tests.docs.screenshots      # run the UI tests, copy the screenshots the docs show

runs `tests/ui` with `THINK_UI_SCREENSHOTS` pointing at a fresh folder, copies every screenshot a
docs page shows (`![…](images/<name>.png)`) into `docs/images/`, and records in
`docs/images/manifest.json` which UI build they show (the hashed name of the built script in
`think/web/dist/index.html`). `tests/docs/test_screenshots.py` fails when the committed UI build
is not that one: a change to the UI needs new screenshots, made by this command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
IMAGES = DOCS / "images"
MANIFEST = IMAGES / "manifest.json"
_REFERENCE = re.compile(r"\]\(images/([\w.-]+\.png)\)")


def shown() -> dict[str, list[str]]:
    """Screenshot name → the docs pages that show it."""
    found: dict[str, list[str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for name in _REFERENCE.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(str(page.relative_to(ROOT)))
    return found


def ui_build() -> str:
    """The built UI's identity: the hashed file name of its script."""
    index = (ROOT / "think" / "web" / "dist" / "index.html").read_text(encoding="utf-8")
    match = re.search(r"assets/(index-[\w-]+\.js)", index)
    if match is None:
        raise RuntimeError("think/web/dist/index.html names no index-*.js: build the UI first")
    return match.group(1)


def update() -> int:
    wanted = shown()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "THINK_UI_SCREENSHOTS": folder, "PYTHONPATH": str(ROOT)}
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/ui"],
                             cwd=ROOT, env=env, check=False)
        if run.returncode != 0:
            print("the UI tests failed; the screenshots were not updated", file=sys.stderr)
            return run.returncode
        missing = sorted(name for name in wanted if not (Path(folder) / name).exists())
        if missing:
            print(f"no UI test took {', '.join(missing)} (shown by the docs)", file=sys.stderr)
            return 1
        IMAGES.mkdir(exist_ok=True)
        for old in IMAGES.glob("*.png"):
            if old.name not in wanted:
                old.unlink()
        for name in wanted:
            shutil.copyfile(Path(folder) / name, IMAGES / name)
    MANIFEST.write_text(json.dumps({"ui_build": ui_build(), "screenshots": sorted(wanted)}, indent=2) + "\n",
                        encoding="utf-8")
    print(f"{len(wanted)} screenshots of {ui_build()} in {IMAGES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(update())
