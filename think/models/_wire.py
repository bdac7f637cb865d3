"""What the HTTP adapters share: one streamed POST, error text, an owned client, data URLs.

`post_sse` is the only place that does I/O for the OpenAI-compatible and Anthropic adapters.
The format-specific work sits in a sans-I/O `StreamDecoder`, fed one server-sent event at a time.
`SseModel` is the adapters' common shell (headers, client, `stream`, `aclose`); each supplies its
request body and its decoder.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Protocol
from urllib.parse import unquote_to_bytes, urlsplit

import anyio.lowlevel
import httpx
import orjson

from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent
from think.models.sse import aiter_sse

log = logging.getLogger("think.models")

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""Ten minutes between bytes (reasoning models can think for long before the first token)."""

Timeout = float | httpx.Timeout | None
LOGGED_BODY_CHARS = 200
"""How much of a provider's error text a log line keeps."""


class StreamDecoder(Protocol):
    """Turns one provider's server-sent events into stream events, without I/O."""

    stopped: bool
    """True once the provider said the stream is over (or failed); no more events are read."""

    def feed(self, data: str, event: str) -> list[StreamEvent]:
        """Translate one event. Never returns a `Finish`. Raises ValueError for malformed data."""
        ...

    def close(self) -> list[StreamEvent]:
        """What is left at the end of the stream, ending with exactly one `Finish`."""
        ...


async def post_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: dict[str, Any],
    http_timeout: Timeout,
    decoder: StreamDecoder,
) -> AsyncGenerator[StreamEvent, None]:
    """POST `body` as JSON and yield the decoded events of the streamed reply, ending with one `Finish`.

    Failures of any kind (HTTP status, network, timeout, malformed data) end the stream with
    `Finish(reason="error")`. The response is closed before the final events are yielded, and when
    the consumer is cancelled or closes this generator early.
    """
    tail: list[StreamEvent]
    try:
        async with client.stream(
            "POST", url, content=orjson.dumps(body), headers=headers, timeout=http_timeout
        ) as response:
            if not response.is_success:
                tail = [http_error(response.status_code, response.reason_phrase, await response.aread())]
            else:
                async with aclosing(aiter_sse(response)) as events:
                    async for sse in events:
                        for event in decoder.feed(sse.data, sse.event):
                            yield event
                        if decoder.stopped:
                            break
                tail = decoder.close()
    except httpx.TimeoutException as exc:
        tail = [Finish("error", error=f"{_timeout_kind(exc)} timed out calling {url}")]
    except httpx.HTTPError as exc:
        tail = [Finish("error", error=f"request to {url} failed: {type(exc).__name__}: {exc}")]
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
        tail = [Finish("error", error=f"malformed data in the stream from {url}: {exc}")]
    except Exception as exc:  # a bug or an unexpected shape; the contract says we end, not raise
        log.exception("model stream from %s failed", log_url(url))
        tail = [Finish("error", error=f"unexpected error reading the stream from {url}: {exc!r}")]
    _log_failure(url, tail)
    for event in tail:
        yield event


def log_url(url: str) -> str:
    """`url` as a log line may show it: scheme, host, port and path (no credentials, no query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def _log_failure(url: str, tail: list[StreamEvent]) -> None:
    """One WARNING line for a call that failed (its status, a short body); a retry logs its own."""
    finish = tail[-1] if tail else None
    if not isinstance(finish, Finish) or finish.reason != "error" or not log.isEnabledFor(logging.WARNING):
        return
    text = finish.error or ""
    text = text if len(text) <= LOGGED_BODY_CHARS else text[:LOGGED_BODY_CHARS - 1] + "…"
    status = f"status {finish.status}" if finish.status is not None else "no status"
    log.warning("model call to %s failed (%s): %s", log_url(url), status, text.replace(url, log_url(url)),
                extra={"think": {"url": log_url(url), "status": finish.status}})


def http_error(status: int, reason: str, body: bytes) -> Finish:
    """`Finish(reason="error")` for a non-2xx response, with the provider's message when it sent one."""
    message = error_message(body) or body.decode("utf-8", "replace").strip()[:500] or "(empty body)"
    label = f"HTTP {status} {reason}" if reason else f"HTTP {status}"
    return Finish("error", error=f"{label}: {message}", status=status)


