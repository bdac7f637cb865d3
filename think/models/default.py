"""The model an agent uses when `get_model()` is not overridden."""

from __future__ import annotations

import functools

from think.models.base import Model


@functools.cache
def default_model() -> Model:
    """`THINK_MODEL`, else a provider key in the environment, else a local Ollama, else the `local`
    extra, else the offline demo model. Decided once per process (the Ollama probe takes time)."""
    from think.models.registry import detect_default_model_id, resolve_model

    model_id = detect_default_model_id()
    if model_id is not None:
        return resolve_model(model_id)
    from think.models.demo import DemoModel

    return DemoModel()
