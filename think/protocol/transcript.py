"""`LazyMessages`: a transcript as it arrived on the wire, each message validated when first read.

Both directions carry whole transcripts: the stock client resends its entire history with every
chat request, and the server sends it on every connect. Validating ten thousand messages costs
far more than reading them; the reader usually needs a few (the new user message, the last
screenful). The envelope of every message (`id`, `role`) is checked up front by the codec; the
rest of a message is validated the first time it is read; a transcript from a client is also
held to the depth limit then (`limits.py`: a message may nest `MAX_DEPTH` levels).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from pydantic import ValidationError

from think.errors import ProtocolError
from think.messages import Message
from think.protocol.limits import TooDeep, check_depth


class InvalidMessage(ProtocolError):
    """A message of a received transcript is not a valid UIMessage (`index` says which)."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


class LazyMessages(Sequence[Message]):
    """Messages kept as received JSON; `self[i]` validates message `i` once (`InvalidMessage`).

    With `from_client`, a message nested deeper than the depth limit is invalid too.
    """

    __slots__ = ("_cache", "_envelope", "_from_client", "_raw")

    def __init__(self, raw: list[Any], *, from_client: bool = False,
                 envelope: tuple[list[str], list[str]] | None = None) -> None:
        """`envelope`: every message's id and role, when the codec has read them already."""
        self._raw = raw
        self._cache: list[Message | None] = [None] * len(raw)
        self._from_client = from_client
        self._envelope = envelope

    @classmethod
    def of(cls, messages: Sequence[Message], *more: Message) -> LazyMessages:
        """`messages` followed by `more`, keeping the JSON of lazy ones as it came."""
        if isinstance(messages, LazyMessages):
            lazy = cls([*messages._raw, *(m.to_json() for m in more)], from_client=messages._from_client)
            lazy._cache[: len(messages)] = messages._cache
        else:
            lazy = cls([m.to_json() for m in (*messages, *more)])
            lazy._cache[: len(messages)] = messages
        lazy._cache[len(lazy) - len(more):] = more
        return lazy

    @property
    def raw(self) -> list[Any]:
        """The messages as JSON, as they came (sending them on does not re-serialize them)."""
        return self._raw

    def id_at(self, index: int) -> Any:
        """The `id` of message `index` as received (a string once the codec checked it)."""
        return self._raw[index].get("id") if isinstance(self._raw[index], dict) else None

    def role_at(self, index: int) -> Any:
        return self._raw[index].get("role") if isinstance(self._raw[index], dict) else None

    def ids(self, stop: int | None = None) -> list[Any]:
        """`id_at(i)` of the first `stop` messages (all by default), in one pass."""
        if self._envelope is not None:
            return self._envelope[0][:stop]
        return [m.get("id") if isinstance(m, dict) else None for m in self._raw[:stop]]

    def roles(self, stop: int | None = None) -> list[Any]:
        """`role_at(i)` of the first `stop` messages (all by default), in one pass."""
        if self._envelope is not None:
            return self._envelope[1][:stop]
        return [m.get("role") if isinstance(m, dict) else None for m in self._raw[:stop]]

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        message = self._cache[index]
        if message is None:
            position = index if index >= 0 else len(self._raw) + index
            try:
                if self._from_client:
                    check_depth(self._raw[index], f"messages[{position}]")
                message = Message.model_validate(self._raw[index])
            except TooDeep as exc:
                raise InvalidMessage(str(exc), index=position) from None
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
                raise InvalidMessage(f"messages[{position}]{where}: {first['msg']}", index=position) from exc
            self._cache[index] = message
        return message

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyMessages({len(self._raw)} messages)"
