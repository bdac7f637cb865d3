"""What the model reads back from an action: JSON-normalised outputs and structured errors.

Every outcome is a tool *output* (never a failed turn): a value made JSON-safe and capped at
`MAX_OUTPUT_CHARS`, or `{"error": {"name", "message", …}}` for an exception, a timeout, a
denial (`ActionAuthorizationError`), a call the ledger cannot run yet (`ActionPendingError`) or
an approval that does not match what runs.
"""

from __future__ import annotations

from typing import Any

import orjson

from think.messages import JSONObject

MAX_OUTPUT_CHARS = 16_000
"""Characters of an action's JSON output the model sees; longer outputs are cut to a preview."""


class ActionError(Exception):
    """Base of the errors an action's outcome can name."""

    def output(self, **extra: Any) -> JSONObject:
        return error_output(type(self).__name__, str(self), **extra)


class ActionPendingError(ActionError):
    """The ledger has this action's key in flight (or cut off by a crash): it is not run again."""


class ActionAuthorizationError(ActionError):
    """`authorize_action` (or the turn's grant) does not allow this call."""


class ActionApprovalError(ActionError):
    """What would run is not what a person approved (a changed input, no approval at all)."""


class ActionTimeoutError(ActionError):
    """`execute` ran longer than the action's `timeout`."""


def error_output(name: str, message: str, **extra: Any) -> JSONObject:
    return {"error": {"name": name, "message": message, **extra}}


def exception_output(exc: BaseException) -> JSONObject:
    return error_output(type(exc).__name__, str(exc) or type(exc).__name__)


def is_error_output(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("error"), dict) and "name" in value["error"]


def normalize_output(value: Any, *, limit: int = MAX_OUTPUT_CHARS) -> Any:
    """`value` as JSON (pydantic models dumped, other objects as their text), at most `limit`
    characters of it: a longer one becomes `{"truncated": true, "preview": …, "chars": n}`."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    encoded = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    text = encoded.decode()
    if len(text) > limit:
        return {"truncated": True, "chars": len(text), "preview": text[:limit]}
    return orjson.loads(encoded)


def input_fingerprint(arguments: JSONObject) -> str:
    """A stable text of an input, to compare what was approved with what runs."""
    return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str).decode()
