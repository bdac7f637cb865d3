"""The shipped chat page (headless Chromium) while its server is SIGKILLed and restarted on the
same data: the open page ends with one assistant message holding the whole answer, never showing
a word twice; while the server is down it shows that it reconnects and never offers to run a
server tool in the page. And the stock hooks alone (the protocol harness) on a page opened while
the recovery streams.

The server is a subprocess (`restart_app.py`) on a fixed port, so the page's socket reconnects
to the restarted one by itself. A MutationObserver records what the page shows at every change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.submissions.server_process import ServerProcess, serve_process
from tests.ui.conftest import Browser
from tests.ui.harness import ProtocolBrowser, Tab, build_harness, free_port
from tests.ui.harness import ServerProcess as HarnessServer

APP = "tests.ui.restart_app:app"
AGENT = "ui-recovering"
OFFER = "asked this page to run"

# Every change of the page: the assistant articles (their message ids and text), whether the
# page ever offered to run a tool, and the tool cards' labels while the socket was down.
OBSERVE = """(() => {
  window.__shown = []; window.__offered = false; window.__offline = [];
  const snap = () => {
    const articles = [...document.querySelectorAll("article.msg-assistant")].map((a) => [
      a.dataset.messageIds || "", [...a.querySelectorAll(".text-part")].map((t) => t.textContent).join(" ")]);
    const now = JSON.stringify(articles);
    if (window.__shown.at(-1) !== now) window.__shown.push(now);
    if (document.body.textContent.includes(__OFFER__)) window.__offered = true;
    if (document.querySelector(".conn-closed")) {
      const pills = [...document.querySelectorAll("[data-tool-name] .pill")].map((p) => p.textContent).join(",");
      if (window.__offline.at(-1) !== pills) window.__offline.push(pills);
    }
  };
  new MutationObserver(snap).observe(document.body, {subtree: true, childList: true, characterData: true,
                                                    attributes: true});
  snap();
  return true;
})()""".replace("__OFFER__", json.dumps(OFFER))


def _send(tab: Tab, text: str) -> None:
    tab.eval("""(() => { const el = document.querySelector("#composer-input");
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set.call(el, __TEXT__);
      el.dispatchEvent(new Event("input", {bubbles: true})); return true; })()""".replace("__TEXT__", json.dumps(text)))
    tab.wait("!document.querySelector(\"button[aria-label='Send message']\").disabled")
    tab.eval("document.querySelector(\"button[aria-label='Send message']\").click(), true")


def _text_js() -> str:
    return "[...document.querySelectorAll('article.msg-assistant .text-part')].map((t) => t.textContent).join(' ')"


@pytest.fixture(scope="module")
def page_browser(browser: Browser) -> Iterator[ProtocolBrowser]:
    driver = ProtocolBrowser()
    try:
        yield driver
    finally:
        driver.close()


class Restartable:
    """A server subprocess that can be SIGKILLed and started again on the same port and data."""

    def __init__(self, data: Path) -> None:
        self.env = {"THINK_DATA_DIR": str(data)}
        self.ready = f"/agents/{AGENT}/probe/get-messages"
        self._held: list[AbstractContextManager[ServerProcess]] = []
        self.server = self._start(0)

    def _start(self, port: int) -> ServerProcess:
        cm = serve_process(APP, self.env, ready_path=self.ready, port=port)
        self._held.append(cm)
        return cm.__enter__()

    def kill_and_restart(self) -> None:
        self.server.kill()
        self.server = self._start(self.server.port)

    def kill(self) -> None:
        self.server.kill()

    def start_again(self) -> None:
        self.server = self._start(self.server.port)

    def close(self) -> None:
        for cm in reversed(self._held):
            cm.__exit__(None, None, None)


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    server = Restartable(tmp_path / "data")
    try:
        yield server
    finally:
        server.close()


def _stored(server: ServerProcess, name: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{server.http}/agents/{AGENT}/{name}/get-messages", timeout=10).json())


def test_an_answer_cut_by_a_crash_ends_as_one_message_on_the_open_page(page_browser: ProtocolBrowser,
                                                                       restartable: Restartable) -> None:
    tab = page_browser.open("one", f"{restartable.server.http}/#/{AGENT}/one", harness=False)
    tab.wait("document.querySelector('.conn-open') && document.querySelector('#composer-input')")
    assert tab.eval(OBSERVE) is True
    _send(tab, "slow 40")
    tab.wait(f"{_text_js()}.includes('w13')")
    restartable.kill_and_restart()
    tab.wait(f"{_text_js()}.includes('w40') && document.querySelector('.conn-open') && "
             "document.querySelector(\"button[aria-label='Send message']\")", timeout=40)
    stored = _stored(restartable.server, "one")
    assert [m["role"] for m in stored] == ["user", "assistant"]
    answer = stored[1]
    whole = [f"w{k:02d}" for k in range(1, 41)]
    assert "".join(p.get("text", "") for p in answer["parts"]).split() == whole
    assert not [p for p in answer["parts"] if p.get("state") == "streaming"]
    shown = [json.loads(s) for s in tab.eval("window.__shown")]
    final = shown[-1]
    assert [ids for ids, _ in final] == [answer["id"]] and final[0][1].split() == whole
    for articles in shown:  # at every change: at most one reply, its words in order, none twice
        assert len(articles) <= 1, articles
        for _, text in articles:
            words = text.split()
            assert words == whole[:len(words)], text
    tab.eval("location.reload(), true")
    tab.wait(f"{_text_js()}.includes('w40')")
    assert tab.eval("[...document.querySelectorAll('article.msg-assistant')].map((a) => a.dataset.messageIds)") \
        == [answer["id"]]
    tab.close()


def test_a_server_tool_cut_by_a_crash_is_never_offered_to_the_page(page_browser: ProtocolBrowser,
                                                                   restartable: Restartable) -> None:
    tab = page_browser.open("tool", f"{restartable.server.http}/#/{AGENT}/tool", harness=False)
    tab.wait("document.querySelector('.conn-open') && document.querySelector('#composer-input')")
    assert tab.eval(OBSERVE) is True
    _send(tab, "long job please")
    tab.wait("document.querySelector('[data-tool-name=long_task][data-tool-state=input-available]')")
    restartable.kill()
    tab.wait("document.querySelector('.conn-closed') && document.querySelector('.notice-reconnecting')")
    card = "[data-tool-name=long_task]"
    tab.wait(f"document.querySelector('{card} .pill').textContent === 'reconnecting'")
    assert tab.eval(f"document.querySelector('{card}').textContent.includes({json.dumps(OFFER)})") is False
    assert tab.eval("[...document.querySelectorAll('button')].some((b) => b.textContent.includes('unavailable'))") \
        is False
    restartable.start_again()
    tab.wait("document.querySelector('.conn-open') && "
             f"document.querySelector('{card}[data-tool-state=output-error]') && "
             f"{_text_js()}.includes('The long task was interrupted.')", timeout=40)
    assert tab.eval("window.__offered") is False  # at no point, down or up
    offline = tab.eval("window.__offline")
    assert offline and all(labels == "reconnecting" for labels in offline), offline
    stored = _stored(restartable.server, "tool")
    part = next(p for m in stored for p in m["parts"] if p["type"] == "tool-long_task")
    assert part["state"] == "output-error"
    tab.close()


def test_a_page_opened_while_the_recovery_streams_shows_one_clean_answer(page_browser: ProtocolBrowser,
                                                                         tmp_path: Path) -> None:
    """The stock hooks (the protocol harness): a second page opened after the restart, while the
    recovery's continuation streams, gets the stored partial, then the continuation appended to
    it; at no render does it show a word twice or a second reply."""
    build_harness()
    server = HarnessServer(free_port(), tmp_path / "data")
    server.start()
    try:
        first = page_browser.open("first", f"{server.url}harness/?agent=protocol-chat&name=late")
        first.eval("harness.send('slow 200')")
        first.wait("harness.texts().join('').includes('w15')")
        server.kill()
        server.start()
        first.wait("harness.texts().join('').includes('w40')", timeout=40)  # the continuation streams
        late = page_browser.open("late", f"{server.url}harness/?agent=protocol-chat&name=late")
        streaming = late.eval("harness.busy")
        for tab in (first, late):
            tab.wait("harness.texts().join('').includes('w200') && !harness.busy", timeout=40)
        whole = [f"w{k:02d}" for k in range(1, 201)]
        stored = httpx.get(f"{server.url}agents/protocol-chat/late/get-messages", timeout=10).json()
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert "".join(p.get("text", "") for p in stored[1]["parts"]).split() == whole
        for tab in (first, late):
            assert tab.texts() == ["user: slow 200", "assistant: " + "".join(p.get("text", "")
                                                                          for p in stored[1]["parts"])]
            for entry in tab.eval("harness.shown"):
                replies = [text for role, _, text in json.loads(entry) if role == "assistant"]
                assert len(replies) <= 1, (tab.name, entry)
                for text in replies:
                    assert text.split() == whole[:len(text.split())], text
        assert streaming is True, "the late page connected after the recovery had ended"
        first.close()
        late.close()
    finally:
        server.stop()
