"""`browser_execute`: model code in the sandbox host drives its page over CDP through the gate;
`browser_search` and `cdp.spec()` read the running browser's protocol."""

from __future__ import annotations

from tests.net.site import PNG
from tests.tools.browser.helpers import attached, call
from tests.tools.browser.site import BrowserSite
from think.storage import Database
from think.tools.browser.process import Chromium
from think.workspace import Workspace


async def test_code_reads_the_dom_and_takes_a_screenshot(chromium: Chromium, site: BrowserSite) -> None:
    workspace = Workspace(Database(":memory:"))
    code = f"""
loaded = cdp.navigate("{site.url('/table.html')}")
rows = cdp.evaluate("Array.from(document.querySelectorAll('tr.boat td:first-child')).map(td => td.textContent)")
doc = cdp.send("DOM.getDocument", {{"depth": 1}})
title = cdp.send("Runtime.evaluate", {{"expression": "document.title", "returnByValue": True}})["result"]["value"]
path = cdp.screenshot()
cdp.log("found " + str(len(rows)) + " boats")
print(title)
{{"status": loaded["status"], "rows": rows, "root": doc["root"]["nodeName"], "path": path}}
"""
    result = await call(attached(chromium, workspace=workspace), "browser_execute", code=code)
    assert result["ok"] is True, result
    value = result["value"]
    assert value["status"] == 200 and value["rows"] == ["Albatross", "Petrel"] and value["root"] == "#document"
    assert result["stdout"] == "Boats\n"
    assert "log: found 2 boats" in result["log"]
    assert any(line.startswith("DOM.getDocument: ok") for line in result["log"])
    image = await workspace.read_bytes(value["path"])
    assert image is not None and image[:8] == PNG[:8]


async def test_commands_that_would_escape_are_refused(chromium: Chromium, site: BrowserSite) -> None:
    tools = attached(chromium)
    refused = {
        "cdp.send('Fetch.disable')": "Fetch.disable is not available",
        "cdp.send('Browser.close')": "Browser.close is not available",
        "cdp.send('Storage.getCookies')": "Storage.getCookies is not available",
        "cdp.send('Target.createBrowserContext', {'proxyServer': 'direct://'})": "is not available",
        "cdp.send('DOM.setFileInputFiles', {'files': ['/etc/passwd'], 'nodeId': 1})": "is not available",
        "cdp.send('Page.setDownloadBehavior', {'behavior': 'allow', 'downloadPath': '/tmp'})": "is not available",
        ("cdp.send('Input.dispatchDragEvent', {'type': 'drop', 'x': 5, 'y': 5, "
         "'data': {'items': [], 'files': ['/etc/passwd'], 'dragOperationsMask': 1}})"): "host files",
        "cdp.send('Page.navigate', {'url': 'file:///etc/passwd'})": "refused by the URL policy",
        f"cdp.send('Page.navigate', {{'url': '{site.blocked_origin}/secret'}})": "refused by the URL policy",
        "cdp.send('Runtime.evaluate', {'expression': '1'}, session_id='someone-else')": "is not one of this",
    }
    for code, message in refused.items():
        result = await call(tools, "browser_execute", code=code)
        assert result["ok"] is False and "PermissionError" in result["error"] and message in result["error"], code
    assert "/secret" not in site.paths()


async def test_targets_are_only_the_sessions_own(chromium: Chromium, site: BrowserSite) -> None:
    code = f"""
made = cdp.send("Target.createTarget", {{"url": "{site.blocked_origin}/secret"}})
session = cdp.attach_to_target(made["targetId"])
cdp.send("Page.navigate", {{"url": "{site.url('/table.html')}"}}, session_id=session)
ids = [t["targetId"] for t in cdp.targets()]
[made["targetId"] in ids, len(ids) >= 2, cdp.session()["target_id"] in ids]
"""
    tools = attached(chromium)
    other = await call(attached(chromium), "browser_execute", code="cdp.session()['target_id']")
    result = await call(tools, "browser_execute", code=code)
    assert result["ok"] is True, result
    assert result["value"] == [True, True, True]
    assert "/secret" not in site.paths()  # the new target was created blank, then navigated where allowed
    sneaky = await call(tools, "browser_execute", code=f"cdp.attach_to_target('{other['value']}')")
    assert sneaky["ok"] is False and "PermissionError" in sneaky["error"]


async def test_errors_in_code_and_in_commands_are_results(chromium: Chromium) -> None:
    tools = attached(chromium)
    broken = await call(tools, "browser_execute", code="cdp.send('Runtime.noSuchThing')")
    assert broken["ok"] is False and "RuntimeError" in broken["error"] and "Runtime.noSuchThing" in broken["error"]
    raised = await call(tools, "browser_execute", code="1 / 0")
    assert raised["ok"] is False and "ZeroDivisionError" in raised["error"]
    thrown = await call(tools, "browser_execute", code="cdp.evaluate('throw new Error(\"boom\")')")
    assert thrown["ok"] is False and "boom" in thrown["error"]


async def test_the_protocol_spec_and_search(chromium: Chromium) -> None:
    tools = attached(chromium)
    result = await call(tools, "browser_execute", code="""
domains = [d["domain"] for d in cdp.spec()]
shot = cdp.spec("Page", "captureScreenshot")
["Page" in domains, "Fetch" in domains, "Browser" in domains, [p["name"] for p in shot["parameters"]][:2]]
""")
    assert result["ok"] is True and result["value"] == [True, False, False, ["format", "quality"]]
    found = await call(tools, "browser_search", query="capture screenshot")
    assert found["ok"] is True and found["results"][0]["name"] == "Page.captureScreenshot"
    assert "format?: string" in found["results"][0]["parameters"]
    fetch = await call(tools, "browser_search", query="fulfillRequest")
    assert all(not r["name"].startswith("Fetch.") for r in fetch["results"])
