"""UI protocols: the wire formats an agent is served in, each a thin codec over one turn engine.

    create_app([Assistant], protocols=["cf_agent", "ai-sdk"])

A protocol is a name and a function that returns Starlette routes:

    UIProtocol(name="ai-sdk", routes=lambda context: [Route(...), ...])

`context` (a `ProtocolContext`) is all a codec gets from the app: the served classes by kebab
name, the `AgentRegistry` (its `.runtime` too) that owns live agents and their turns, the URL
prefix, `admit(conn)` — the path's agent class and name, checked and put through the app's
`on_before_connect` hook exactly as a WebSocket upgrade is (DESIGN §4.5: one auth decision) —
and `http(endpoint)`, which adds the app's CORS answer. A codec trusts nothing a client sends:
messages, tool results and approvals go through the turn path's checks (`think.turns.trust`),
never around them.

Built-in names, imported only when mounted (so an SDK a codec needs loads only then):

| name       | module                         | what it serves                                 | `think serve` |
|------------|--------------------------------|------------------------------------------------|---------------|
| `cf_agent` | `think.server.app`             | the WebSocket chat protocol and `…/get-messages` | on          |
| `ai-sdk`   | `think.ui_protocols.ai_sdk`    | `useChat`'s HTTP stream at `…/<name>/chat`     | on            |
| `ag-ui`    | `think.ui_protocols.ag_ui`     | AG-UI `RunAgentInput` → SSE at `…/<name>/ag-ui` | on           |
| `a2a`      | `think.ui_protocols.a2a`       | A2A JSON-RPC and agent cards                   | on            |

A built-in module exposes `protocol: UIProtocol`; its routes build their endpoints on the first
request (`think.ui_protocols.deferred`), so a protocol's SDK is not imported to start serving.
`register_protocol()` adds one of your own (or replaces a built-in). `cf_agent` is the app's own
routes and is always mounted after the others, so a codec's paths (`…/chat`) win over the catch-all `on_request` route.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from think.errors import ConfigurationError

if TYPE_CHECKING:
    from think.runtime.agent import Agent
    from think.server.agents import AgentRegistry

CF_AGENT = "cf_agent"

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class ProtocolContext:
    """What the app hands a protocol's `routes` factory."""

    classes: Mapping[str, type[Agent]]
    """The served agent classes by kebab name (`/agents/<kebab>/<name>`)."""
    registry: AgentRegistry
    """Owns live agents (`registry.use(cls, name)` → an `AgentHost`); `registry.runtime` leases them."""
    base: str
    """The URL prefix with its leading slash (`"/agents"`), or `""` at the root."""
    admit: Callable[[HTTPConnection], Awaitable[tuple[type[Agent], str] | Response]]
    """The path's (`{agent}`, `{name}` params) class and instance name, or the refusal: 400 for an
    unknown class or bad name, or whatever `on_before_connect` answered."""
    authorize: Callable[[HTTPConnection, type[Agent], str], Awaitable[Response | None]]
    """`on_before_connect` for a class and name a route found some other way (None: let through)."""
    http: Callable[[Endpoint], Endpoint]
    """Wraps an endpoint with the app's CORS answer (preflight and headers)."""


@dataclass(frozen=True)
class UIProtocol:
    """A protocol: its name and the function that builds its routes."""

    name: str
    routes: Callable[[ProtocolContext], Sequence[BaseRoute]]


BUILTIN: dict[str, str] = {
    "ai-sdk": "think.ui_protocols.ai_sdk",
    "ag-ui": "think.ui_protocols.ag_ui",
    "a2a": "think.ui_protocols.a2a",
}
"""Built-in protocol names → the module whose `protocol` attribute serves it."""

SERVE_DEFAULT: tuple[str, ...] = (CF_AGENT, "ai-sdk", "ag-ui", "a2a")
"""What `think serve` mounts unless `--protocols` says otherwise (those that are available)."""

_registered: dict[str, UIProtocol] = {}


def register_protocol(protocol: UIProtocol) -> None:
    """Make `protocol.name` mountable by `create_app(protocols=[...])` (replaces one of that name)."""
    if protocol.name == CF_AGENT:
        raise ConfigurationError("'cf_agent' is the app's own protocol and cannot be replaced")
    _registered[protocol.name] = protocol


def available_protocols() -> list[str]:
    """Every name `protocols=` accepts: `cf_agent`, the built-ins present, and registered ones."""
    names = [CF_AGENT, *(n for n in BUILTIN if _find_builtin(n)), *_registered]
    return list(dict.fromkeys(names))


NEEDS: dict[str, str] = {"a2a": "a2a.server"}
"""Built-ins whose SDK is an optional extra (`think-agents[a2a]`): the module it must provide."""


def _find_builtin(name: str) -> bool:
    needs = NEEDS.get(name)
    if needs is not None:
        try:
            if importlib.util.find_spec(needs) is None:
                return False
        except ModuleNotFoundError:  # the parent package is missing
            return False
    return importlib.util.find_spec(BUILTIN[name]) is not None


def find_protocol(name: str) -> UIProtocol:
    """The protocol called `name` (a registered one, else a built-in, imported now)."""
    if name in _registered:
        return _registered[name]
    module_name = BUILTIN.get(name)
    if module_name is None:
        raise ConfigurationError(f"unknown protocol {name!r}; available: {', '.join(available_protocols())}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"protocol {name!r} cannot be loaded: {exc}") from exc
    protocol = getattr(module, "protocol", None)
    if not isinstance(protocol, UIProtocol):
        raise ConfigurationError(f"{module_name} has no `protocol` (a UIProtocol)")
    return protocol


def check_protocols(names: Iterable[str]) -> list[str]:
    """`names` without repeats, each one known (raises `ConfigurationError` for one that is not)."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ConfigurationError(f"protocols: {name!r} is not a protocol name")
        if name != CF_AGENT:
            find_protocol(name)
        if name not in out:
            out.append(name)
    return out


def protocol_routes(names: Iterable[str], context: ProtocolContext) -> list[BaseRoute]:
    """The routes of every protocol in `names` but `cf_agent` (the app adds its own), in order."""
    routes: list[BaseRoute] = []
    for name in check_protocols(names):
        if name != CF_AGENT:
            routes.extend(find_protocol(name).routes(context))
    return routes


def serve_defaults() -> list[str]:
    """`SERVE_DEFAULT` minus the built-ins this install cannot load."""
    return [name for name in SERVE_DEFAULT if name == CF_AGENT or name in _registered
            or (name in BUILTIN and _find_builtin(name))]
