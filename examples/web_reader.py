"""An agent that reads allowlisted documentation pages with `fetch_url`.

    think serve examples/web_reader.py:DocsReader

It may fetch the Python documentation and PEPs, nothing else: private and local addresses are
refused (also when a public name resolves to one), redirects are re-checked, pages come back as
markdown wrapped as untrusted web content, and binary files are saved under `/fetched/` in its
workspace. See docs/fetch.md.

Run it offline with `python examples/web_reader.py`: a scripted model reads a page from a small
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
from think.testing.models import ScriptedModel, call
from think.tools.fetch import create_fetch_tools

PAGE = b"""<html><head><title>json</title><script>track()</script></head><body>
<h1>json &mdash; JSON encoder and decoder</h1><p>Use <code>json.dumps(obj, indent=2)</code> to pretty-print.</p>
</body></html>"""


class DocsReader(Think):
    """Answers Python questions from the documentation, citing the pages it read."""

    workspace_bash = False
    welcome = "I answer Python questions from docs.python.org and the PEPs, and say which page I read."
    suggestions = ("How do I pretty-print JSON?", "What does PEP 8 say about line length?")
    fetch_tools = create_fetch_tools(["https://docs.python.org/3/**", "https://peps.python.org"],
                                     spill_to_workspace=True)

    def get_system_prompt(self) -> str:
        return ("You answer questions about Python from its documentation. Fetch the relevant page "
                "first, answer briefly, and give the URL you used.")


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


def offline_reader(origin: str) -> type[DocsReader]:
    """`DocsReader` with a scripted model and tools that may reach `origin` on 127.0.0.1 only."""

    class OfflineReader(DocsReader):
        fetch_tools = create_fetch_tools([f"{origin}/**"], allow_private_networks=["127.0.0.1/32"])

        def get_model(self) -> ScriptedModel:
            return ScriptedModel([call("fetch_url", url=f"{origin}/3/library/json.html"),
                                  f"Use json.dumps(obj, indent=2) ({origin}/3/library/json.html)."])

    return OfflineReader


async def main() -> None:
    with local_docs() as origin:
        async with open_agent(offline_reader(origin), "demo", data_dir=".think-example") as agent:
            await agent.save_messages(["How do I pretty-print JSON?"])
            for message in agent.messages:
                for part in message.parts:
                    print(message.role, getattr(part, "text", None) or getattr(part, "output", None))


if __name__ == "__main__":
    asyncio.run(main())
