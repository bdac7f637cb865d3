"""Hosts: one per live address; up while sockets or tasks use it; the lease ends with them."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.chat.agents import EchoChat
from think.runtime import EmbeddedRuntime
from think.server.agents import AgentRegistry


async def test_a_host_is_shared_and_lives_until_its_last_user_is_done(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=0)  # hibernate as soon as nothing holds it
    registry = AgentRegistry(runtime)
    finish = anyio.Event()
    async with registry.running():
        async with registry.use(EchoChat, "a") as host, registry.use(EchoChat, "a") as same:
            assert same is host and runtime.live() == [host.agent]

            async def work() -> None:
                await finish.wait()

            host.spawn(work)  # a turn or a call, started from a frame
        assert not host.done.is_set() and runtime.live() == [host.agent]  # the task keeps it up
        finish.set()
        await host.released.wait()
        assert runtime.live() == []  # the lease is gone and the instance hibernated
        async with registry.use(EchoChat, "a") as again:
            assert again is not host and again.agent is not host.agent


async def test_hosts_start_once_when_asked_concurrently(tmp_path: Path) -> None:
    registry = AgentRegistry(EmbeddedRuntime(tmp_path, idle_timeout=None))
    hosts = []
    async with registry.running():
        all_in, release = anyio.Event(), anyio.Event()

        async def connect() -> None:
            async with registry.use(EchoChat, "b") as host:
                hosts.append(host)
                if len(hosts) == 5:
                    all_in.set()
                await release.wait()

        async with anyio.create_task_group() as tasks:
            for _ in range(5):
                tasks.start_soon(connect)
            with anyio.fail_after(5):
                await all_in.wait()
            release.set()
    assert len({id(h) for h in hosts}) == 1
