"""How the `think` command sets up logging; library code never does (no `basicConfig` anywhere else).

think logs with the standard `logging` module, on loggers under `think` (`think.turns`: one line
per turn; `think.models`: failed provider calls; `think.loop`: retries; `think.recovery`;
`think.scheduling`; `think.protocol`: refused client frames; `think.fetch`: one line per fetch
tool call; `think.server`, …). An app that
serves agents itself configures them as it likes. `think serve` calls `configure_logging` once:
one handler on the root logger, writing to stderr as text or as one JSON object per line; `think`
loggers at the chosen level, everything else (uvicorn, httpx) at WARNING unless the level is
DEBUG; uvicorn's access log only when asked for.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Literal, TextIO

import orjson

LogFormat = Literal["text", "json"]
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
"""The attributes every record has; anything else on a record came from `extra=`."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: `time`, `level`, `logger`, `message`, the fields the record
    carries in `extra` (the `think` dict is spread out), and `exception` with its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key in _RECORD_FIELDS or key in out:
                continue
            if key == "think" and isinstance(value, dict):
                out.update((k, v) for k, v in value.items() if k not in out)
            else:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        return orjson.dumps(out, default=str).decode()


def configure_logging(level: str = "info", fmt: LogFormat = "text", *, access_log: bool = False,
                      stream: TextIO | None = None) -> logging.Handler:
    """Send log records to `stream` (stderr) at `level` for `think.*` loggers; returns the handler.

    Replaces handlers an earlier call installed, so calling it twice does not double the lines.
    """
    numeric = LEVELS[level.lower()]
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler._think_cli = True  # type: ignore[attr-defined]  # marks ours, for the next call
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_think_cli", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    others = logging.DEBUG if numeric == logging.DEBUG else logging.WARNING
    root.setLevel(others)
    logging.getLogger("think").setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.asgi"):  # uvicorn gets `log_level=None`: ours stand
        logging.getLogger(name).setLevel(others)
    access = logging.getLogger("uvicorn.access")
    access.setLevel(logging.INFO if access_log else logging.CRITICAL + 1)
    if numeric == logging.DEBUG:  # the HTTP client's own lines are noise even there
        for name in ("httpcore", "hpack"):
            logging.getLogger(name).setLevel(logging.INFO)
    return handler

