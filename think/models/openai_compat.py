"""A model behind any OpenAI-compatible Chat Completions endpoint, streamed over httpx.

This covers OpenAI itself, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter, Groq,
Cloudflare Workers AI and Gemini's compatible endpoint. The format work is in `openai_format`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from think.models._wire import DEFAULT_TIMEOUT, SseModel, StreamDecoder, Timeout
from think.models.base import ModelRequest
from think.models.openai_format import ChatChunkDecoder, chat_body


class OpenAICompatibleModel(SseModel):
    """Streams `POST {base_url}/chat/completions` with `stream: true` (client and timeouts: see
    `SseModel`)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        label: str | None = None,
        query: str = "",
        include_usage: bool = True,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        url = base_url.rstrip("/") + "/chat/completions" + (f"?{query}" if query else "")
        super().__init__(model, url=url,
                         label=label or f"openai-compatible:{model}",
                         auth_headers={"authorization": f"Bearer {api_key}"} if api_key else {},
                         headers=headers, client=client, timeout=timeout)
        self.include_usage = include_usage

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return chat_body(self.model, request, include_usage=self.include_usage)

    def decoder(self) -> StreamDecoder:
        return ChatChunkDecoder()
