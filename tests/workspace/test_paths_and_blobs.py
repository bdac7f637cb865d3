"""Path normalization, globs, and the blob stores (a local directory; S3 over a mock transport)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

from think.errors import StorageError
from think.storage import Database
from think.workspace import InvalidPath, LocalBlobStore, S3BlobStore, Workspace
from think.workspace.blobs import sign_v4
from think.workspace.paths import glob_regex, normalize_path, normalize_pattern, parent_of


@pytest.mark.parametrize(("raw", "expected"), [
    ("a.txt", "/a.txt"), ("/a/./b/../c", "/a/c"), ("../../etc/passwd", "/etc/passwd"), ("///", "/"),
    ("/a/b/", "/a/b"), ("..", "/"), ("/x/../../..", "/"), ("a\\..\\b", "/a\\..\\b"),
])
def test_normalize_path(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


def test_invalid_paths() -> None:
    with pytest.raises(InvalidPath):
        normalize_path("/a\x00")
    with pytest.raises(InvalidPath):
        normalize_path("/" + "é" * 128)  # 256 bytes
    with pytest.raises(InvalidPath):
        normalize_path("/a" * 2049)
    with pytest.raises(InvalidPath):
        normalize_path(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidPath):
        normalize_pattern("  ")
    assert parent_of("/") == "" and parent_of("/a") == "/" and parent_of("/a/b") == "/a"


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("/*.md", "/a.md", True), ("/*.md", "/d/a.md", False), ("/**/*.md", "/a.md", True),
    ("/**/*.md", "/d/e/a.md", True), ("/d/**", "/d/e/f", True), ("/?.txt", "/ab.txt", False),
    ("/[!a]*", "/b", True), ("/[!a]*", "/a", False), ("/{a,b}.txt", "/b.txt", True), ("/a+b.txt", "/a+b.txt", True),
    ("/a.txt", "/aXtxt", False),
])
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_signature_v4_matches_the_aws_example() -> None:
    # "Example: GET Object" from the Amazon S3 Signature Version 4 documentation.
    headers = sign_v4("GET", "https://examplebucket.s3.amazonaws.com/test.txt", body=b"",
                      access_key_id="AKIAIOSFODNN7EXAMPLE",
                      secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region="us-east-1",
                      now=dt.datetime(2013, 5, 24, tzinfo=dt.UTC), headers={"Range": "bytes=0-9"})
    assert headers["authorization"].endswith(
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


async def test_s3_blob_store_round_trip() -> None:
    objects: dict[str, bytes] = {}

    def bucket(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=key/")
        key = request.url.path
        if request.method == "PUT":
            objects[key] = request.content
            return httpx.Response(200)
        if request.method == "GET":
            return httpx.Response(200, content=objects[key]) if key in objects else httpx.Response(404)
        objects.pop(key, None)
        return httpx.Response(204)

    store = S3BlobStore("https://s3.example", "files", access_key_id="key", secret_access_key="secret",
                        prefix="agent-1/", client=httpx.AsyncClient(transport=httpx.MockTransport(bucket)))
    ws = Workspace(Database(":memory:"), blobs=store, inline_threshold=100)
    await ws.write_file("/big.bin", b"z" * 1000)
    [key] = objects
    assert key.startswith("/files/agent-1/default/")
    assert await ws.read_bytes("/big.bin") == b"z" * 1000
    await ws.rm("/big.bin")
    assert objects == {}
    assert await store.get("default/missing") is None
    await store.aclose()


async def test_blob_keys_cannot_escape(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    for key in ("../x", "a/../../x", "/abs", ""):
        with pytest.raises(StorageError):
            await store.put(key, b"x")
    await store.put("ns/ok", b"fine")
    assert await store.get("ns/ok") == b"fine"
    await store.delete("ns/ok")
    await store.delete("ns/ok")  # deleting twice is fine
    assert await store.get("ns/ok") is None
