"""Sub-agent paths on the wire: `/agents/<parent>/<name>/sub/<child-class>/<child-name>[/…]`.

Only children the parent created are reachable (a browser cannot spawn them); nesting works
(`…/sub/a/x/sub/b/y`). What follows the child's segments is the child's own path (for example
`get-messages`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think.runtime.agent import Agent
from think.subagents.children import SubAgents, child_address

if TYPE_CHECKING:
    from think.runtime.base import AgentRuntime


class SubAgentNotFound(LookupError):
    """The path names no child this agent has (or a child class this process cannot find)."""


def is_sub_path(rest: str) -> bool:
    return rest == "sub" or rest.startswith("sub/")


async def resolve_sub_path(runtime: AgentRuntime, cls: type[Agent], name: str,
                           rest: str) -> tuple[type[Agent], str, str]:
    """The `(class, instance name, rest of the path)` that `rest` names under `(cls, name)`."""
    while is_sub_path(rest):
        parts = rest.split("/", 3)
        if len(parts) < 3 or not parts[1] or not parts[2]:
            raise SubAgentNotFound("A sub-agent path is …/sub/<agent-class>/<name>")
        kebab, child, rest = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        async with runtime.lease(cls, name) as parent:
            children = getattr(parent, "sub_agents", None)
            exists, child_cls = children.lookup(kebab, child) if isinstance(children, SubAgents) else (False, None)
            if not exists:
                raise SubAgentNotFound(f"No sub-agent {kebab}/{child} under {cls.kebab_name()}/{name}")
            if child_cls is None:
                raise SubAgentNotFound(f"Unknown sub-agent class {kebab!r}")
            cls, name = child_cls, child_address(parent, child_cls, child)
    return cls, name, rest
