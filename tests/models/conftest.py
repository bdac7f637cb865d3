"""Fixtures for the model adapter tests: one fake LLM server per session, reset for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.fake_llm_server import FakeLLMServer, serve_in_thread


@pytest.fixture(scope="session")
def _fake_llm_session() -> Iterator[FakeLLMServer]:
    with serve_in_thread(FakeLLMServer()) as server:
        yield server


@pytest.fixture
def fake_llm(_fake_llm_session: FakeLLMServer) -> FakeLLMServer:
    """The fake server (`.url`, `.requests`, `.wait_stream_end()`), with nothing recorded yet."""
    _fake_llm_session.reset()
    return _fake_llm_session

