"""`think serve --reload`: the app factory the reloading worker process imports.

The supervisor (uvicorn's `ChangeReload`, started by `think serve`) watches the source folders
and starts a fresh worker process after every change; the worker rebuilds the app from the
options `think serve` put in `THINK_SERVE_RELOAD`. Each worker claims the data directory for its
life; the supervisor stops the old worker before it starts the next, so the claim passes on.
Stopping the supervisor (Ctrl-C, SIGTERM) stops the worker with it (uvicorn's signal handling);
on Linux a worker also ends when its supervisor is killed outright (SIGKILL), through the
parent-death signal, so no orphan keeps the port or the data directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from starlette.types import ASGIApp

ENV = "THINK_SERVE_RELOAD"


@dataclass(frozen=True)
class ServeOptions:
    targets: list[str]
    data_dir: str | None
    ui: bool
    mcp: bool
    log_level: str
    log_format: str
    access_log: bool
    browse: bool = False
    otel: bool = False
    mcp_hosts: list[str] | None = None
    protocols: list[str] | None = None

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> ServeOptions:
        raw = os.environ.get(ENV)
        if not raw:
            raise RuntimeError(f"{ENV} is not set: this factory is started by `think serve --reload`")
        return cls(**json.loads(raw))


def watched_dirs(targets: list[str]) -> list[str]:
    """The folders to watch: each file target's folder, and each module target's folder (its
    package's, for a module inside one); the working directory when none can be found."""
    import importlib.util

    dirs: set[str] = set()
    for target in targets:
        head = target.split(":", 1)[0]
        if head.endswith(".py"):
            dirs.add(str(Path(head).resolve().parent))
            continue
        try:
            spec = importlib.util.find_spec(head.split(".")[0])
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
            origin = Path(spec.origin)
            dirs.add(str(origin.parent))  # a package's folder, or the folder a module is in
    return sorted(dirs) or [str(Path.cwd())]


def app() -> ASGIApp:
    """The served app, built anew in each worker process."""
    from think.cli import load_agent_classes
    from think.log_config import configure_logging
    from think.observe.setup import install_otlp, otlp_requested
    from think.runtime.embedded import shared_runtime
    from think.server import create_app

    options = ServeOptions.from_env()
    _end_with_parent()
    configure_logging(options.log_level, "json" if options.log_format.lower() == "json" else "text",
                      access_log=options.access_log)
    shared_runtime(options.data_dir).claim()
    if otlp_requested(options.otel):  # each worker exports its own spans
        install_otlp()
    classes = load_agent_classes(tuple(options.targets))
    return create_app(agents=classes, data_dir=options.data_dir, ui=options.ui, mcp=options.mcp,
                      browse=options.browse, mcp_allowed_hosts=options.mcp_hosts,
                      protocols=options.protocols if options.protocols is not None else ["cf_agent"])


def _end_with_parent() -> None:
    """Ask Linux to send this worker SIGTERM when its supervisor dies (PR_SET_PDEATHSIG)."""
    import ctypes
    import ctypes.util
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # the supervisor died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)
