"""`AgentRuntime`: where agent instances live. The embedded runtime is one process over SQLite files;
a distributed runtime can implement the same interface."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from think.runtime.agent import Agent

A = TypeVar("A", bound="Agent")


class AgentRuntime(Protocol):
    """Creates, finds and retires agent instances: one live instance per `(class, name)`."""

    async def get(self, cls: type[A], name: str) -> A:
        """The live instance at this address, started if needed."""
        ...

    def lease(self, cls: type[A], name: str) -> AbstractAsyncContextManager[A]:
        """The live instance, kept out of hibernation until the block ends."""
        ...

    async def hibernate(self, cls: type[Agent], name: str) -> bool:
        """Retire an idle instance now; False if it is busy or not live."""
        ...

    async def close(self) -> None:
        """Retire every instance (waiting for none of their work: call when it is finished)."""
        ...


class AgentElsewhere(Exception):
    """`get`/`lease` of a distributed runtime: another process has the agent open, at `url`
    (the server forwards the request there, see `think.cluster.proxy`)."""

    def __init__(self, key: str, url: str) -> None:
        super().__init__(f"{key} is open in the process at {url}")
        self.key = key
        self.url = url
