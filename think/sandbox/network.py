"""Network for the bash sandbox: none by default, or an allowlist enforced by a host-side proxy.

With an allowlist, the sandbox gets a network namespace of its own whose only reachable address is
a proxy on `127.0.0.1:3128` inside it. The proxy's listening socket is created in that namespace
by this process, so the proxy itself runs here, outside the sandbox: it reads each request,
checks the destination against the allowlist, resolves the name once, refuses private and
loopback addresses unless the allowlist names that IP literally, and only then connects. The
sandbox sees `http_proxy`/`https_proxy` pointing at it, which curl, wget, pip, git and Python honour.

Allowlist entries: `"example.com"` (http and https on their default ports), `"*.example.com"`
(any subdomain), `"https://api.example.com"`, `"http://10.0.0.5:8080"`, and for plain http a path
prefix such as `"http://example.com/docs/"` (https paths are encrypted, so only host and port
can be checked there).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import logging
import os
import socket
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

log = logging.getLogger("think.sandbox")

PROXY_PORT = 3128
MAX_HEAD_BYTES = 16384
CONNECT_TIMEOUT = 10.0
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class AllowRule:
    scheme: str | None
    """`http`, `https`, or None for both."""
    host: str
    """Lower case; a leading `*.` matches any subdomain."""
    port: int | None
    """None: the scheme's default port."""
    path: str = "/"

    def matches(self, scheme: str, host: str, port: int, path: str) -> bool:
        if self.scheme is not None and self.scheme != scheme:
            return False
        expected_port = self.port if self.port is not None else _DEFAULT_PORTS[scheme]
        if port != expected_port:
            return False
        if self.host.startswith("*."):
            if not host.endswith(self.host[1:]):
                return False
        elif host != self.host:
            return False
        return scheme == "https" or path.startswith(self.path)

    @property
    def is_ip(self) -> bool:
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True


def parse_allowlist(entries: Sequence[str]) -> list[AllowRule]:
    """Allowlist entries as rules; raises ValueError for an entry that is not a host or URL."""
    rules: list[AllowRule] = []
    for entry in entries:
        text = entry.strip()
        scheme: str | None = None
        if "://" in text:
            parts = urlsplit(text)
            if parts.scheme not in _DEFAULT_PORTS:
                raise ValueError(f"network allowlist entry {entry!r}: only http and https are supported")
            scheme = parts.scheme
        else:
            parts = urlsplit("//" + text)
        host = (parts.hostname or "").rstrip(".").lower()
        if not host or parts.username or parts.password:
            raise ValueError(f"network allowlist entry {entry!r} is not a host name or URL")
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"network allowlist entry {entry!r} has a bad port") from exc
        rules.append(AllowRule(scheme, host, port, parts.path or "/"))
    return rules


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT))


_CGNAT = ipaddress.ip_network("100.64.0.0/10")


# ---- the namespace --------------------------------------------------------------------------------


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def _make_namespace() -> tuple[int, socket.socket]:
    """In this thread: a new network namespace with loopback up and the proxy's listening socket.

    Returns a descriptor of the namespace (for `nsenter --net`) and the socket; the thread is back
    in its original namespace when this returns or raises.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.unshare(_CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"cannot create a network namespace: {os.strerror(error)}")
        try:
            _loopback_up()
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", PROXY_PORT))
            listener.listen(64)
            namespace = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            if libc.setns(original, _CLONE_NEWNET) != 0:  # pragma: no cover - would need a kernel bug
                os.abort()  # a thread stuck in the sandbox's namespace must not serve anything else
        return namespace, listener
    finally:
        os.close(original)


async def create_namespace() -> tuple[int, socket.socket]:
    """`_make_namespace` in a short-lived thread of its own (never a pooled worker)."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = _make_namespace()
        except BaseException as exc:  # handed to the awaiting task
            outcome["error"] = exc

    thread = threading.Thread(target=work, name="think-netns", daemon=True)
    thread.start()
    await anyio.to_thread.run_sync(thread.join)
    if "error" in outcome:
        raise outcome["error"]
    value: tuple[int, socket.socket] = outcome["value"]
    return value


# ---- the proxy ------------------------------------------------------------------------------------


class AllowlistProxy:
    """An HTTP proxy (CONNECT and absolute-form requests) that only reaches allowlisted places."""

    def __init__(self, rules: Sequence[AllowRule]) -> None:
        self.rules = list(rules)
        self.log: list[str] = []
        """One line per request: `allow host:port` or `deny host:port (reason)`."""

    async def serve(self, listener_socket: socket.socket) -> None:
        """Serve connections until cancelled."""
        listener = await anyio.abc.SocketListener.from_socket(listener_socket)
        async with listener:
            await listener.serve(self._handle)

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    head, rest = await _read_head(client)
                await self._forward(client, head, rest)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    OSError, ValueError, UnicodeDecodeError):
                return

    async def _forward(self, client: anyio.abc.SocketStream, head: bytes, rest: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        if method.upper() == "CONNECT":
            scheme, path = "https", "/"
            host, _, port_text = target.rpartition(":")
            host, port = host.strip("[]").lower(), int(port_text)
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                await _respond(client, 400, "the sandbox proxy only forwards http:// URLs and CONNECT")
                return
            scheme, host, port = "http", url.hostname.lower(), url.port or 80
            path = url.path or "/"
        host = host.rstrip(".")
        rule = next((r for r in self.rules if r.matches(scheme, host, port, path)), None)
        if rule is None:
            self.log.append(f"deny {host}:{port} (not allowlisted)")
            await _respond(client, 403, f"{scheme}://{host}:{port}{path} is not on the sandbox's network allowlist")
            return
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [str(info[4][0]) for info in infos]
        allowed = [a for a in addresses if not _blocked(a) or (rule.is_ip and a == rule.host)]
        if not allowed:
            self.log.append(f"deny {host}:{port} (private address)")
            await _respond(client, 403, f"{host} resolves to a private or loopback address")
            return
        with anyio.fail_after(CONNECT_TIMEOUT):
            upstream = await anyio.connect_tcp(allowed[0], port)
        self.log.append(f"allow {host}:{port}")
        async with upstream:
            if method.upper() == "CONNECT":
                await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                origin_form = target[target.index(url.netloc) + len(url.netloc):] or "/"
                kept = [line for line in lines[1:] if line and not line.lower().startswith(
                    ("proxy-", "connection:", "keep-alive:"))]
                request = "\r\n".join([f"{method} {origin_form} {version}", *kept, "Connection: close", "", ""])
                await upstream.send(request.encode("latin-1") + rest)
            async with anyio.create_task_group() as group:
                group.start_soon(_pipe, client, upstream)
                group.start_soon(_pipe, upstream, client)


async def _read_head(stream: anyio.abc.SocketStream) -> tuple[bytes, bytes]:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD_BYTES:
            raise ValueError("request head too large")
        buffer += await stream.receive()
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


async def _respond(client: anyio.abc.SocketStream, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden"}.get(status, "Error")
    body = f"think sandbox: {text}\n".encode()
    await client.send(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                      f"Connection: close\r\n\r\n".encode() + body)


async def _pipe(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
        async for chunk in source:
            await sink.send(chunk)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await sink.send_eof()
