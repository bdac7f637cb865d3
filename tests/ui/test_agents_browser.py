"""The page's sidebar lists the conversations the server stores (the agents browser) and opens a
read-only transcript with its branches; without the browser it falls back to its own list.
Headless Chromium against a real server over a data directory that real turns wrote."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.browse.agents import Notes, fill
from tests.ui.conftest import SCREENSHOTS, Browser, live_server
from tests.ui.test_chat_page import _send, _turn_over
from think.server import create_app


def _open(name: str) -> list[dict[str, object]]:
    return [{"action": "goto", "path": f"/#/notes/{name}"}, {"action": "waitFor", "selector": "#composer-input"}]


def test_the_sidebar_lists_server_conversations_and_shows_a_transcript_with_branches(
        browser: Browser, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    ids = anyio.run(fill, data_dir)
    app = create_app([Notes], data_dir=data_dir, ui=True, browse=True)
    with live_server(app) as url:
        run = browser.run(url, [
            *_open("alice"),
            {"action": "waitFor", "selector": ".server-list li[data-name='bob']"},
            {"action": "text", "selector": ".server-list .recent-title", "as": "titles"},
            {"action": "attr", "selector": ".server-list li[data-name='alice']", "name": "data-messages",
             "as": "alice_messages"},
            {"action": "text", "selector": ".server-list li[data-name='alice'] .recent-meta", "as": "alice_meta"},
            {"action": "click", "selector": ".server-list li[data-name='bob'] .recent-view"},
            {"action": "waitFor", "selector": "[role='dialog'] .viewer-msg"},
            {"action": "text", "selector": ".viewer-msg .viewer-body", "as": "active_texts"},
            {"action": "text", "selector": ".viewer-branch-count", "as": "active_count"},
            {"action": "attr", "selector": ".viewer-assistant", "name": "data-id", "as": "active_id"},
            {"action": "screenshot", "path": str(SCREENSHOTS / "agents-browser.png")},
            {"action": "click", "selector": "button[aria-label='Previous branch']"},
            {"action": "waitText", "selector": ".viewer-branch-count", "text": "2/3"},
            {"action": "text", "selector": ".viewer-note", "as": "note"},
            {"action": "attr", "selector": ".viewer-assistant", "name": "data-id", "as": "other_id"},
            {"action": "count", "selector": "#composer-input[disabled]", "as": "composer_disabled"},
            {"action": "click", "selector": "button[aria-label='Close transcript']"},
            {"action": "waitGone", "selector": "[role='dialog']"},
            # A name too long for its file is listed by its file stem: it opens read-only, not in chat.
            {"action": "click", "selector": ".server-list li[data-name^='a-long-name-'] .recent-item"},
            {"action": "waitFor", "selector": "[role='dialog'] .viewer-msg"},
            {"action": "text", "selector": ".viewer-msg .viewer-body", "as": "long_texts"},
            {"action": "count", "selector": "[role='dialog'] button:has-text('Open in chat')", "as": "long_open"},
            {"action": "click", "selector": "button[aria-label='Close transcript']"},
            {"action": "waitGone", "selector": "[role='dialog']"},
            # A new conversation, once answered, is listed from the server with its title.
            *_open("carol"),
            *_send("Draft the agenda"),
            _turn_over(),
            *_open("carol"),
            {"action": "waitFor", "selector": ".server-list li[data-name='carol'][data-messages='2']"},
            {"action": "text", "selector": ".server-list li[data-name='carol'] .recent-title", "as": "carol"},
        ])
    values = run.values
    titles = values["titles"]
    assert "Plan the offsite" in titles and "Name a cat" in titles  # titles from each first message
    assert values["alice_messages"] == "4" and "4 messages" in values["alice_meta"][0]
    assert values["active_texts"] == ["Name a cat", "Noted: Name a cat"]
    assert values["active_count"] == ["3/3"] and values["active_id"] == ids["answers"][2]
    assert values["other_id"] == ids["answers"][1] and "not the active branch" in values["note"][0]
    assert values["long_texts"] == ["Long one", "Noted: Long one"] and values["long_open"] == 0
    assert values["carol"] == ["Draft the agenda"]
    assert any("/_think/agents/notes/bob" in r for r in run.requests)


def test_without_the_browser_the_sidebar_keeps_its_own_list(browser: Browser, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    anyio.run(fill, data_dir)
    app = create_app([Notes], data_dir=data_dir, ui=True)  # production default: no browser
    with live_server(app) as url:
        run = browser.run(url, [
            *_open("alice"),
            {"action": "waitText", "selector": "nav[aria-label='Recent conversations'] .recent-title",
             "text": "Plan the offsite"},
            {"action": "count", "selector": ".server-list", "as": "server_lists"},
            {"action": "text", "selector": ".recent-title", "as": "titles"},
        ])
    assert run.values["server_lists"] == 0
    [title] = run.values["titles"]  # only what this browser opened, titled by the page itself
    assert title.startswith("Plan the offsite")
