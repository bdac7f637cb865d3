"""What tokens cost, from the `genai-prices` table (imported on the first lookup, never at import).

`cost_of("openai:gpt-4.1-mini", input_tokens=…, …)` is the price in US dollars, or None when the
table does not know the model (a scripted, demo or local model, an `openai-compatible:` URL).
Nothing here reaches the network: the table shipped with the installed package is used as is.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

log = logging.getLogger("think.usage")

UNPRICED_PROVIDERS = frozenset({"openai-compatible", "ollama", "local", "demo", "scripted", "test"})
"""Model id prefixes whose models run somewhere the table cannot know the price of."""


def split_model_id(model_id: str) -> tuple[str | None, str]:
    """`"openai:gpt-4.1-mini"` as `("openai", "gpt-4.1-mini")`; an id without a provider as `(None, id)`."""
    provider, sep, name = model_id.partition(":")
    return (provider, name) if sep else (None, model_id)


def priceable(model_id: str) -> bool:
    """Whether the table may know the model: a `provider:model` id of a provider that bills."""
    provider, name = split_model_id(model_id)
    return provider is not None and provider not in UNPRICED_PROVIDERS and bool(name)


_loaded = False


async def load_prices() -> None:
    """Import the price table in a worker thread, once (it takes a noticeable fraction of a second)."""
    global _loaded
    if not _loaded:
        import anyio

        def load() -> None:
            try:
                import genai_prices  # noqa: F401
            except ImportError:  # pragma: no cover
                pass

        await anyio.to_thread.run_sync(load)
        _loaded = True


@lru_cache(maxsize=256)
def _prices(provider: str | None, name: str) -> Any:
    """The table's entry for a model (None if unknown); cached, the lookup scans the table."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - a dependency; an install without it prices nothing
        return None
    try:
        probe = calc_price(Usage(input_tokens=0, output_tokens=0), model_ref=name, provider_id=provider)
    except (LookupError, ValueError):
        return None
    return probe.model_price


def cost_of(model_id: str, *, input_tokens: int | None, output_tokens: int | None,
            cached_input_tokens: int | None = None) -> float | None:
    """The price of one model call in US dollars, or None when the model or its usage is unknown.

    `input_tokens` includes the cached ones (as providers report them); cached tokens are priced
    at the table's cache-read price where it has one.
    """
    if not priceable(model_id) or (input_tokens is None and output_tokens is None):
        return None
    provider, name = split_model_id(model_id)
    price = _prices(provider, name)
    if price is None:
        return None
    from genai_prices import Usage

    usage = Usage(input_tokens=input_tokens or 0, output_tokens=output_tokens or 0,
                  cache_read_tokens=min(cached_input_tokens or 0, input_tokens or 0))
    try:
        return float(price.calc_price(usage)["total_price"])
    except Exception:  # a table entry this version cannot evaluate: unknown rather than a failed turn
        log.debug("could not price %s", model_id, exc_info=True)
        return None
