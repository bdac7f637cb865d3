"""Export happens only when asked: a real `think serve --otel` sends a turn's spans to a local
OTLP collector; with nothing configured, a turn opens no connection and installs no provider."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.logged_server import logged_serve
from tests.cli.test_serve_logs import READY, chat_once, model_env
from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread
from tests.observe.collector import collector
from tests.submissions.server_process import eventually
from think.client import AgentClient

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def provider() -> object:
    with serve_in_thread(FakeLLMServer()) as fake:
        yield fake


async def test_serve_with_otel_exports_the_turn_to_a_local_collector(tmp_path: Path, provider: FakeLLMServer) -> None:
    log = tmp_path / "serve.log"
    with collector() as otlp:
        env = {**model_env(provider, "text", tmp_path), "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url,
               "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "200", "OTEL_SERVICE_NAME": "ops"}
        with logged_serve(["tests.cli.ops_agents:Plain"], env, log, "--otel", ready_path=READY) as server:
            await chat_once(server.ws, "hi")
            await eventually(lambda: "invoke_agent plain" in otlp.span_names())
            await eventually(lambda: "think.turn.duration" in otlp.metric_names)
        names = otlp.span_names()
        assert "chat text" in names  # the model call, under the turn
        [turn] = [s for s in otlp.spans if s.name == "invoke_agent plain"]
        [call] = [s for s in otlp.spans if s.name == "chat text"]
        assert call.parent_span_id == turn.span_id and call.trace_id == turn.trace_id
        attributes = {a.key: a.value for a in call.attributes}
        assert attributes["gen_ai.usage.input_tokens"].int_value == 12
        assert attributes["gen_ai.usage.output_tokens"].int_value == 3
        assert {"gen_ai.client.token.usage", "think.agents.active", "think.turns.queued"} <= otlp.metric_names
    assert f"otel  traces and metrics to {otlp.url}/v1/traces" in log.read_text()


def test_without_configuration_a_turn_sends_nothing(tmp_path: Path) -> None:
    """In a fresh interpreter with no OTEL_* variables: no provider, no connection during a turn."""
    script = f"""
import socket, anyio
from think import Think, open_agent
from think.testing import ScriptedModel, call
from think.observe.otel import meter, tracer
from think.observe.setup import otlp_requested
from tests.shared_tools import add

connects = []
real = socket.socket.connect
def record(self, address):
    connects.append(address)
    return real(self, address)
socket.socket.connect = record

class Quiet(Think):
    def get_model(self):
        return ScriptedModel([call("add", a=1, b=2), "3"])
    def get_tools(self):
        return [add]

async def main():
    async with open_agent(Quiet, "q", data_dir={str(tmp_path / "d")!r}) as agent:
        result = await agent.save_messages(["1 + 2?"])
        assert result.status == "completed", result
    import opentelemetry.trace as t
    assert tracer() is None and meter() is None, t.get_tracer_provider()
    assert not otlp_requested(False)
    assert connects == [], connects
    print("quiet")

anyio.run(main)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "quiet"


async def test_serve_reload_with_otel_exports_from_its_worker(tmp_path: Path) -> None:
    source = tmp_path / "reloaded_agent.py"
    source.write_text("from think import Think\nfrom think.testing import ScriptedModel\n\n\n"
                      "class Reloaded(Think):\n    def get_model(self):\n        return ScriptedModel(['hello'])\n")
    with collector() as otlp:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50",
               "THINK_DATA_DIR": str(tmp_path / "d")}
        with logged_serve([str(source)], env, tmp_path / "serve.log", "--reload", "--otel",
                          ready_path="/agents/reloaded/probe/get-messages") as server:
            async with AgentClient.connect(f"{server.ws}/agents/reloaded/alice", call_timeout=10) as client:
                await (await client.send_chat("hi"))
            await eventually(lambda: "invoke_agent reloaded" in otlp.span_names())
    assert "chat scripted" in otlp.span_names()
