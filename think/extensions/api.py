"""The extension methods of `Think` (a mixin: the work is done by `ExtensionManager`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from think.messages import JSONObject
from think.runtime.rpc import callable as rpc_callable

if TYPE_CHECKING:
    from think.extensions.capabilities import NetworkOptions
    from think.extensions.hooks import ExtensionHooks
    from think.extensions.manager import Extension, ExtensionManager
    from think.hooks import LoopHooks
    from think.sandbox.host import HostLimits


class ExtensionAPI:
    """An agent's extensions: `get_extensions()` at start, `self.extensions` (the manager)."""

    extension_limits: ClassVar[HostLimits | None] = None
    """What one call of an extension's tool or hook may use (`think.sandbox.host.HostLimits`;
    None: `think.extensions.DEFAULT_LIMITS`, 10 s, 32 MB, 200 host calls)."""
    extension_hook_timeout: ClassVar[float] = 5.0
    """Seconds one extension hook may take."""
    extension_network: ClassVar[NetworkOptions | None] = None
    """How `host.fetch` reaches the network (`think.extensions.NetworkOptions`: resolver, private
    networks it may reach, timeout, body cap); None: public addresses only, the system resolver."""

    _extension_manager: ExtensionManager | None = None

    def get_extensions(self) -> Sequence[Extension | Mapping[str, Any]]:
        """Static extensions, loaded in this order at every start (the order their hooks run in):
        `Extension(manifest, source)` or `{"manifest": …, "source": …}`."""
        return ()

    @property
    def extensions(self) -> ExtensionManager:
        """The agent's `ExtensionManager` (load, unload, list, get_tools)."""
        if self._extension_manager is None:
            from think.extensions import DEFAULT_LIMITS, create_extension_manager

            agent: Any = self
            self._extension_manager = create_extension_manager(
                agent.db, workspace=agent.workspace, session=agent.session, send_message=self._extension_message,
                limits=self.extension_limits or DEFAULT_LIMITS, network=self.extension_network,
                hook_timeout=self.extension_hook_timeout, taken_names=self._tool_names)
        return self._extension_manager

    def _tool_names(self) -> list[str]:
        from think.turns.trust import agent_tools

        agent: Any = self
        return list(agent_tools(agent))

    async def _extension_message(self, text: str) -> None:
        """`host.send_message`: a user message after everything there is; sent from inside a turn
        (a tool, a hook), it waits for that turn's reply to be stored and follows it."""
        from think.messages import Message
        from think.turns.api import in_turn

        agent: Any = self
        message = Message.user(text)
        if not in_turn(self):
            await agent.add_messages([message])
            return
        held: list[Message] = self.__dict__.setdefault("_extension_messages", [])
        held.append(message)
        if "_extension_flush" not in self.__dict__:
            self.__dict__["_extension_flush"] = agent.fanout.subscribe(self._flush_extension_messages)

    async def _flush_extension_messages(self, event: Any) -> None:
        from think.stream.fanout import TurnFinished

        held = self.__dict__.get("_extension_messages")
        if not isinstance(event, TurnFinished) or not held:
            return
        self.__dict__["_extension_messages"] = []
        agent: Any = self
        await agent.add_messages(held)

    async def _start_extensions(self) -> None:
        """At start: the static extensions, then the stored ones (nothing is built for an agent
        that has neither)."""
        static = self.get_extensions()
        agent: Any = self
        if static or (not agent._blank and agent.db.value("SELECT 1 FROM think_extensions LIMIT 1") is not None):
            await self.extensions.restore(static)

    def _extension_tools(self) -> dict[str, Any]:
        manager = self._extension_manager
        return manager.get_tools() if manager is not None else {}

    def _extension_hooks(self, hooks: LoopHooks) -> ExtensionHooks:
        from think.extensions.hooks import ExtensionHooks

        return ExtensionHooks(hooks, self._extension_manager)

    @rpc_callable(description="The loaded extensions: name, version, permissions, tools, hooks, context blocks.")
    def loaded_extensions(self) -> list[JSONObject]:
        return self.extensions.list()


__all__ = ["ExtensionAPI"]
