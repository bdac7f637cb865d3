"""An agent with a real browser: it opens allowlisted pages in headless Chromium, reads them as
markdown, takes screenshots into its workspace, and may script the page over CDP.

    think serve examples/web_browser.py:PageReader

It may load pages (and their images, scripts, XHRs) from the Python documentation only: every
request the page makes passes the same URL policy as the fetch tools, private and local
addresses are refused (also after DNS resolution), and the browser's own network goes nowhere.
Kept sessions idle for ten minutes are swept by a scheduled task. Needs Chromium
(`apt-get install chromium`). See docs/browser.md.

Run it offline with `python examples/web_browser.py`: a scripted model reads a page from a small
server on 127.0.0.1, which only the offline variant is allowed to reach.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from think import Think, open_agent
from think.scheduling.tasks import ScheduledTaskContext, ScheduledTaskSpec
from think.testing.models import ScriptedModel, call
from think.tools.browser import create_browser_tools

PAGE = b"""<html><head><title>json</title></head><body><h1>json</h1><p id="tip">loading</p>
<script>document.getElementById('tip').textContent = 'Use json.dumps(obj, indent=2) to pretty-print.';</script>
</body></html>"""


class PageReader(Think):
    """Answers Python questions from the rendered documentation, citing the pages it read."""

    workspace_bash = False
    welcome = "I read the Python documentation in a real browser and say which page I used."
    suggestions = ("How do I pretty-print JSON?", "Take a screenshot of the json module's page.")
    browser_tools = create_browser_tools(allowlist=["https://docs.python.org/3/**"], session="dynamic")

    def get_system_prompt(self) -> str:
        return ("You answer questions about Python from its documentation. Open the relevant page with "
                "browser_markdown first, answer briefly, and give the URL you used.")

    def get_scheduled_tasks(self) -> dict[str, ScheduledTaskSpec]:
        return {"sweep-browser": ScheduledTaskSpec(schedule="every 10 minutes", handler="sweep_browser")}

    async def sweep_browser(self, ctx: ScheduledTaskContext) -> None:
        """Close browser sessions the model kept but has not used for ten minutes."""
        if self.browser_tools is not None:
            await self.browser_tools.sweep(max_idle=600)  # type: ignore[attr-defined]


@contextmanager
def local_docs() -> Iterator[str]:
    """A one-page documentation server on 127.0.0.1 (a random port), for the offline run."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def offline_reader(origin: str) -> type[PageReader]:
    """`PageReader` with a scripted model and tools that may reach `origin` on 127.0.0.1 only."""

    class OfflineReader(PageReader):
        browser_tools = create_browser_tools(allowlist=[f"{origin}/**"], allow_private_networks=["127.0.0.1/32"])

        def get_model(self) -> ScriptedModel:
            return ScriptedModel([call("browser_markdown", url=f"{origin}/3/library/json.html"),
                                  f"Use json.dumps(obj, indent=2) ({origin}/3/library/json.html)."])

    return OfflineReader


async def main() -> None:
    with local_docs() as origin:
        reader = offline_reader(origin)
        try:
            async with open_agent(reader, "demo", data_dir=".think-example") as agent:
                await agent.save_messages(["How do I pretty-print JSON?"])
                for message in agent.messages:
                    for part in message.parts:
                        print(message.role, getattr(part, "text", None) or getattr(part, "output", None))
        finally:
            await reader.browser_tools.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    asyncio.run(main())
