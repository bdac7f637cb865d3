"""The `think` command's configuration errors: one line with the fix, exit code 2, no traceback.

`think serve` checks what it was given before it prints any address: the targets import and name
agent classes, each chat agent's model resolves (provider known, id well formed, key present), the
data directory is free and the port can be bound. A failure of any of these is a `CliError` (or a
`ConfigurationError` / `DataDirInUse` from the library), printed as

    think: error: model 'openai:gpt-4.1-mini' needs OPENAI_API_KEY to be set in the environment. Fix: …

and the command exits with 2. `--debug` prints the traceback (with its causes) as well.
Anything else is a bug, and keeps its traceback.
"""

from __future__ import annotations

import sys
import traceback
from typing import NoReturn

from think.errors import ConfigurationError, DataDirInUse

EXIT_CONFIG = 2
"""The exit code of a configuration error (click's code for bad usage)."""
PROVIDERS = ("openai", "anthropic", "gemini", "google", "groq", "openrouter", "workers-ai", "ollama",
             "openai-compatible", "local", "llama-cpp", "pydantic-ai")
"""The providers `think.models.registry` accepts, for the one-line hint."""


class CliError(Exception):
    """A problem with what the command was given, and what to do about it."""

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix

    def line(self) -> str:
        problem = self.problem.rstrip(". ")
        return f"{problem}. Fix: {self.fix}" if self.fix else f"{problem}."


def explain(exc: BaseException) -> CliError | None:
    """`exc` as a one-line configuration error, or None when it is not one (a bug)."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, DataDirInUse):
        return CliError(str(exc))
    if isinstance(exc, ConfigurationError):
        return _configuration(str(exc))
    return None


def _configuration(message: str) -> CliError:
    first = message.split("\n", 1)[0]
    if first.startswith("cannot resolve model id"):
        problem = first.removesuffix(" Accepted forms:").rstrip(".")
        return CliError(problem, "use <provider>:<model> with a provider among " + ", ".join(PROVIDERS)
                        + " (set THINK_MODEL or change get_model(); see docs/concepts/models.md)")
    if " needs " in first and first.endswith("to be set in the environment"):
        names = first.split(" needs ", 1)[1].removesuffix(" to be set in the environment")
        variable = names.split(" or ")[0]
        return CliError(first, f"export {variable}=… before `think serve`, or pick another model with THINK_MODEL")
    return CliError(first)


def fail(exc: BaseException, *, debug: bool) -> NoReturn:
    """Print `exc` (a configuration error, see `explain`) as one line on stderr, with its traceback
    under `--debug`; exit with 2."""
    error = explain(exc) or CliError(f"{type(exc).__name__}: {exc}")
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    underlying = exc is not error or exc.__cause__ is not None
    hint = " (--debug shows the traceback)" if underlying and not debug else ""
    print(f"think: error: {error.line()}{hint}", file=sys.stderr, flush=True)
    sys.exit(EXIT_CONFIG)
