"""The docs site builds with `mkdocs build --strict`, and its API reference covers every public name."""

from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import think

ROOT = Path(__file__).resolve().parents[2]


def _reference_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module exactly as a developer would (`--strict`: a warning fails it)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert not [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))], log
    return out


def _text(page: Path) -> str:
    """A page's visible text."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def _letters(text: str) -> str:
    """Only the word characters: Markdown and HTML markup in between do not matter."""
    return re.sub(r"\W+", "", text)


def test_the_strict_build_renders_every_docs_page(site: Path) -> None:
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md")
                   if "hooks" not in p.relative_to(ROOT / "docs").parts)
    assert pages, "no Markdown under docs/"
    for page in pages:
        built = site / ("index.html" if page.name == "index.md" else page.with_suffix("") / "index.html")
        if page.name == "index.md" and page.parent != Path("."):
            built = site / page.parent / "index.html"
        assert built.is_file(), f"docs/{page} was not built"


def test_the_reference_lists_the_same_packages_and_names_as_the_code() -> None:
    packages = _reference_hook().public_packages(ROOT)
    assert "think" in packages
    for package, names in packages.items():
        assert names == list(importlib.import_module(package).__all__), package
    assert packages["think"] == think.__all__


def test_every_public_name_is_documented_from_the_real_object(site: Path) -> None:
    """Each `__all__` name has an anchor on its package's page; a name with a docstring of its own
    shows that docstring's first words, so the lazy (PEP 562) tables were followed to the real object."""
    packages = _reference_hook().public_packages(ROOT)
    missing: list[str] = []
    for package, names in packages.items():
        page = site / "reference" / ("" if package == "think" else package) / "index.html"
        assert page.is_file(), f"no reference page for {package}"
        raw, text = page.read_text(encoding="utf-8"), _text(page)
        module = importlib.import_module(package)
        for name in names:
            if f'id="{package}.{name}"' not in raw:
                missing.append(f"{package}.{name}: no anchor")
                continue
            obj = getattr(module, name)
            own = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not own:
                continue
            first = inspect.cleandoc(own).split("\n")[0]
            if first.startswith(f"{obj.__name__}("):
                continue  # the signature a dataclass writes when it has no docstring
            if _letters(" ".join(first.split()[:6])) not in _letters(text):
                missing.append(f"{package}.{name}: docstring {first!r} not shown")
    assert not missing, "\n".join(missing)


def test_ci_installs_what_the_docs_extra_pins() -> None:
    """`.ci/run` installs `.[dev]`, so the dev extra must carry every pin of the `docs` extra."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["docs"]
    assert set(extras["docs"]) <= set(extras["dev"])


def test_the_tutorial_and_the_guides_lead_the_navigation(site: Path) -> None:
    """docs/hooks/nav_order.py: reading order first, then every other page as MkDocs lists it."""
    page = (site / "index.html").read_text(encoding="utf-8")
    nav = page[page.index('class="md-nav md-nav--primary"'):]
    guides = ["tutorial/", "how-a-turn-works/", "examples/", "testing/", "deploying/", "security/"]
    positions = [nav.index(f'href="{href}"') for href in [*guides, "architecture/"]]
    assert positions == sorted(positions), positions
