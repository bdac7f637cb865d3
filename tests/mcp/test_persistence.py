"""Stored servers: restored after a restart (a fresh runtime over the same data directory, and a
new `think serve` process), reconnected in the background; a dead one never stalls the start."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import anyio
import anyio.abc
import pytest

from tests.mcp.conftest import DemoServer, free_port, start_demo_server
from tests.mcp.helpers import server_state, until
from tests.mcp.test_client_tools import Mcp, tool_part
from think.errors import ConfigurationError
from think.net.policy import UrlPolicy
from think.runtime.embedded import EmbeddedRuntime


class Waiting(Mcp):
    wait_for_mcp_connections = True


async def test_the_server_list_survives_a_restart_and_the_next_turn_calls_the_tool(
        data_dir: Path, demo_server: DemoServer) -> None:
    first = EmbeddedRuntime(data_dir)
    async with first.lease(Waiting, "keep") as agent:
        added = await agent.add_mcp_server("demo", demo_server.url, headers={"X-Test": "1"})
        await agent.chat('use demo_echo {"text": "before"}')
        assert tool_part(agent).output == "echo: before"
    await first.close()

    second = EmbeddedRuntime(data_dir)
    try:
        async with second.lease(Waiting, "keep") as agent:
            assert [s["id"] for s in agent.mcp_servers()] == [added["id"]]
            # wait_for_mcp_connections: the turn waits for the reconnect before the model runs
            await agent.chat('use demo_echo {"text": "after"}')
            assert tool_part(agent).output == "echo: after"
            assert await agent.remove_mcp_server(added["id"])
            assert agent.mcp_servers() == [] and agent.mcp.tools() == {}
    finally:
        await second.close()
    third = EmbeddedRuntime(data_dir)
    try:
        async with third.lease(Waiting, "keep") as agent:
            assert agent.mcp_servers() == []
    finally:
        await third.close()


async def test_a_dead_server_does_not_stall_the_start_or_a_turn(data_dir: Path) -> None:
    dead_url = f"http://127.0.0.1:{free_port()}/mcp"
    first = EmbeddedRuntime(data_dir)
    async with first.lease(Mcp, "dead") as agent:
        added = await agent.add_mcp_server("gone", dead_url)
        assert added["state"] == "failed" and "gone" not in str(agent.mcp.tools())
        assert added["error"], added
    await first.close()

    second = EmbeddedRuntime(data_dir)
    try:
        async with second.lease(Mcp, "dead") as agent:  # returns while the server is still connecting
            assert server_state(agent, added["id"]) in ("connecting", "failed")
            result = await agent.chat('use nothing')
            assert result.status == "completed"
            # The server comes up later on that port: the background reconnect finds it.
            port = int(dead_url.split(":")[2].split("/")[0])
            late = start_demo_server(port)
            try:
                await until(agent, lambda: server_state(agent, added["id"]) == "ready", timeout=60,
                            what="the reconnect after the server came up")
            finally:
                late.kill()
    finally:
        await second.close()


async def test_bad_input_is_refused_with_a_clear_error(data_dir: Path, demo_server: DemoServer) -> None:
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Mcp, "bad") as agent:
            for kwargs, text in [({"url": "file:///etc/passwd"}, "http:// or https://"),
                                 ({"url": "ftp://example.com/mcp"}, "http:// or https://"),
                                 ({"url": demo_server.url, "transport": "websocket"}, "transport must be"),
                                 ({}, "either a url or a command"),
                                 ({"command": ""}, "command is empty")]:
                with pytest.raises(ConfigurationError, match=text):
                    await agent.add_mcp_server("bad", **kwargs)  # type: ignore[arg-type]
            not_mcp = await agent.add_mcp_server("web", demo_server.url.replace("/mcp", "/nothing"))
            assert not_mcp["state"] == "failed" and not_mcp["error"]
            assert agent.mcp_servers()[0]["state"] == "failed"
            good = await agent.add_mcp_server("demo", demo_server.url)
            assert good["state"] == "ready"  # the failed one affects nothing else
            with anyio.fail_after(30):
                result = await agent.chat('use demo_echo {"text": "fine"}')
            assert result.status == "completed" and tool_part(agent).output == "echo: fine"
    finally:
        await runtime.close()


class Guarded(Mcp):
    mcp_url_policy = UrlPolicy(["https://mcp.example.com/**"])


class NoPrivate(Mcp):
    mcp_url_policy = UrlPolicy()


class LocalOnly(Mcp):
    mcp_url_policy = UrlPolicy(allow_private_networks=["127.0.0.1/32"])


async def test_the_url_policy_decides_which_servers_may_be_added(data_dir: Path, demo_server: DemoServer) -> None:
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Guarded, "guarded") as agent:
            with pytest.raises(ConfigurationError, match="refused by the URL policy"):
                await agent.add_mcp_server("demo", demo_server.url)
            assert agent.mcp_servers() == []
        async with runtime.lease(NoPrivate, "no-private") as agent:
            with pytest.raises(ConfigurationError, match="refused by the URL policy"):
                await agent.add_mcp_server("demo", demo_server.url)
            with pytest.raises(ConfigurationError, match="refused by the URL policy"):
                await agent.add_mcp_server("meta", "http://169.254.169.254/latest/meta-data")
        async with runtime.lease(LocalOnly, "local") as agent:  # every connection goes through the policy
            added = await agent.add_mcp_server("demo", demo_server.url)
            assert added["state"] == "ready", added
            await agent.chat('use demo_echo {"text": "checked"}')
            assert tool_part(agent).output == "echo: checked"
    finally:
        await runtime.close()


async def test_a_stored_server_the_policy_now_refuses_fails_at_connect(data_dir: Path,
                                                                       demo_server: DemoServer) -> None:
    runtime = EmbeddedRuntime(data_dir)
    async with runtime.lease(Mcp, "tightened") as agent:
        added = await agent.add_mcp_server("demo", demo_server.url)
        assert added["state"] == "ready"
    await runtime.close()

    class Tightened(NoPrivate):
        agent_class_name = "mcp"  # the same agents as before, now with a policy

    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Tightened, "tightened") as agent:
            await until(agent, lambda: server_state(agent, added["id"]) == "failed", what="the refused reconnect")
            error = agent.mcp_servers()[0]["error"]
            assert "127.0.0.1" in error or "loopback" in error or "private" in error, error
    finally:
        await runtime.close()


class QuickConnect(Mcp):
    mcp_connect_timeout = 1.0


async def test_a_server_that_hangs_on_initialize_fails_after_the_connect_timeout(data_dir: Path) -> None:
    """A TCP server that accepts and never answers: the attempt ends `failed` after the timeout."""
    accepted: list[anyio.abc.SocketStream] = []

    async def hold(stream: anyio.abc.SocketStream) -> None:
        accepted.append(stream)
        await anyio.sleep_forever()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(listener.serve, hold)
            async with runtime.lease(QuickConnect, "hang") as agent:
                added = await agent.add_mcp_server("mute", f"http://127.0.0.1:{port}/mcp", transport="streamable-http",
                                                   timeout=20)
                assert added["state"] == "failed", added
                assert "no answer within 1 s" in added["error"], added["error"]
                assert accepted  # it did connect: the handshake is what never came
            tasks.cancel_scope.cancel()
    finally:
        await listener.aclose()
        await runtime.close()


async def test_a_call_cut_off_by_a_kill_is_settled_by_recovery_after_the_restart(
        data_dir: Path, demo_server: DemoServer) -> None:
    from tests.mcp.conftest import ROOT, env
    from tests.mcp.crash_agent import Crashing
    from think.context.convert import INTERRUPTED_TOOL_TEXT

    process = subprocess.Popen([sys.executable, "-m", "tests.mcp.crash_agent", str(data_dir), demo_server.url],  # noqa: ASYNC220
                               cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        with anyio.fail_after(60):
            line = await anyio.to_thread.run_sync(process.stdout.readline)
        assert line.strip() == b"CALLING"
    finally:
        process.kill()  # SIGKILL in the middle of the MCP call
        process.wait(timeout=10)

    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Crashing, "crash") as agent:
            with anyio.fail_after(60):
                await agent.wait_until_stable()
            part = next(p for m in agent.messages for p in m.tool_parts)
            assert part.name == "demo_slow"
            assert (part.state, part.error_text) == ("output-error", INTERRUPTED_TOOL_TEXT), part
            assert agent.messages[-1].text == "Done."
            assert [s["name"] for s in agent.mcp_servers()] == ["demo"]
    finally:
        await runtime.close()


class BriefWait(Mcp):
    wait_for_mcp_connections: ClassVar[dict[str, float]] = {"timeout": 0.5}


async def test_a_turn_waits_for_a_hanging_server_only_as_long_as_configured(data_dir: Path) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def hold(stream: anyio.abc.SocketStream) -> None:
        await anyio.sleep_forever()

    runtime = EmbeddedRuntime(data_dir)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(listener.serve, hold)
            async with runtime.lease(BriefWait, "brief") as agent:
                added = await agent.add_mcp_server("mute", f"http://127.0.0.1:{port}/mcp", timeout=0)
                result = await agent.chat("use nothing")
                assert result.status == "completed"
                assert server_state(agent, added["id"]) == "connecting"  # still: the turn did not wait for it
            tasks.cancel_scope.cancel()
    finally:
        await listener.aclose()
        await runtime.close()


def test_an_agent_without_mcp_servers_never_loads_the_sdk(tmp_path: Path) -> None:
    # A fresh interpreter: a chat turn on an agent with no MCP servers must not import `mcp`.
    code = (
        "import sys, anyio\n"
        "from think import Think\n"
        "from think.runtime import EmbeddedRuntime\n"
        "from think.testing import ScriptedModel\n"
        "class Plain(Think):\n"
        "    def get_model(self): return ScriptedModel(['hi'])\n"
        "async def main():\n"
        f"    runtime = EmbeddedRuntime({str(tmp_path)!r})\n"
        "    async with runtime.lease(Plain, 'x') as agent:\n"
        "        await agent.chat('hello')\n"
        "        assert agent.messages[-1].role == 'assistant'\n"
        "    await runtime.close()\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


async def test_a_server_coming_up_is_one_log_line_without_its_query_string(
        data_dir: Path, demo_server: DemoServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="think.mcp")
    runtime = EmbeddedRuntime(data_dir)
    try:
        async with runtime.lease(Waiting, "logged") as agent:
            added = await agent.add_mcp_server("demo", demo_server.url + "?token=s3cret")
            assert added["state"] == "ready"
    finally:
        await runtime.close()
    [ready] = [r.getMessage() for r in caplog.records if "is ready" in r.getMessage()]
    assert ready.startswith(f"MCP server demo ({demo_server.url}) is ready: ") and " tools, " in ready
    assert "s3cret" not in caplog.text
