"""What CDP commands model-written code may send (`browser_execute`'s `cdp.send`), decided here only.

The code drives its own page: it may use the protocol's page-level domains freely (DOM, Runtime,
Page, Input, Network, Emulation, …), but nothing that would undo the URL policy or reach past
its browser context:

* only the domains in `DOMAINS`: not `Fetch` (the interception is ours), `Browser`, `Storage`,
  `SystemInfo`, `Tracing`, `Extensions`, `Tethering`, `PWA`, … (browser-wide or host-facing);
* not `DOM.setFileInputFiles` or a drag event carrying `files` (they read host files),
  `Page.setDownloadBehavior` (writes them),
  `Network.loadNetworkResource`, `Network.setRequestInterception`;
* `Page.navigate` URLs must pass the URL policy (or be `about:blank`); `Target.createTarget`
  makes a blank page in the page's browser context, to be armed by `attach` before it loads;
* `Target` commands only for targets of the page's own browser context (`createTarget` is put
  in it), `Target.getTargets` lists only those; sessions must be the page's own.

Every request the page then makes still goes through the guard (`think.tools.browser.guard`).
"""

from __future__ import annotations

from typing import Any

from think.sandbox.host import HostCallRefused
from think.tools.browser.browser import Page

DOMAINS = frozenset({
    "Accessibility", "Animation", "Audits", "CSS", "CacheStorage", "Console", "DOM", "DOMDebugger", "DOMSnapshot",
    "DOMStorage", "Debugger", "DeviceOrientation", "Emulation", "EventBreakpoints", "HeadlessExperimental",
    "HeapProfiler", "IO", "IndexedDB", "Input", "Inspector", "LayerTree", "Log", "Media", "Memory", "Network",
    "Overlay", "Page", "Performance", "PerformanceTimeline", "Preload", "Profiler", "Runtime", "Schema", "Security",
    "ServiceWorker", "Target", "WebAudio", "WebAuthn",
})
REFUSED = frozenset({"DOM.setFileInputFiles", "Page.setDownloadBehavior", "Network.loadNetworkResource",
                     "Network.setRequestInterception", "Page.close"})
TARGET_METHODS = frozenset({"Target.getTargets", "Target.getTargetInfo", "Target.createTarget", "Target.closeTarget",
                            "Target.activateTarget", "Target.attachToTarget", "Target.detachFromTarget"})


def refuse(message: str) -> HostCallRefused:
    return HostCallRefused(message, "PermissionError")


def allowed_domain(domain: str) -> bool:
    return domain in DOMAINS


def check_url(page: Page, url: Any) -> str:
    text = str(url or "about:blank")
    if text == "about:blank":
        return text
    decision = page.browser.policy.check(text)
    if not decision:
        raise refuse(f"refused by the URL policy: {decision.reason}")
    return text


async def owned_target(page: Page, target_id: Any) -> str:
    try:
        info = (await page.send("Target.getTargetInfo", {"targetId": str(target_id)}, session_id="")
                ).get("targetInfo") or {}
    except Exception as exc:
        raise refuse(f"no such target: {target_id}") from exc
    if info.get("browserContextId") != page.context_id:
        raise refuse(f"target {target_id} is not in this browser session")
    return str(target_id)


async def send(page: Page, method: str, params: dict[str, Any], session_id: str | None) -> dict[str, Any]:
    """Send one command for model code, after the checks above."""
    domain, _, name = method.partition(".")
    if not name or not allowed_domain(domain) or method in REFUSED:
        raise refuse(f"{method} is not available to browser code")
    if session_id and not page.owns_session(session_id):
        raise refuse(f"session {session_id} is not one of this browser session's")
    if method == "Input.dispatchDragEvent" and (params.get("data") or {}).get("files"):
        raise refuse("drag events with files are not available to browser code (they would read host files)")
    if method == "Page.navigate":
        params = {**params, "url": check_url(page, params.get("url"))}
    if domain != "Target":
        return await page.send(method, params, session_id=session_id)
    if method not in TARGET_METHODS:
        raise refuse(f"{method} is not available to browser code")
    if method == "Target.getTargets":
        answer = await page.send(method, {}, session_id="")
        mine = [t for t in answer.get("targetInfos", []) if t.get("browserContextId") == page.context_id]
        return {"targetInfos": mine}
    if method == "Target.createTarget":
        clean = {k: v for k, v in params.items() if k in ("width", "height", "newWindow", "background")}
        return await page.send(method, {**clean, "url": "about:blank", "browserContextId": page.context_id},
                               session_id="")
    if method == "Target.detachFromTarget":
        if not page.owns_session(str(params.get("sessionId", ""))):
            raise refuse("that session is not one of this browser session's")
        return await page.send(method, {"sessionId": params["sessionId"]}, session_id="")
    target = await owned_target(page, params.get("targetId"))
    if method == "Target.attachToTarget":
        return await attach(page, target)
    return await page.send(method, {"targetId": target}, session_id="")


async def attach(page: Page, target_id: str) -> dict[str, Any]:
    """A new flat session on one of the page's own targets, recorded as the page's."""
    target = await owned_target(page, target_id)
    session_id = await page.link.guard.open(page.connection, target, page.key)
    return {"sessionId": session_id}
