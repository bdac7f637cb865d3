"""Every call is observable (an `on_event` dict and a `think.fetch` log line); calls run
concurrently; a cancelled call propagates its cancellation and still reports `aborted`."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from tests.net.site import Site
from tests.submissions.server_process import eventually
from tests.tools.fetch.helpers import call
from tests.tools.fetch.tools_for import at, public_tools


async def test_one_event_per_call(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    events: list[dict[str, Any]] = []
    tools = public_tools(site, on_event=events.append)
    caplog.set_level(logging.INFO, logger="think.fetch")
    await call(tools, "fetch_url", url=at(site, "/data.json?key=secret"))
    await call(tools, "fetch_url", url="http://localhost/x")
    ok, refused = events
    assert {k: ok[k] for k in ("tool", "ok", "requested_url", "final_url", "status", "bytes", "truncated",
                               "response")} == {
        "tool": "fetch_url", "ok": True, "requested_url": at(site, "/data.json?key=secret"),
        "final_url": at(site, "/data.json?key=secret"), "status": 200, "bytes": ok["bytes"], "truncated": False,
        "response": "json"}
    assert ok["duration"] >= 0
    assert (refused["ok"], refused["code"]) == (False, "disallowed_url")
    lines = [r for r in caplog.records if r.name == "think.fetch"]
    assert [r.getMessage() for r in lines] == [f"fetch_url {at(site, '/data.json')}?… → 200 json {ok['bytes']} bytes",
                                               "fetch_url http://localhost/x → refused: disallowed_url"]
    assert all("secret" not in r.getMessage() and "secret" not in str(r.__dict__["think"]) for r in lines)
    assert lines[0].__dict__["think"]["status"] == 200


async def test_a_failing_event_hook_does_not_break_the_call(site: Site) -> None:
    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("observer bug")

    result = await call(public_tools(site, on_event=broken), "fetch_url", url=at(site, "/data.json"))
    assert result["ok"]


async def test_concurrent_calls(site: Site) -> None:
    tools = public_tools(site)
    results: list[dict[str, Any]] = []

    async def one(path: str) -> None:
        results.append(await call(tools, "fetch_url", url=at(site, path)))

    async with anyio.create_task_group() as tg:
        for path in ["/data.json", "/page.html", "/doc.md", "/missing"] * 5:
            tg.start_soon(one, path)
    assert len(results) == 20
    assert sorted(r.get("code", "ok") for r in results) == ["non_2xx"] * 5 + ["ok"] * 15


async def test_cancellation_propagates_and_is_reported(site: Site) -> None:
    events: list[dict[str, Any]] = []
    tools = public_tools(site, on_event=events.append, timeout=60)
    cancelled = False

    async def fetch_slow() -> None:
        nonlocal cancelled
        try:
            await call(tools, "fetch_url", url=at(site, "/slow"))
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(fetch_slow)
        await eventually(lambda: "/slow" in site.paths())  # the request reached the server
        tg.cancel_scope.cancel()
    assert cancelled
    assert [(e["ok"], e.get("code")) for e in events] == [(False, "aborted")]


async def test_the_json_log_line_carries_the_fields(site: Site) -> None:
    import io

    import orjson

    from think.log_config import configure_logging

    stream = io.StringIO()
    loggers = [logging.getLogger(name) for name in ("", "think", "uvicorn", "uvicorn.error", "uvicorn.asgi",
                                                    "uvicorn.access")]
    levels = [logger.level for logger in loggers]
    handler = configure_logging("info", "json", stream=stream)
    try:
        await call(public_tools(site), "fetch_url", url=at(site, "/page.html?token=secret"))
    finally:
        logging.getLogger().removeHandler(handler)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
    [line] = [orjson.loads(x) for x in stream.getvalue().splitlines() if '"think.fetch"' in x]
    assert {k: line[k] for k in ("level", "logger", "tool", "ok", "status", "response", "truncated")} == {
        "level": "info", "logger": "think.fetch", "tool": "fetch_url", "ok": True, "status": 200,
        "response": "text", "truncated": False}
    assert line["requested_url"] == at(site, "/page.html") + "?…" and "secret" not in stream.getvalue()
