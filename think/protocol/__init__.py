"""The `cf_agent_*` WebSocket protocol, sans-I/O: typed frames and their text form.

`parse_frame` / `encode_frame` are the server's side, `encode_client_frame` /
`parse_server_frame` a client's. Nothing here touches a socket. The frames are in `frames.py`;
the one nesting-depth limit for everything that enters is in `limits.py`.

Names are loaded on first use (the `think` package's scheme): the agent's code imports
`limits` and `payloads` without loading the frame models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think._lazy import lazy_exports

if TYPE_CHECKING:
    from think.protocol.client_codec import encode_client_frame, parse_server_frame
    from think.protocol.codec import InvalidFrame, UnknownFrame, encode_frame, parse_frame
    from think.protocol.limits import MAX_DEPTH, TooDeep, check_depth
    from think.protocol.transcript import InvalidMessage, LazyMessages

_EXPORTS: dict[str, str] = {
    "encode_client_frame": "think.protocol.client_codec",
    "parse_server_frame": "think.protocol.client_codec",
    "InvalidFrame": "think.protocol.codec",
    "UnknownFrame": "think.protocol.codec",
    "encode_frame": "think.protocol.codec",
    "parse_frame": "think.protocol.codec",
    "MAX_DEPTH": "think.protocol.limits",
    "TooDeep": "think.protocol.limits",
    "check_depth": "think.protocol.limits",
    "InvalidMessage": "think.protocol.transcript",
    "LazyMessages": "think.protocol.transcript",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "MAX_DEPTH",
    "InvalidFrame",
    "InvalidMessage",
    "LazyMessages",
    "TooDeep",
    "UnknownFrame",
    "check_depth",
    "encode_client_frame",
    "encode_frame",
    "parse_frame",
    "parse_server_frame",
]
