"""Shared fixtures: a data directory per test, and the bash sandbox's programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtimes import add_option, database, make_runtime, parametrize, postgres
from tests.system_tools import hidden, missing
from think.sandbox.bwrap import SandboxUnavailable, find_tools

__all__ = ["database", "make_runtime", "postgres"]  # fixtures of tests/runtimes.py


def pytest_addoption(parser: pytest.Parser) -> None:
    add_option(parser)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def bubblewrap() -> None:
    """The bash sandbox's programs (bubblewrap, prlimit, …): skips without them, fails under CI."""
    try:
        if hidden("bwrap"):
            raise SandboxUnavailable("the bash sandbox needs bwrap (Debian packages: bubblewrap)")
        find_tools()
    except SandboxUnavailable as exc:
        missing(str(exc))
