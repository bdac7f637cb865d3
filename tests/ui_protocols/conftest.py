"""Fixtures for the UI protocol tests: the AI SDK driver (tests/node/ai_sdk.mjs, the real `ai`
package under Node) run once per module against a live server with the `ai-sdk` protocol."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, Response

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.node.conftest import HERE, RUN_TIMEOUT, node
from tests.ui_protocols.ai_sdk_agents import AiSdkChat
from think.runtime import EmbeddedRuntime
from think.server import create_app

__all__ = ["node"]

DRIVER = HERE / "ai_sdk.mjs"
AGENT = AiSdkChat.kebab_name()


def locked_out(conn: HTTPConnection, class_name: str, name: str) -> Response | None:
    """The app's `on_before_connect`: instances named `locked-…` are refused (401)."""
    return PlainTextResponse("locked out", status_code=401) if name.startswith("locked") else None


@dataclass
class AiSdkRun:
    scenarios: dict[str, dict[str, Any]]
    stderr: str
    server: LiveServer

    def scenario(self, name: str) -> dict[str, Any]:
        outcome = self.scenarios[name]
        if not outcome["ok"]:
            pages = json.dumps(outcome.get("pages"), indent=1)[-6000:]
            pytest.fail(f"AI SDK scenario {name!r} failed:\n{outcome['error']}\n\nits pages:\n{pages}\n\n"
                        f"driver stderr (tail):\n{self.stderr[-3000:]}", pytrace=False)
        return outcome


def run_ai_sdk(node: str, base: str, *, only: list[str] | None = None) -> tuple[dict[str, Any], str]:
    plan: dict[str, Any] = {"base": base, "run": secrets.token_hex(3)}
    if only:
        plan["only"] = only
    proc = subprocess.run([node, str(DRIVER), json.dumps(plan)], cwd=HERE, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False, env={**os.environ, "NODE_ENV": "production"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"ai_sdk.mjs failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}",
                    pytrace=False)
    return dict(json.loads(lines[-1])["scenarios"]), proc.stderr


@pytest.fixture(scope="module")
def ai_sdk_run(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AiSdkRun]:
    """Every scenario of ai_sdk.mjs, run once against a live server serving `AiSdkChat`."""
    data = tmp_path_factory.mktemp("ai-sdk-data")
    app = create_app([AiSdkChat], runtime=EmbeddedRuntime(data, idle_timeout=60), on_before_connect=locked_out,
                     protocols=["cf_agent", "ai-sdk"])
    with serve_in_thread(app) as live:
        scenarios, stderr = run_ai_sdk(node, f"{live.base_url}/agents/{AGENT}")
        yield AiSdkRun(scenarios, stderr, live)
