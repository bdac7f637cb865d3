"""`browser_execute` (model-written code against a `cdp` namespace, run in the sandbox host) and
`browser_search` (the running browser's protocol description, searched).

The code runs in `think.sandbox.host.SandboxHost`, the one place untrusted Python runs; its only
way out is the `cdp` namespace below, bound to the call's page. Commands it sends pass
`think.tools.browser.gate`; what the page loads passes the guard.
"""

from __future__ import annotations

import base64
import re
import time
from typing import TYPE_CHECKING, Any

from think.sandbox.host import HostCallRefused, HostFunction
from think.tools.browser import actions, gate
from think.tools.browser.browser import NavigationError, Page
from think.tools.browser.cdp import CdpError
from think.tools.tool import Tool, ToolContext

if TYPE_CHECKING:
    from think.tools.browser.tools import BrowserTools, Result

MAX_LOG = 200
SEARCH_LIMIT = 10
DESCRIPTION_CHARS = 300
_HELP = """Run a Python program (a sandboxed subset: no imports beyond json/re/math/datetime, no files or
network) that drives a real Chromium page over the Chrome DevTools Protocol through `cdp`:
- cdp.send(method, params=None, session_id=None) -> dict: any page-level CDP command, e.g.
  cdp.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True})
- cdp.navigate(url) -> {ok, url, status, title} or {ok: False, code, message}: load a page and wait for it
- cdp.evaluate(expression) -> value: run JavaScript in the page (promises awaited), return its JSON value
- cdp.screenshot(full_page=False) -> path: save a PNG of the page to the workspace
- cdp.targets() -> list; cdp.attach_to_target(target_id) -> session_id (for send(..., session_id=...))
- cdp.session() -> {session_id, target_id, url}; cdp.spec(domain=None, name=None): the protocol description
- cdp.log(message): add a line to the debug log returned with the result
Host functions are synchronous (no await). The value of the last expression is the result; print() goes
to stdout. Browser-wide and host-facing commands (Fetch, Browser, Storage, file uploads, downloads) are
refused; every URL the page loads must pass the URL allowlist. Use browser_search to find commands."""


class _Run:
    """The `cdp` namespace of one execution, and its debug log."""

    def __init__(self, tools: BrowserTools, page: Page, ctx: ToolContext) -> None:
        self.tools = tools
        self.page = page
        self.ctx = ctx
        self.log: list[str] = []

    def note(self, line: str) -> None:
        if len(self.log) < MAX_LOG:
            self.log.append(line[:500])
        elif len(self.log) == MAX_LOG:
            self.log.append("… (debug log cut)")

    async def send(self, method: Any, params: Any = None, session_id: Any = None) -> Any:
        if not isinstance(method, str):
            raise HostCallRefused("method must be a string such as 'Runtime.evaluate'", "TypeError")
        if params is not None and not isinstance(params, dict):
            raise HostCallRefused("params must be a dict", "TypeError")
        started = time.perf_counter()
        try:
            answer = await gate.send(self.page, method, dict(params or {}), str(session_id) if session_id else None)
        except HostCallRefused as exc:
            self.note(f"{method}: refused ({exc})")
            raise
        except CdpError as exc:
            self.note(f"{method}: error {exc.message}")
            raise HostCallRefused(f"{method}: {exc.message}", "RuntimeError") from exc
        except TimeoutError as exc:
            self.note(f"{method}: timed out")
            raise HostCallRefused(f"{method} timed out", "TimeoutError") from exc
        self.note(f"{method}: ok ({(time.perf_counter() - started) * 1000:.0f} ms)")
        return answer

    async def navigate(self, url: Any) -> dict[str, Any]:
        try:
            state = await self.page.navigate(str(url))
        except NavigationError as exc:
            self.note(f"navigate {url}: {exc.code}")
            return {"ok": False, "code": exc.code, "message": str(exc)}
        self.note(f"navigate {url}: {state.get('status')}")
        return {"ok": True, **state}

    async def evaluate(self, expression: Any) -> Any:
        try:
            return await self.page.evaluate(str(expression))
        except CdpError as exc:
            raise HostCallRefused(exc.message, "RuntimeError") from exc

    async def screenshot(self, full_page: Any = False) -> str:
        shot = await self.page.send("Page.captureScreenshot",
                                    {"format": "png", "captureBeyondViewport": bool(full_page)})
        path = await actions.save_png(self.tools.workspace_for(self.ctx), base64.b64decode(shot["data"]))
        self.note(f"screenshot saved to {path}")
        return path

    async def targets(self) -> list[dict[str, Any]]:
        answer = await gate.send(self.page, "Target.getTargets", {}, None)
        return list(answer["targetInfos"])

    async def attach_to_target(self, target_id: Any) -> str:
        return str((await gate.attach(self.page, str(target_id)))["sessionId"])

    async def session(self) -> dict[str, Any]:
        url = await self.page.evaluate("location.href")
        return {"session_id": self.page.session_id, "target_id": self.page.target_id, "url": url}

    async def spec(self, domain: Any = None, name: Any = None) -> Any:
        protocol = await self.tools.browser.protocol()
        domains = [d for d in protocol.get("domains", []) if gate.allowed_domain(str(d.get("domain")))]
        if domain is None:
            return [{"domain": d["domain"], "description": str(d.get("description", ""))[:DESCRIPTION_CHARS],
                     "commands": len(d.get("commands", [])), "events": len(d.get("events", []))} for d in domains]
        found = next((d for d in domains if d["domain"] == domain), None)
        if found is None:
            raise HostCallRefused(f"no protocol domain {domain!r} available", "KeyError")
        if name is None:
            return found
        for kind in ("commands", "events", "types"):
            for item in found.get(kind, []):
                if item.get("name") == name or item.get("id") == name:
                    return item
        raise HostCallRefused(f"{domain} has no command, event or type {name!r}", "KeyError")

    async def log_line(self, message: Any) -> None:
        self.note(f"log: {message}")

    def namespace(self) -> dict[str, HostFunction]:
        def fn(call: Any, *params: str, description: str = "") -> HostFunction:
            async def run(arguments: dict[str, Any]) -> Any:
                try:
                    return await call(**arguments)
                except TypeError as exc:
                    raise HostCallRefused(str(exc), "TypeError") from exc

            return HostFunction(run, params, description=description)

        return {"send": fn(self.send, "method", "params", "session_id"), "navigate": fn(self.navigate, "url"),
                "evaluate": fn(self.evaluate, "expression"), "screenshot": fn(self.screenshot, "full_page"),
                "targets": fn(self.targets), "attach_to_target": fn(self.attach_to_target, "target_id"),
                "session": fn(self.session), "spec": fn(self.spec, "domain", "name"),
                "log": fn(self.log_line, "message")}


