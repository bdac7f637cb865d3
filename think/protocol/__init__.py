"""The `cf_agent_*` WebSocket protocol, sans-I/O: typed frames and their text form.

`parse_frame` / `encode_frame` are the server's side, `encode_client_frame` /
`parse_server_frame` a client's. Nothing here touches a socket. The frames are in `frames.py`.
"""

from think.protocol.client_codec import encode_client_frame, parse_server_frame
from think.protocol.codec import InvalidFrame, UnknownFrame, encode_frame, parse_frame
from think.protocol.transcript import InvalidMessage, LazyMessages

__all__ = [
    "InvalidFrame",
    "InvalidMessage",
    "LazyMessages",
    "UnknownFrame",
    "encode_client_frame",
    "encode_frame",
    "parse_frame",
    "parse_server_frame",
]
