"""The `think` command: serve agents with the web UI, chat with one from the terminal."""

from __future__ import annotations

import errno
import importlib
import importlib.util
import inspect
import logging
import os
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from think._version import __version__
from think.cli_errors import CliError, explain, fail
from think.errors import ConfigurationError


def _load_module(spec: str) -> ModuleType:
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise CliError(f"no such file: {spec}", "check the path (relative to the current directory)")
        name = f"_think_target_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise CliError(f"cannot import {spec}", "give a Python file (.py) or a module name")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            raise CliError(f"importing {spec} failed: {_said(exc)}", "fix that error in the file") from exc
        return module
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name is not None and spec.startswith(exc.name):
            raise CliError(f"no module named {spec!r}", "check the name, run from the directory that holds it, "
                           "or give a path to a .py file") from exc
        raise CliError(f"importing {spec} failed: {_said(exc)}", "install what it needs") from exc
    except Exception as exc:
        raise CliError(f"importing {spec} failed: {_said(exc)}", "fix that error in the module") from exc


def _said(exc: BaseException) -> str:
    """An exception as one line: its type, its message's first line (a SyntaxError's place too)."""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"SyntaxError: {exc.msg} ({Path(exc.filename or '?').name}, line {exc.lineno})"
    text = str(exc).strip().split("\n", 1)[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_agent_classes(targets: tuple[str, ...]) -> list[type[Any]]:
    """`module:Class`, `path/to/file.py:Class`, or a module/file (every agent class defined in it)."""
    from think.runtime.agent import Agent

    classes: list[type[Any]] = []
    for target in targets:
        if ":" in target and not Path(target).is_file():
            module_part, class_name = target.rsplit(":", 1)
        else:
            module_part, class_name = target, ""
        module = _load_module(module_part)
        found = [obj for obj in vars(module).values()
                 if inspect.isclass(obj) and issubclass(obj, Agent) and obj.__module__ == module.__name__]
        names = ", ".join(cls.__name__ for cls in found) or "none"
        if class_name:
            cls = getattr(module, class_name, None)
            if not (inspect.isclass(cls) and issubclass(cls, Agent)):
                what = "no such name" if cls is None else "not an agent class"
                raise CliError(f"{target}: {class_name!r} is {what} in {module_part}",
                               f"name an agent class defined there (found: {names})")
            classes.append(cls)
            continue
        if not found:
            raise CliError(f"{target}: no agent class is defined there",
                           f"define a subclass of think.Think there, or name one with {target}:ClassName")
        classes.extend(found)
    return classes


VERSION_OF = ("python", "anyio", "starlette", "uvicorn", "websockets", "pydantic", "httpx", "orjson", "mcp",
              "pydantic-monty", "opentelemetry-api", "genai-prices", "pydantic-ai-slim")
"""The distributions `think --version` reports (those not installed are left out)."""


def versions() -> list[str]:
    """`think X.Y.Z` and one `name X.Y.Z` line per key dependency that is installed (read from the
    installed metadata: nothing is imported)."""
    from importlib import metadata

    lines = [f"think, version {__version__}"]
    for name in VERSION_OF:
        if name == "python":
            lines.append(f"  python {sys.version.split()[0]} ({sys.implementation.name})")
            continue
        try:
            lines.append(f"  {name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return lines


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo("\n".join(versions()))
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the versions of think and its key dependencies, then exit.")
def main() -> None:
    """Durable, streaming chat agents. Serve them, chat with them."""


@main.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on (0: a free one).")
@click.option("--data-dir", default=None, type=click.Path(file_okay=False),
              help="Where agents keep their SQLite files [default: $THINK_DATA_DIR or .think].")
@click.option("--ui/--no-ui", default=True, show_default=True, help="Serve the web UI at /.")
@click.option("--mcp", is_flag=True, help="Also serve the agents as an MCP server (streamable HTTP) at /mcp.")
@click.option("--mcp-allowed-host", "mcp_hosts", multiple=True, metavar="NAME[:PORT]",
              help="A Host header /mcp answers besides loopback names and --host (repeatable; NAME:* for any "
                   "port). The MCP endpoint refuses other hosts (DNS-rebinding guard).")
@click.option("--protocols", "protocols_opt", default=None, metavar="NAME,…",
              help="The wire protocols to serve (comma-separated): cf_agent (WebSocket), ai-sdk (useChat's HTTP "
                   "stream at …/chat), ag-ui, a2a [default: all that are installed].")
@click.option("--browse/--no-browse", default=None,
              help="Serve the agents browser at /_think/agents (read-only listing of the data directory) "
                   "[default: on for a loopback --host or when THINK_BROWSE_TOKEN is set].")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning"], case_sensitive=False),
              default="info", show_default=True, help="Level of the think.* loggers (one line per turn at info).")
@click.option("--log-format", type=click.Choice(["text", "json"], case_sensitive=False), default="text",
              show_default=True, help="Log lines as text, or as one JSON object per line.")
@click.option("--access-log/--no-access-log", default=False, show_default=True,
              help="Log every HTTP request and WebSocket upgrade.")
@click.option("--otel", is_flag=True,
              help="Export traces and metrics over OTLP/HTTP (configured by the standard OTEL_* variables; default "
                   "http://localhost:4318). Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set. Needs think-agents[otel].")
@click.option("--debug", is_flag=True, help="Show the traceback of a configuration error.")
@click.option("--database", default=None, envvar="THINK_DATABASE_URL", metavar="postgresql://…",
              help="Serve as one process of a cluster over this PostgreSQL database (env THINK_DATABASE_URL; "
                   "see docs/deployment.md) instead of from --data-dir.")
@click.option("--node-url", default=None, envvar="THINK_NODE_URL", metavar="URL",
              help="With --database: the URL the other processes reach this one at "
                   "(default http://<host>:<port>).")
@click.option("--reload", is_flag=True,
              help="Development: restart the server when a Python file in the working directory "
                   "or a target's folder changes.")
def serve(targets: tuple[str, ...], host: str, port: int, data_dir: str | None, ui: bool, mcp: bool,
          mcp_hosts: tuple[str, ...], protocols_opt: str | None, browse: bool | None, log_level: str,
          log_format: str, access_log: bool,
          otel: bool, debug: bool, database: str | None, node_url: str | None, reload: bool) -> None:
    """Serve agents over the chat WebSocket protocol, with the web UI.

    TARGETS are `module:Class`, `path/to/file.py[:Class]` or a module (all agent classes in it).
    A configuration error (a bad target, a model that cannot be resolved, a missing key, a port in
    use) is one line on stderr and exit code 2.
    """
    import uvicorn
    from rich.console import Console

    from think.log_config import configure_logging
    from think.observe.setup import install_otlp, otlp_endpoint, otlp_requested, shutdown
    from think.runtime.embedded import shared_runtime
    from think.server import create_app

    configure_logging(log_level, "json" if log_format.lower() == "json" else "text", access_log=access_log)
    console = Console(stderr=True)
    if browse is None:
        browse = database is None and (_loopback(host) or bool(os.environ.get("THINK_BROWSE_TOKEN")))
    try:
        if database is not None and (reload or data_dir is not None):
            raise click.UsageError("--database serves a cluster: it takes neither --data-dir nor --reload")
        runtime = shared_runtime(data_dir)
        if database is None:
            runtime.claim()  # one process per data directory: this one holds it for its whole life
        exporting = otlp_requested(otel)
        if exporting and not reload:  # with --reload, each worker installs its own (think.serve_reload)
            install_otlp()
        protocols = _protocols(protocols_opt)
        classes = load_agent_classes(targets)
        with console.status("Starting: resolving the model…"):
            model_label = _model_label(classes)
        if reload:
            runtime.release()  # checked free; each reloading worker claims it in turn
        else:
            app = create_app(agents=classes, data_dir=data_dir, ui=ui, mcp=mcp, browse=browse,
                             mcp_allowed_hosts=mcp_allowed_hosts(host, mcp_hosts), protocols=protocols,
                             database=database)
        sock = _listen(host, port)  # before any address is printed: a port in use is an error, not a URL
        if database is not None:
            app.state.runtime.node_url = node_url or _node_url(host, sock.getsockname()[1])
    except Exception as exc:
        if explain(exc) is None:
            raise
        fail(exc, debug=debug)
    port = sock.getsockname()[1]
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host
    lines = [f"[bold]think[/bold] {__version__}  ·  model: [bold]{model_label}[/bold]"]
    lines += [f"  agent [cyan]{cls.kebab_name()}[/cyan]  ws://{shown}:{port}/agents/{cls.kebab_name()}/<name>"
              for cls in classes]
    if "ai-sdk" in protocols:
        lines.append(f"  ai-sdk http://{shown}:{port}/agents/<agent>/<name>/chat  (useChat's DefaultChatTransport)")
    if "ag-ui" in protocols:
        lines.append(f"  ag-ui  http://{shown}:{port}/agents/<agent>/<name>/ag-ui  (AG-UI: RunAgentInput → events)")
    if "a2a" in protocols:
        lines.append(f"  a2a    http://{shown}:{port}/.well-known/agent-card.json  (JSON-RPC at /agents/<agent>/a2a)")
    if mcp:
        lines.append(f"  mcp   http://{shown}:{port}/mcp  (streamable HTTP: a chat_<agent> tool per agent)")
        if host in ("0.0.0.0", "::") and not mcp_hosts:
            lines.append("        answers loopback Host names only: add --mcp-allowed-host <name> for the others")
    if browse:
        guarded = "token required" if os.environ.get("THINK_BROWSE_TOKEN") else "no token: anyone who reaches it"
        lines.append(f"  browse http://{shown}:{port}/_think/agents  (read-only; {guarded})")
    if exporting:
        lines.append(f"  otel  traces and metrics to {otlp_endpoint()} (OTLP/HTTP)")
    if ui:
        lines.append(f"  open [bold underline]http://{shown}:{port}/[/bold underline] to chat")
    if reload:
        lines.append("  reloading on changes to the Python files under "
                     + ", ".join(_watched(targets)))
    _announce(console, lines, json=log_format.lower() == "json")
    if reload:
        _serve_reloading(sock, targets, host=host, port=port, data_dir=data_dir, ui=ui, mcp=mcp,
                         mcp_hosts=mcp_allowed_hosts(host, mcp_hosts), browse=browse, protocols=protocols,
                         log_level=log_level, log_format=log_format, access_log=access_log, otel=otel)
        return
    from think.server.websocket import WebSocketProtocol

    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=None, access_log=access_log,
                            ws=WebSocketProtocol, ws_max_size=33 * 1024 * 1024)
    server = uvicorn.Server(config)
    app.state.request_stop = lambda: setattr(server, "should_exit", True)  # (a cluster node that lost its session)
    try:
        server.run(sockets=[sock])
    finally:
        if exporting:
            shutdown()  # send the spans still batched
    if not server.started:
        sys.exit(3)  # uvicorn's code for a failed start-up (it has logged why)
    if getattr(app.state.runtime, "session_lost", False):
        from think.cluster.runtime import LOST_EXIT_CODE

        sys.exit(LOST_EXIT_CODE)  # so a supervisor restarts it