def execute_tool(tools: BrowserTools) -> Tool:
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "description": "Python code using `cdp`; the last expression is the result"},
        **tools.session_schema()}, "required": ["code"]}

    async def execute(arguments: dict[str, Any], ctx: ToolContext) -> Result:
        async def work(page: Page) -> Result:
            run = _Run(tools, page, ctx)
            outcome = await tools.host.run(str(arguments["code"]), {"cdp": run.namespace()})
            result: Result = {"ok": outcome.status == "completed", "value": outcome.value, "stdout": outcome.stdout,
                              "log": run.log}
            if outcome.error:
                result["error"] = outcome.error
            return result

        return await tools.in_page(ctx, arguments, work)

    return Tool(name="browser_execute", description=_HELP, input_schema=schema, execute=execute, recovery="rerun")


def search_tool(tools: BrowserTools) -> Tool:
    schema = {"type": "object", "properties": {
        "query": {"type": "string", "description": "words to look for, e.g. 'screenshot full page' or 'cookies'"},
        "limit": {"type": "integer", "description": f"most results (default {SEARCH_LIMIT})"}},
        "required": ["query"]}

    async def execute(arguments: dict[str, Any], ctx: ToolContext) -> Result:
        try:
            protocol = await tools.browser.protocol()
        except Exception as exc:
            return {"ok": False, "code": "browser_failed", "message": f"cannot read the protocol: {exc}"}
        limit = max(1, min(int(arguments.get("limit") or SEARCH_LIMIT), 50))
        return {"ok": True, "results": search(protocol, str(arguments["query"]), limit)}

    return Tool(name="browser_search", description=(
        "Search the Chrome DevTools Protocol of the running browser (commands, events, types) for what "
        "browser_execute code can send: names, descriptions and parameters."),
        input_schema=schema, execute=execute, recovery="rerun")


def search(protocol: dict[str, Any], query: str, limit: int) -> list[dict[str, Any]]:
    """The protocol items best matching `query`'s words (name matches count most)."""
    words = [w for w in re.split(r"\W+", query.lower()) if w]
    scored: list[tuple[int, dict[str, Any]]] = []
    for domain in protocol.get("domains", []):
        name = str(domain.get("domain"))
        if not gate.allowed_domain(name):
            continue
        for kind, items in (("command", domain.get("commands", [])), ("event", domain.get("events", [])),
                            ("type", domain.get("types", []))):
            for item in items:
                title = f"{name}.{item.get('name') or item.get('id')}"
                text = str(item.get("description", "")).lower()
                score = sum(5 * (w in title.lower()) + (w in text) for w in words)
                if score and f"{name}.{item.get('name')}" not in gate.REFUSED:
                    scored.append((score, _summary(kind, title, item)))
    scored.sort(key=lambda pair: -pair[0])
    return [item for _, item in scored[:limit]]


def _summary(kind: str, title: str, item: dict[str, Any]) -> dict[str, Any]:
    def fields(entries: list[dict[str, Any]]) -> list[str]:
        return [f"{p.get('name')}{'?' if p.get('optional') else ''}: {p.get('type') or p.get('$ref', 'any')}"
                for p in entries]

    out: dict[str, Any] = {"kind": kind, "name": title,
                           "description": str(item.get("description", ""))[:DESCRIPTION_CHARS]}
    if item.get("parameters"):
        out["parameters"] = fields(item["parameters"])
    if item.get("returns"):
        out["returns"] = fields(item["returns"])
    if item.get("properties"):
        out["properties"] = fields(item["properties"])
    return out
