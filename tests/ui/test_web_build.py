"""The committed page in think/web/dist is what `npm ci && npm run build` makes from web/.

Vite's output is deterministic (hashed names, byte-identical files), so a stale build (sources
edited, dist not rebuilt) shows up as a difference here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.system_tools import need
from think.web import DIST

WEB = Path(__file__).parents[2] / "web"


def _run(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` in {cwd} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}",
                    pytrace=False)


def _installed_matches_lock() -> bool:
    lock = json.loads((WEB / "package-lock.json").read_text())["packages"]
    for path, entry in lock.items():
        if not path or entry.get("optional"):
            continue
        manifest = WEB / path / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != entry.get("version"):
            return False
    return True


@pytest.fixture(scope="module")
def web_modules() -> Path:
    purpose = "checking the built page against web/"
    need("node", purpose=purpose)
    npm = need("npm", purpose=purpose)
    if not _installed_matches_lock():
        _run([npm, "ci", "--no-audit", "--no-fund"], WEB)
    return WEB / "node_modules"


def test_dist_is_the_build_of_the_sources(web_modules: Path, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None
    _run([node, str(web_modules / "typescript" / "bin" / "tsc"), "--noEmit"], WEB)
    out = tmp_path / "dist"
    _run([node, str(web_modules / "vite" / "bin" / "vite.js"), "build", "--outDir", str(out), "--emptyOutDir"], WEB)

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    built, committed = files(out), files(DIST)
    assert sorted(built) == sorted(committed), "think/web/dist is stale: run `cd web && npm run build`"
    for name, data in built.items():
        assert committed[name] == data, f"{name} differs from a fresh build: run `cd web && npm run build`"