def _protocols(option: str | None) -> list[str]:
    """`--protocols a,b` checked (an unknown name is a configuration error), or the defaults."""
    from think.ui_protocols import check_protocols, serve_defaults

    if option is None:
        return serve_defaults()
    return check_protocols(name.strip() for name in option.split(",") if name.strip())


def _node_url(host: str, port: int) -> str:
    """How the other processes of a cluster reach this one, by default."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def mcp_allowed_hosts(host: str, extra: tuple[str, ...]) -> list[str] | None:
    """The Host headers `/mcp` answers besides loopback names: `extra`, and the `--host` itself
    when it is a name or address of its own (not loopback, not a wildcard). None: loopback only."""
    hosts = list(extra)
    if host not in ("0.0.0.0", "::") and not _loopback(host):
        shown = f"[{host}]" if ":" in host else host
        hosts += [shown, f"{shown}:*"]
    return hosts or None


def _watched(targets: tuple[str, ...]) -> list[str]:
    from think.serve_reload import watched_dirs

    return watched_dirs(list(targets))


def _serve_reloading(sock: socket.socket, targets: tuple[str, ...], *, host: str, port: int, data_dir: str | None,
                     ui: bool, mcp: bool, mcp_hosts: list[str] | None, browse: bool, protocols: list[str],
                     log_level: str, log_format: str, access_log: bool, otel: bool) -> None:
    """Run uvicorn's change-reload supervisor over `sock`; workers build the app in
    `think.serve_reload.app` from the options passed in the environment."""
    import uvicorn
    from uvicorn.supervisors import ChangeReload

    from think.serve_reload import ENV, ServeOptions
    from think.server.websocket import WebSocketProtocol

    os.environ[ENV] = ServeOptions(list(targets), data_dir, ui, mcp, log_level, log_format, access_log,
                                   browse, otel, mcp_hosts, protocols).to_env()
    config = uvicorn.Config("think.serve_reload:app", factory=True, host=host, port=port, log_config=None,
                            log_level=None, access_log=access_log, ws=WebSocketProtocol, ws_max_size=33 * 1024 * 1024,
                            reload=True,
                            reload_dirs=_watched(targets))
    server = uvicorn.Server(config)
    ChangeReload(config, target=server.run, sockets=[sock]).run()


def _loopback(host: str) -> bool:
    """True for an interface only this machine reaches (`127.x`, `::1`, `localhost`)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, for uvicorn to listen on; a port in use is a `CliError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CliError(f"port {port} on {host} is already in use",
                           "stop the process listening there, or pass --port <another> (--port 0 picks a free one)"
                           ) from None
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", "check --host and --port") from None
    return sock


def _announce(console: Any, lines: list[str], *, json: bool) -> None:
    """The start-up banner: rich text, or (with `--log-format json`) log records like every other line."""
    if not json:
        for line in lines:
            console.print(line)
        return
    from rich.text import Text

    for line in lines:
        logging.getLogger("think.server").info("%s", Text.from_markup(line).plain.strip())


@main.command()
@click.argument("url")
@click.option("--plain/--rich", "plain", default=None,
              help="Plain text output (the default when stdout is not a terminal) or colours.")
def chat(url: str, plain: bool | None) -> None:
    """Chat with a served agent from the terminal.

    URL is the agent instance's address, such as ws://localhost:8000/agents/assistant/alice
    (http:// and https:// work too). The conversation so far is printed, then answers stream as
    they arrive. Ctrl-C stops an answer; Ctrl-C again, Ctrl-D or /quit leaves. /help lists the
    commands (/clear, /regenerate, /history).
    """
    from think.client.terminal import run_chat

    sys.exit(run_chat(url, plain=plain))


_DATA_DIR = click.option("--data-dir", default=None, type=click.Path(file_okay=False),
                         help="The data directory to read [default: $THINK_DATA_DIR or .think].")


@main.command()
@_DATA_DIR
def agents(data_dir: str | None) -> None:
    """List the agents in a data directory and their instances (title, last activity, messages).

    Reads the SQLite files directly and read-only: it works while a server serves them.
    """
    from think.browse import BrowseError, agents_browser
    from think.browse.text import agents_text

    browser = agents_browser(data_dir)
    try:
        found = [(agent, browser.instances(agent.agent)) for agent in browser.agents()]
    except BrowseError as exc:
        fail(CliError(str(exc), "pass --data-dir (or set THINK_DATA_DIR) to a directory `think serve` wrote"),
             debug=False)
    click.echo("\n".join(agents_text(found)))


@main.command()
@click.argument("address")
@_DATA_DIR
@click.option("--branch", default=None, metavar="MESSAGE_ID",
              help="Show the branch through this message instead of the active one.")
def show(address: str, data_dir: str | None, branch: str | None) -> None:
    """Print the transcript of one agent instance: ADDRESS is AGENT/NAME (as `think agents` lists).

    Messages with other branches (an edited or regenerated message) are marked; --branch shows one.
    """
    from think.browse import BrowseError, agents_browser
    from think.browse.text import transcript_text

    agent, _, name = address.partition("/")
    if not agent or not name:
        fail(CliError(f"{address!r} is not an agent address", "write it as AGENT/NAME, e.g. assistant/default"),
             debug=False)
    try:
        transcript = agents_browser(data_dir).transcript(agent, name, branch=branch)
    except BrowseError as exc:
        fail(CliError(str(exc), "`think agents` lists what is there"), debug=False)
    click.echo("\n".join(transcript_text(transcript)))


@main.group()
def db() -> None:
    """The cluster database (PostgreSQL) of `think serve --database`."""


@db.command("migrate")
@click.option("--database", required=True, envvar="THINK_DATABASE_URL", metavar="postgresql://…",
              help="The cluster database (env THINK_DATABASE_URL).")
def db_migrate(database: str) -> None:
    """Create or update the cluster's tables (every process also does it when it starts)."""
    from think.cluster.store import connect, migrate_schema
    from think.errors import StorageError

    try:
        with connect(database) as conn:
            applied = migrate_schema(conn)
    except StorageError as exc:
        fail(CliError(str(exc), "check the URL and that PostgreSQL is running"), debug=False)
    click.echo("\n".join(f"applied {name}" for name in applied) or "the cluster database is up to date")


def _model_label(classes: list[type[Any]]) -> str:
    """The models of the chat agent classes, found without waking any agent (see `model_of`)."""
    from think.agent import Think
    from think.models.of_agent import model_of

    labels = []
    for cls in classes:
        if issubclass(cls, Think):
            try:
                label = model_of(cls).model_id
            except ConfigurationError:
                raise
            except Exception as exc:  # the agent's own get_model() broke
                raise CliError(f"{cls.__name__}.get_model() failed: {_said(exc)}", "fix get_model()") from exc
            if label == "demo":
                label = "demo (offline demo model: set THINK_MODEL for a real one)"
            labels.append(label)
    return ", ".join(dict.fromkeys(labels)) or "none"


if __name__ == "__main__":  # pragma: no cover
    main()
