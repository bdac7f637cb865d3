"""Fetch tools: read-only, allowlisted HTTP GETs for the model (`fetch_url`, `fetch_<target>`).

Trusts: the developer's allowlist and targets (including a target's private host and its fixed
headers). Does not trust: the model's URLs, paths and headers, nor anything a server sends —
redirects are re-checked by `think.net.UrlPolicy`, bodies are capped, and text is wrapped as
untrusted web content. Results are dicts that never raise: `{"ok": True, …}` or
`{"ok": False, "code": …, "message": …}` (codes as in the original Think).

    class Researcher(Think):
        fetch_tools = create_fetch_tools(allowlist=["https://docs.python.org/3/**"])
"""

from think.tools.fetch.request import ErrorCode, FetchResult, ResponseMode, SpillOps
from think.tools.fetch.tools import FetchTarget, create_fetch_tools

__all__ = ["ErrorCode", "FetchResult", "FetchTarget", "ResponseMode", "SpillOps", "create_fetch_tools"]
