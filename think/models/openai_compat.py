"""A model behind any OpenAI-compatible Chat Completions endpoint, streamed over httpx.

This covers OpenAI itself, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter, Groq,
Cloudflare Workers AI and Gemini's compatible endpoint. The format work is in `openai_format`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing

import httpx

from think.models._wire import DEFAULT_TIMEOUT, OwnedClient, Timeout, post_sse
from think.models.base import ModelRequest
from think.models.events import StreamEvent
from think.models.openai_format import ChatChunkDecoder, chat_body


class OpenAICompatibleModel:
    """Streams `POST {base_url}/chat/completions` with `stream: true`.

    Without a `client`, the model creates (and owns) an `httpx.AsyncClient` on first use; close it
    with `aclose()`. `timeout` applies to each network operation (connect, every read), not to the
    whole reply; a request's `settings.timeout` overrides it for that call.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        label: str | None = None,
        include_usage: bool = True,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.include_usage = include_usage
        self.timeout = timeout
        self._label = label or f"openai-compatible:{model}"
        self._headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._headers.update(headers or {})
        self._client = OwnedClient(client, timeout=timeout)

    @property
    def model_id(self) -> str:
        return self._label

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.model!r}, url={self.url!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Yield the events of one streamed completion, ending with exactly one `Finish`."""
        settings = request.settings
        headers = self._headers if not settings.headers else {**self._headers, **settings.headers}
        events = post_sse(
            self._client.get(),
            self.url,
            headers=headers,
            body=chat_body(self.model, request, include_usage=self.include_usage),
            http_timeout=self.timeout if settings.timeout is None else settings.timeout,
            decoder=ChatChunkDecoder(),
        )
        async with aclosing(events):
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP client this model created, if it created one."""
        await self._client.aclose()
