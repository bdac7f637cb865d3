"""Names on the wire: the original's kebab-casing of class names, and safe file names for agents."""

from __future__ import annotations

import functools
import hashlib
import re
from urllib.parse import quote

from think.errors import ConfigurationError


@functools.lru_cache(maxsize=1024)  # (asked several times per agent open and close)
def kebab_case(name: str) -> str:
    """`MyAgent` → `my-agent`, `ChatAgentV2` → `chat-agent-v2`, `MY_AGENT` → `my-agent`.

    The rules of `camelCaseToKebabCase` in the `agents` package, so URLs match the JS client's.
    """
    if name.upper() == name and any(c.isalpha() for c in name):
        return name.lower().replace("_", "-")
    kebab = re.sub(r"[A-Z]", lambda m: "-" + m.group(0).lower(), name)
    kebab = kebab.removeprefix("-").replace("_", "-")
    return kebab.removesuffix("-")


def check_agent_name(name: str) -> str:
    """An instance name: any non-empty text up to 256 characters without control characters."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError("an agent name must be a non-empty string")
    if len(name) > 256:
        raise ConfigurationError(f"an agent name may have at most 256 characters, not {len(name)}")
    if any(ord(c) < 32 for c in name):
        raise ConfigurationError("an agent name may not contain control characters")
    return name


def file_name(name: str) -> str:
    """A file name for an instance: readable when possible, always unique and safe."""
    safe = quote(name, safe="-_.")
    if safe.startswith("."):
        safe = "%2E" + safe[1:]
    if len(safe) > 120:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        safe = f"{safe[:100]}~{digest}"
    return safe
