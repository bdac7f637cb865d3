"""Blob stores: where workspace files above the inline threshold live.

A blob store holds opaque byte strings under keys the workspace chooses (`<namespace>/<uuid>`);
the SQLite row keeps the file's metadata and the key. Two stores ship: `LocalBlobStore`, a
directory (the default, next to the agent's database), and `S3BlobStore`, any S3-compatible
bucket (AWS S3, Cloudflare R2, MinIO…) over plain HTTPS with Signature Version 4.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import hmac
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote

import anyio.to_thread

from think.errors import StorageError

_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*$")


@runtime_checkable
class BlobStore(Protocol):
    """Bytes by key. Keys are `[A-Za-z0-9_.-]` segments joined by `/`, never `..`."""

    async def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The bytes under `key`, or None if there are none."""
        ...

    async def delete(self, key: str) -> None:
        """Remove `key`; a missing key is not an error."""
        ...


def check_key(key: str) -> str:
    if not _KEY.match(key) or ".." in key.split("/"):
        raise StorageError(f"invalid blob key {key!r}")
    return key


class LocalBlobStore:
    """Blobs as files under a directory (created on first write). Writes are atomic renames."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / check_key(key)

    async def put(self, key: str, data: bytes) -> None:
        await anyio.to_thread.run_sync(self._put, self._path(key), data)

    @staticmethod
    def _put(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def get(self, key: str) -> bytes | None:
        return await anyio.to_thread.run_sync(self._get, self._path(key))

    @staticmethod
    def _get(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> None:
        path = self._path(key)
        with contextlib.suppress(OSError):
            path.unlink()

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.directory)!r})"


class S3BlobStore:
    """Blobs in an S3-compatible bucket, addressed path-style: `<endpoint>/<bucket>/<prefix><key>`.

        S3BlobStore("https://<account>.r2.cloudflarestorage.com", "agent-files",
                    access_key_id=..., secret_access_key=..., region="auto")
    """

    def __init__(self, endpoint: str, bucket: str, *, access_key_id: str, secret_access_key: str,
                 region: str = "us-east-1", prefix: str = "", timeout: float = 60.0,
                 client: Any = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.bucket = bucket
        self.access_key_id = access_key_id
        self.secret_access_key = secret_access_key
        self.region = region
        self.prefix = prefix
        self.timeout = timeout
        self._client = client

    def _url_path(self, key: str) -> str:
        return "/" + quote(f"{self.bucket}/{self.prefix}{check_key(key)}", safe="/-_.~")

    async def _request(self, method: str, key: str, body: bytes = b"") -> Any:
        import httpx  # only S3 users pay for the import

        path = self._url_path(key)
        url = self.endpoint + path
        headers = sign_v4(method, url, body=body, access_key_id=self.access_key_id,
                          secret_access_key=self.secret_access_key, region=self.region)
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        try:
            return await self._client.request(method, url, content=body or None, headers=headers)
        except httpx.HTTPError as exc:
            raise StorageError(f"S3 {method} {key}: {exc}") from exc

    async def put(self, key: str, data: bytes) -> None:
        response = await self._request("PUT", key, data)
        if response.status_code >= 300:
            raise StorageError(f"S3 PUT {key} failed: {response.status_code} {response.text[:200]}")

    async def get(self, key: str) -> bytes | None:
        response = await self._request("GET", key)
        if response.status_code == 404:
            return None
        if response.status_code >= 300:
            raise StorageError(f"S3 GET {key} failed: {response.status_code} {response.text[:200]}")
        return bytes(response.content)

    async def delete(self, key: str) -> None:
        response = await self._request("DELETE", key)
        if response.status_code >= 300 and response.status_code != 404:
            raise StorageError(f"S3 DELETE {key} failed: {response.status_code} {response.text[:200]}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def sign_v4(method: str, url: str, *, body: bytes, access_key_id: str, secret_access_key: str,
            region: str, service: str = "s3", now: _dt.datetime | None = None,
            headers: dict[str, str] | None = None) -> dict[str, str]:
    """The headers that sign one S3 request with AWS Signature Version 4 (payload hashed)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    moment = (now or _dt.datetime.now(_dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    day = moment[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    all_headers = {"host": parts.netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": moment}
    for name, value in (headers or {}).items():
        all_headers[name.lower()] = value.strip()
    signed = sorted(all_headers)
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(_query_pairs(parts.query)))
    canonical = "\n".join([
        method, parts.path or "/", canonical_query,
        "".join(f"{name}:{all_headers[name]}\n" for name in signed),
        ";".join(signed), payload_hash,
    ])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", moment, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_access_key}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = {name: all_headers[name] for name in signed if name != "host"}
    out["authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
                            f"SignedHeaders={';'.join(signed)}, Signature={signature}")
    return out


def _query_pairs(query: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(query, keep_blank_values=True)
