"""The `cf_agent_*` WebSocket protocol, sans-I/O: typed frames and their text form.

`parse_frame` / `encode_frame` are the server's side, `encode_client_frame` /
`parse_server_frame` a client's. Nothing here touches a socket. The frames are in `frames.py`;
the one nesting-depth limit for everything that enters is in `limits.py`.
"""

from think.protocol.client_codec import encode_client_frame, parse_server_frame
from think.protocol.codec import InvalidFrame, UnknownFrame, encode_frame, parse_frame
from think.protocol.limits import MAX_DEPTH, TooDeep, check_depth
from think.protocol.transcript import InvalidMessage, LazyMessages

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
