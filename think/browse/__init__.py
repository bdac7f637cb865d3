"""The agents browser: what a data directory holds (agents, instances, transcripts), read-only.

    browser = agents_browser("data")
    for agent in browser.agents(): ...
    browser.transcript("assistant", "alice")

It trusts nothing but the files: it reads each agent's SQLite file through a read-only
connection and never opens an agent, so it works beside a server that serves the directory, or
after one was killed. Who may read over HTTP is decided by `think.browse.routes` (a token or the
app's `on_browse` hook); the CLI (`think agents`, `think show`) reads the files directly.
"""

from __future__ import annotations

from pathlib import Path

from think.browse.reader import (
    AgentSummary,
    BrowseError,
    DataDirReader,
    InstanceSummary,
    Transcript,
    TranscriptMessage,
)

__all__ = ["AgentSummary", "BrowseError", "DataDirReader", "InstanceSummary", "Transcript", "TranscriptMessage",
           "agents_browser"]


def agents_browser(data_dir: str | Path | None = None) -> DataDirReader:
    """A reader of `data_dir` (default `THINK_DATA_DIR` or `.think`)."""
    if data_dir is None:
        from think.runtime.embedded import default_data_dir

        data_dir = default_data_dir()
    return DataDirReader(data_dir)
