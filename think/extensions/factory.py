"""`create_extension_manager`: an `ExtensionManager` over the collaborators an agent offers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING

from think.extensions.blocks import ExtensionBlocks
from think.extensions.capabilities import ExtensionEnvironment, NetworkOptions
from think.extensions.manager import DEFAULT_LIMITS, HOOK_TIMEOUT, ExtensionManager
from think.sandbox.host import HostLimits, SandboxHost
from think.storage import Database

if TYPE_CHECKING:
    from think.sessions.session import Session
    from think.workspace.workspace import Workspace


def create_extension_manager(db: Database, *, workspace: Workspace | None = None, session: Session | None = None,
                             send_message: Callable[[str], Awaitable[None]] | None = None,
                             limits: HostLimits = DEFAULT_LIMITS, network: NetworkOptions | None = None,
                             hook_timeout: float = HOOK_TIMEOUT, host: SandboxHost | None = None,
                             taken_names: Callable[[], Collection[str]] | None = None) -> ExtensionManager:
    """An `ExtensionManager` over `db` (where loaded extensions are stored). Each collaborator is
    what extensions may be granted: the workspace (file methods), the session (its context
    blocks; `messages: "read"`), `send_message` (`session.send_message`); one that is None is never
    available, whatever a manifest asks. `limits` bound each call, `network` is how `host.fetch`
    connects (resolver, private networks; never taken from a manifest). `taken_names` lists the
    agent's other tools, which an extension's tools may not replace."""
    env = ExtensionEnvironment(workspace=workspace,
                               blocks=ExtensionBlocks(session.context, db) if session is not None else None,
                               messages=session.history if session is not None else None,
                               send_message=send_message, network=network or NetworkOptions(),
                               taken_names=taken_names)
    return ExtensionManager(db, env, host=host, limits=limits, hook_timeout=hook_timeout)


__all__ = ["create_extension_manager"]
