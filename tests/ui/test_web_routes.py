"""`think.web.web_routes`: the page, its assets and `/_think/info`, without a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

import think.web
from think.web import DIST, web_routes

INFO = {"agents": ["assistant"], "model": "demo", "demo": True, "version": "0.1.0", "prefix": "agents"}


def client(info: Any = lambda: INFO) -> TestClient:
    return TestClient(Starlette(routes=web_routes(info)))


def test_the_page_is_served_uncached_with_a_content_security_policy() -> None:
    response = client().get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert '<div id="root">' in response.text


def test_assets_are_served_with_a_long_cache_and_referenced_relatively() -> None:
    page = client().get("/").text
    names = sorted(p.name for p in (DIST / "assets").iterdir() if p.suffix not in (".gz", ".br"))
    assert any(n.endswith(".js") for n in names) and any(n.endswith(".css") for n in names)
    for name in names:
        if not name.endswith(".woff2"):  # the font is referenced from the CSS
            assert f'"./assets/{name}"' in page
        response = client().get(f"/assets/{name}")
        assert response.status_code == 200
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert client().get("/assets/missing.js").status_code == 404


def test_text_assets_are_sent_precompressed_as_the_browser_accepts() -> None:
    [script] = [p for p in (DIST / "assets").iterdir() if p.suffix == ".js"]
    raw = script.read_bytes()
    app = client()

    for accept, coding in (("gzip, deflate, br, zstd", "br"), ("gzip", "gzip"), ("br;q=0, gzip;q=0.5", "gzip"),
                           ("identity", None), ("", None)):
        response = app.get(f"/assets/{script.name}", headers={"accept-encoding": accept})
        assert response.status_code == 200
        assert response.headers.get("content-encoding") == coding, accept
        assert response.headers["content-type"].startswith("text/javascript")
        assert response.headers["vary"] == "Accept-Encoding"
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        # The client decodes gzip (and br when a brotli module is installed): the same script.
        brotli = script.with_name(script.name + ".br").read_bytes()
        assert response.content == raw or (coding == "br" and response.content == brotli)
        if coding is not None:
            assert int(response.headers["content-length"]) < len(raw) / 3
    font = next(p for p in (DIST / "assets").iterdir() if p.suffix == ".woff2")
    assert "content-encoding" not in app.get(f"/assets/{font.name}", headers={"accept-encoding": "br"}).headers


def test_info_comes_from_the_callable_at_each_request() -> None:
    calls: list[int] = []

    def info() -> dict[str, Any]:
        calls.append(1)
        return {**INFO, "model": f"model-{len(calls)}"}

    app = client(info)
    assert app.get("/_think/info").json()["model"] == "model-1"
    response = app.get("/_think/info")
    assert response.json() == {**INFO, "model": "model-2"}
    assert response.headers["cache-control"] == "no-store"


def test_info_may_be_async() -> None:
    async def info() -> dict[str, Any]:
        return INFO

    assert client(info).get("/_think/info").json() == INFO


def test_a_missing_build_explains_how_to_make_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(think.web, "DIST", tmp_path / "dist")
    app = client()
    response = app.get("/")
    assert response.status_code == 503
    assert "npm run build" in response.text
    assert app.get("/assets/index.js").status_code == 404
    assert app.get("/_think/info").json() == INFO
