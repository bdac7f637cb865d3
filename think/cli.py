"""The `think` command: serve agents with the web UI, chat with one from the terminal."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from think._version import __version__


def _load_module(spec: str) -> ModuleType:
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise click.BadParameter(f"no such file: {spec}")
        name = f"_think_target_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise click.BadParameter(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        module_spec.loader.exec_module(module)
        return module
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise click.BadParameter(f"cannot import module {spec!r}: {exc}") from exc


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
        if class_name:
            cls = getattr(module, class_name, None)
            if not (inspect.isclass(cls) and issubclass(cls, Agent)):
                raise click.BadParameter(f"{target}: {class_name!r} is not an agent class in {module_part}")
            classes.append(cls)
            continue
        found = [obj for obj in vars(module).values()
                 if inspect.isclass(obj) and issubclass(obj, Agent) and obj.__module__ == module.__name__]
        if not found:
            raise click.BadParameter(f"{target}: no agent class defined there (name one with {target}:ClassName)")
        classes.extend(found)
    return classes


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="think")
def main() -> None:
    """Durable, streaming chat agents. Serve them, chat with them."""


@main.command()
@click.argument("targets", nargs=-1, required=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--data-dir", default=None, type=click.Path(file_okay=False),
              help="Where agents keep their SQLite files [default: $THINK_DATA_DIR or .think].")
@click.option("--ui/--no-ui", default=True, show_default=True, help="Serve the web UI at /.")
def serve(targets: tuple[str, ...], host: str, port: int, data_dir: str | None, ui: bool) -> None:
    """Serve agents over the chat WebSocket protocol, with the web UI.

    TARGETS are `module:Class`, `path/to/file.py[:Class]` or a module (all agent classes in it).
    """
    import uvicorn
    from rich.console import Console

    from think.errors import DataDirInUse
    from think.runtime.embedded import shared_runtime
    from think.server import create_app

    console = Console(stderr=True)
    try:  # one process per data directory: this one holds it for its whole life
        shared_runtime(data_dir).claim()
    except DataDirInUse as exc:
        raise click.ClickException(str(exc)) from None
    classes = load_agent_classes(targets)
    with console.status("Starting: resolving the model…"):
        model_label = _model_label(classes)
    app = create_app(agents=classes, data_dir=data_dir, ui=ui)
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::") else host
    console.print(f"[bold]think[/bold] {__version__}  ·  model: [bold]{model_label}[/bold]")
    for cls in classes:
        console.print(f"  agent [cyan]{cls.kebab_name()}[/cyan]  ws://{shown}:{port}/agents/{cls.kebab_name()}/<name>")
    if ui:
        console.print(f"  open [bold underline]http://{shown}:{port}/[/bold underline] to chat")
    uvicorn.run(app, host=host, port=port, log_level="warning", ws_max_size=16 * 1024 * 1024)


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


def _model_label(classes: list[type[Any]]) -> str:
    """The models of the chat agent classes, found without waking any agent (see `model_of`)."""
    from think.agent import Think
    from think.models.of_agent import model_of

    labels = []
    for cls in classes:
        if issubclass(cls, Think):
            label = model_of(cls).model_id
            if label == "demo":
                label = "demo (offline demo model: set THINK_MODEL for a real one)"
            labels.append(label)
    return ", ".join(dict.fromkeys(labels)) or "none"


if __name__ == "__main__":  # pragma: no cover
    main()
