"""The permission battery: the `host` object has only what the manifest grants.

Each extension tries host methods from inside the sandbox and reports what happened; network
grants are tried against a real local web site through a test resolver (nothing leaves the
machine), with the URL policy's rules (`think.net`) deciding every request, redirect and address.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.extensions.agents import call_tool
from tests.net.site import Site, serve_site
from think import Think, open_agent
from think.extensions import NetworkOptions
from think.net import StaticResolver

TRY_ALL = '''
CALLS = [["read_file", ["/secret.txt"]], ["list_files", ["/"]], ["write_file", ["/secret.txt", "pwned"]],
         ["delete_file", ["/secret.txt"]], ["get_context", ["memory"]], ["set_context", ["memory", "x"]],
         ["get_messages", [5]], ["get_session_info", []], ["send_message", ["hi"]],
         ["fetch", ["http://a.example/"]]]

def attempt(fn, call_args):
    try:
        return {"ok": fn(*call_args)}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}

def probe(args, host):
    out = {}
    for name, call_args in CALLS:
        if args.get("only") and name not in args["only"]:
            continue
        out[name] = attempt(getattr(host, name), call_args)
    if args.get("around"):
        out["around"] = attempt(lambda: granted.write_file("/secret.txt", "pwned"), [])
        out["raw"] = attempt(lambda: __think_host__("granted", "write_file", ["/secret.txt", "pwned"], {}), [])
    return out

tools = {"try": {"description": "Try host methods.", "execute": probe,
                 "parameters": {"only": {"type": "array"}, "around": {"type": "boolean"}}}}
'''

FETCH = '''
def get(args, host):
    try:
        res = host.fetch(args["url"])
        return {"status": res["status"], "text": res["text"][:100], "url": res["url"]}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}

tools = {"get": {"description": "Fetch a URL.", "execute": get, "parameters": {"url": {"type": "string"}},
                 "required": ["url"]}}
'''
DENIED = "PermissionError: Extension error: permission denied"
NAMES = {"a.example": ["127.0.0.1"], "b.example": ["127.0.0.1"]}


class Plain(Think):
    workspace_bash = False
    extension_network: ClassVar[NetworkOptions | None] = None


async def run_tool(agent: Think, name: str, **arguments: Any) -> Any:
    result = await call_tool(agent, name, **arguments)
    assert not result.is_error, result.error
    return result.output


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_site() as served:
        yield served


async def test_an_extension_without_permissions_can_use_no_host_method(data_dir: Path) -> None:
    async with open_agent(Plain, "p", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/secret.txt", "keep")
        await agent.extensions.load({"name": "nothing"}, TRY_ALL)
        out = await run_tool(agent, "nothing_try", around=True)
        assert set(out) == {"read_file", "list_files", "write_file", "delete_file", "get_context", "set_context",
                            "get_messages", "get_session_info", "send_message", "fetch", "around", "raw"}
        # Reaching past the host object finds no such capability, neither on the namespace nor
        # at the sandbox's one door out.
        assert out.pop("around") == {"error": "AttributeError: 'granted' object has no attribute 'write_file'"}
        assert out.pop("raw") == {"error": "AttributeError: granted.write_file is not available"}
        for name, result in out.items():
            assert result["error"].startswith(f"PermissionError: Extension error: permission denied: host.{name}()"), \
                (name, result)
        assert "permissions.workspace 'read-write'" in out["write_file"]["error"]
        assert await agent.workspace.read_file("/secret.txt") == "keep"
        assert agent.messages == []


async def test_a_read_only_extension_reads_but_cannot_write_or_delete(data_dir: Path) -> None:
    async with open_agent(Plain, "r", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/secret.txt", "keep")
        await agent.extensions.load({"name": "reader", "permissions": {"workspace": "read"}}, TRY_ALL)
        out = await run_tool(agent, "reader_try", only=["read_file", "list_files", "write_file", "delete_file"],
                             around=True)
        assert out["read_file"] == {"ok": "keep"}
        assert [e["name"] for e in out["list_files"]["ok"]] == ["secret.txt"]
        for name in ("write_file", "delete_file"):
            assert out[name]["error"] == (f"PermissionError: Extension error: permission denied: host.{name}() needs "
                                          "permissions.workspace 'read-write'")
        assert out["around"] == {"error": "AttributeError: 'granted' object has no attribute 'write_file'"}
        assert out["raw"] == {"error": "AttributeError: granted.write_file is not available"}
        assert await agent.workspace.read_file("/secret.txt") == "keep"


async def test_a_read_write_extension_writes_and_deletes(data_dir: Path) -> None:
    async with open_agent(Plain, "w", data_dir=data_dir) as agent:
        await agent.workspace.write_file("/secret.txt", "keep")
        await agent.extensions.load({"name": "writer", "permissions": {"workspace": "read-write"}}, TRY_ALL)
        out = await run_tool(agent, "writer_try", only=["write_file", "read_file", "delete_file"])
        assert out == {"read_file": {"ok": "keep"}, "write_file": {"ok": True}, "delete_file": {"ok": True}}
        assert await agent.workspace.read_file("/secret.txt") is None


async def test_a_network_grant_reaches_only_its_hosts(data_dir: Path, site: Site) -> None:
    """Granted `a.example`; the developer lets extensions reach 127.0.0.1 (where the test site is)."""
    Plain.extension_network = NetworkOptions(resolver=StaticResolver(NAMES), allow_private_networks=["127.0.0.1/32"])
    port = site.port
    try:
        async with open_agent(Plain, "n", data_dir=data_dir) as agent:
            await agent.extensions.load({"name": "web", "permissions": {"network": ["a.example"]}}, FETCH)
            site.requests.clear()
            ok = await run_tool(agent, "web_get", url=f"http://a.example:{port}/data.json")
            assert ok["status"] == 200 and "Brest" in ok["text"]
            refused = {
                "other host": f"http://b.example:{port}/data.json",
                "IP literal": f"http://127.0.0.1:{port}/data.json",
                "localhost": f"http://localhost:{port}/data.json",
                "redirect to another host": f"http://a.example:{port}/go?to=http://b.example:{port}/data.json",
                "redirect to localhost": f"http://a.example:{port}/go?to=http://localhost:{port}/data.json",
                "redirect to an address": f"http://a.example:{port}/go?to=http://127.0.0.1:{port}/data.json",
                "redirect to metadata": f"http://a.example:{port}/go?to=http://169.254.169.254/latest/meta-data/",
                "credentials": f"http://user:pw@a.example:{port}/data.json",
                "scheme": "file:///etc/passwd",
            }
            for case, url in refused.items():
                out = await run_tool(agent, "web_get", url=url)
                assert out.get("error", "").startswith(DENIED), (case, out)
            # Only the first request and the redirecting hops reached the site; no refused target did.
            assert site.paths() == ["/data.json", "/go", "/go", "/go", "/go"]
    finally:
        Plain.extension_network = None


async def test_a_granted_name_that_resolves_to_a_private_address_is_refused(data_dir: Path, site: Site) -> None:
    """The default network options (public addresses only): `a.example` resolves to 127.0.0.1."""
    Plain.extension_network = NetworkOptions(resolver=StaticResolver(NAMES))
    try:
        async with open_agent(Plain, "d", data_dir=data_dir) as agent:
            await agent.extensions.load({"name": "web", "permissions": {"network": ["a.example"]}}, FETCH)
            site.requests.clear()
            out = await run_tool(agent, "web_get", url=f"http://a.example:{site.port}/data.json")
            assert out["error"].startswith(DENIED)
            assert "127.0.0.1" in out["error"], out
            assert site.paths() == []
    finally:
        Plain.extension_network = None


async def test_context_and_message_grants(data_dir: Path) -> None:
    source = '''
def probe(args, host):
    out = {"own": host.get_context("notes"), "count": host.get_session_info()["message_count"]}
    host.set_context("notes", "remember the milk")
    try:
        host.set_context("memory", "overwritten")
    except PermissionError as e:
        out["other"] = str(e)
    out["messages"] = [m["text"] for m in host.get_messages(1)]
    host.send_message("from the extension")
    return out

tools = {"probe": {"description": "Probe.", "execute": probe, "parameters": {}}}
'''

    class WithMemory(Plain):
        def configure_session(self, session: Any) -> Any:
            return session.with_context("memory", description="Shared memory")

    async with open_agent(WithMemory, "c", data_dir=data_dir) as agent:
        await agent.add_messages(["first", "second"])
        await agent.extensions.load({"name": "ctx", "context": [{"label": "notes", "description": "Notes"}],
                                     "permissions": {"context": {"read": ["memory"], "write": "own"},
                                                     "messages": "read", "session": {"send_message": True}}}, source)
        out = await run_tool(agent, "ctx_probe")
        assert out == {"own": "", "count": 2, "messages": ["second"],
                       "other": "Extension error: permission denied: cannot write context block 'memory'"}
        assert (await agent.session.context.get("ctx_notes")).content == "remember the milk"
        assert (await agent.session.context.get("memory")).content == ""
        assert [m.text for m in agent.messages] == ["first", "second", "from the extension"]