def error_message(body: bytes | Any) -> str | None:
    """The message in a JSON error body (OpenAI, Anthropic, Ollama and Cloudflare shapes), if any."""
    if isinstance(body, bytes | str):
        try:
            body = orjson.loads(body)
        except ValueError:
            return None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type")
        if isinstance(message, str):
            return f"{message} ({kind})" if isinstance(kind, str) and kind not in message else message
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        message = errors[0].get("message")
        return message if isinstance(message, str) else None
    message = body.get("message") or body.get("detail")
    return message if isinstance(message, str) else None


def error_status(error: Any) -> int | None:
    """An HTTP-like status from an in-stream error object's `code` or `status`, if it has one."""
    if isinstance(error, dict):
        for key in ("status", "code"):
            value = error.get(key)
            if isinstance(value, int) and 100 <= value <= 599:
                return value
    return None


def _timeout_kind(exc: httpx.TimeoutException) -> str:
    match exc:
        case httpx.ConnectTimeout():
            return "connecting"
        case httpx.ReadTimeout():
            return "waiting for data"
        case httpx.WriteTimeout():
            return "sending the request"
        case _:
            return "waiting for a connection"


class OwnedClient:
    """The HTTP client an adapter uses: the one it was given, or one it creates and owns.

    An owned client is created on first use and replaced when used from another event loop (a
    client's pooled connections belong to the loop that opened them).
    """

    def __init__(self, client: httpx.AsyncClient | None, *, timeout: Timeout) -> None:
        self._given = client
        self._timeout = timeout
        self._owned: httpx.AsyncClient | None = None
        self._loop: object = None

    def get(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        loop = anyio.lowlevel.current_token().native_token
        if self._owned is None or self._loop is not loop:
            self._owned = httpx.AsyncClient(timeout=self._timeout)
            self._loop = loop
        return self._owned

    async def aclose(self) -> None:
        """Close the owned client, if any; a client that was passed in is left to its owner."""
        if self._owned is not None:
            owned, self._owned = self._owned, None
            await owned.aclose()


class SseModel:
    """A model behind one streamed HTTP POST: `url`, JSON in, server-sent events out.

    Without a `client`, the model creates (and owns) an `httpx.AsyncClient` on first use; close it
    with `aclose()`. `timeout` applies to each network operation (connect, every read), not to the
    whole reply; a request's `settings.timeout` overrides it for that call, and its
    `settings.headers` are added to the model's.
    """

    def __init__(self, model: str, *, url: str, label: str, auth_headers: Mapping[str, str],
                 headers: Mapping[str, str] | None, client: httpx.AsyncClient | None, timeout: Timeout) -> None:
        self.model = model
        self.url = url
        self.timeout = timeout
        self._label = label
        self._headers = {"content-type": "application/json", "accept": "text/event-stream", **auth_headers,
                         **(headers or {})}
        self._client = OwnedClient(client, timeout=timeout)

    @property
    def model_id(self) -> str:
        return self._label

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, url={self.url!r})"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of one call (the adapter's format)."""
        raise NotImplementedError

    def decoder(self) -> StreamDecoder:
        """A fresh decoder for one call's stream (the adapter's format)."""
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """Yield the events of one streamed call, ending with exactly one `Finish`."""
        settings = request.settings
        headers = self._headers if not settings.headers else {**self._headers, **settings.headers}
        events = post_sse(
            self._client.get(),
            self.url,
            headers=headers,
            body=self.request_body(request),
            http_timeout=self.timeout if settings.timeout is None else settings.timeout,
            decoder=self.decoder(),
        )
        async with aclosing(events):
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP client this model created, if it created one."""
        await self._client.aclose()


def json_text(value: Any) -> str:
    """`value` as text for a model: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """`(media_type, bytes)` from a `data:` URL, or None when `url` is not one (or is malformed)."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep:
        return None
    params = header.split(";")
    try:
        if "base64" in params[1:]:
            return params[0], base64.b64decode(payload, validate=True)
        return params[0], unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        return None


def data_url_base64(url: str) -> str | None:
    """The base64 payload of a base64 `data:` URL, as is (no decode and re-encode), or None."""
    header, sep, payload = url.partition(",")
    if url.startswith("data:") and sep and header.endswith(";base64"):
        return payload
    return None
