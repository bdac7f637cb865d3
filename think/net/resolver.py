"""Name resolution for outbound connections: the system resolver, or a fixed table (tests, pinning).

A `Resolver` turns a host name into the addresses to try; `think.net.client` checks every address
it returns against the URL policy and connects only to the ones it checked, so a name cannot
resolve to a public address for the check and a private one for the connection.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import anyio


@runtime_checkable
class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> Sequence[str]:
        """The IP addresses of `host`, best first; raises OSError when there are none."""
        ...


class SystemResolver:
    """The operating system's resolver (`getaddrinfo`), run off the event loop."""

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        seen: dict[str, None] = {}
        for _family, _type, _proto, _name, sockaddr in infos:
            seen.setdefault(str(sockaddr[0]), None)
        return list(seen)


class StaticResolver:
    """A fixed table of host name → addresses; names not in it fail to resolve (or go to
    `fallback`). Counts lookups per name in `lookups`, which tests use to see that a connection
    did not look a name up twice."""

    def __init__(self, table: Mapping[str, Sequence[str]], *, fallback: Resolver | None = None) -> None:
        self.table = {name.lower().rstrip("."): list(addresses) for name, addresses in table.items()}
        self.fallback = fallback
        self.lookups: dict[str, int] = {}

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        name = host.lower().rstrip(".")
        self.lookups[name] = self.lookups.get(name, 0) + 1
        if name in self.table:
            return list(self.table[name])
        if self.fallback is not None:
            return await self.fallback.resolve(host, port)
        raise OSError(f"{host} does not resolve")
