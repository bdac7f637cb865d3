"""Browser tools: a real headless Chromium, driven over the Chrome DevTools Protocol, for the model.

    class Researcher(Think):
        browser_tools = create_browser_tools(allowlist=["https://docs.python.org/**"])

Tools: `browser_execute` (model-written Python in the sandbox host against a `cdp` namespace),
`browser_search` (the live protocol description), and the quick actions `browser_markdown`,
`browser_links`, `browser_scrape`, `browser_extract` and `browser_screenshot`.

What it trusts: the developer's configuration — the URL policy, the browser binary or `cdp_url`,
the agent's model and workspace. What it does not trust: the model's URLs and code, and anything
a page does. Every request a page makes (navigation, redirect, subresource, fetch/XHR, in-page
navigation) is checked by the same `think.net.UrlPolicy` as the fetch tools and then made by us,
through the policy's client (`think.tools.browser.guard`); the browser's own network goes to a
proxy that does not exist, so what is not intercepted fails. CDP commands from model code pass
`think.tools.browser.gate`. Page text is wrapped as untrusted web content. See docs/browser.md.
"""

from think.tools.browser.browser import Browser, NavigationError, Page
from think.tools.browser.cdp import BrowserClosed, CdpConnection, CdpError
from think.tools.browser.sessions import SessionMode
from think.tools.browser.tools import BrowserTools, create_browser_tools

__all__ = ["Browser", "BrowserClosed", "BrowserTools", "CdpConnection", "CdpError", "NavigationError", "Page",
           "SessionMode", "create_browser_tools"]
