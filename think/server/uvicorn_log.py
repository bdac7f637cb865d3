"""One quiet line, not an ERROR with a traceback, when a client sends text that is not UTF-8.

uvicorn's WebSocket protocols decode text frames before the app sees them. On invalid UTF-8 the
one `--ws auto` picks (`websockets-sansio`) closes the connection with 1007, which is right, and
logs the `UnicodeDecodeError` with `logger.exception`: an ERROR and a traceback for every such
connection, so a hostile client could fill the log at will. The app never receives the frame, so
the record itself is the place to act: `create_app` puts `QuietInvalidUtf8` on uvicorn's error
logger, which turns that record (and only that one) into a WARNING line without the traceback.
The connection is closed right after it, so there is at most one line per connection.
"""

from __future__ import annotations

import logging

UVICORN_LOGGER = "uvicorn.error"
MESSAGE = "A WebSocket client sent a text frame that is not valid UTF-8; its connection was closed (1007)"
_WEBSOCKET_PROTOCOLS = "uvicorn/protocols/websockets/"


class QuietInvalidUtf8(logging.Filter):
    """Rewrites uvicorn's record of a text frame that is not UTF-8; passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc_type = record.exc_info[0] if record.exc_info else None
        if exc_type is not None and issubclass(exc_type, UnicodeDecodeError) \
                and _WEBSOCKET_PROTOCOLS in record.pathname.replace("\\", "/"):
            record.msg, record.args = MESSAGE, ()
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
            record.exc_info = record.exc_text = record.stack_info = None
        return True


def quiet_invalid_utf8() -> None:
    """Install `QuietInvalidUtf8` on uvicorn's error logger (once per process)."""
    logger = logging.getLogger(UVICORN_LOGGER)
    if not any(isinstance(f, QuietInvalidUtf8) for f in logger.filters):
        logger.addFilter(QuietInvalidUtf8())
