"""`DataDirReader`: the agents, instances and transcripts of a data directory, read-only.

A data directory holds one SQLite file per agent instance at `<data_dir>/<kebab-class>/<file>.db`
(see `think.runtime.embedded`). This reader opens each file it needs with its own read-only
connection (`mode=ro`), runs a few small queries and closes it: nothing is woken, no agent class
is imported, the data directory's ownership lock is not taken, and a process serving the agents
goes on undisturbed. In WAL mode a reader sees the last committed state and never waits for a
writer, so listing works while a turn is running and after the serving process was killed in
the middle of one (its uncommitted frames are ignored).

Summaries read only the root session's registry row, the active path's `seq`/`parent`/`role`
columns (no message bodies) and the body of one message (the first user message, for the title).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from think.runtime.naming import file_name

ROOT_SESSION = ""
TITLE_CHARS = 80
"""A title is the first line of the first user message, cut to this many characters."""
TITLE_SEARCH = 64
"""How many messages from the start of the active branch are searched for the first user message."""
_HASHED = re.compile(r"^.{100}~[0-9a-f]{16}$")
"""A long name's file stem: its first 100 quoted characters and a digest (`naming.file_name`)."""


class BrowseError(LookupError):
    """What was asked for is not in the data directory (its message says what is missing)."""


@dataclass(frozen=True, kw_only=True)
class InstanceSummary:
    agent: str
    """The agent class, kebab-case (the URL segment)."""
    name: str
    """The instance name (for a name too long to keep in a file name: the file stem)."""
    title: str | None
    """The first line of the first user message of the active branch, if any."""
    last_activity: float | None
    """Unix time of the last message written (the file's modification time if it has none)."""
    messages: int
    """Messages on the active branch."""
    addressable: bool = True
    """False for a name too long for its file name: `name` is then the file stem, which reads the
    instance here but is not its address (a client cannot chat with it by that name)."""
    error: str | None = None
    """Why the file could not be read (the other fields are then empty)."""

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "name": self.name, "title": self.title, "last_activity": self.last_activity,
                "messages": self.messages, "addressable": self.addressable, "error": self.error}


@dataclass(frozen=True, kw_only=True)
class AgentSummary:
    agent: str
    instances: int
    last_activity: float | None

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "instances": self.instances, "last_activity": self.last_activity}


@dataclass(frozen=True, kw_only=True)
class TranscriptMessage:
    id: str
    role: str
    created_at: float
    message: dict[str, Any]
    """The stored UIMessage (`id`, `role`, `parts`, `metadata`)."""
    branches: list[str]
    """The ids of this message and its siblings (same parent), oldest first."""

    @property
    def branch(self) -> int:
        """This message's place among `branches`."""
        return self.branches.index(self.id)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "created_at": self.created_at, "message": self.message,
                "branches": self.branches, "branch": self.branch}


@dataclass(frozen=True, kw_only=True)
class Transcript:
    agent: str
    name: str
    messages: list[TranscriptMessage] = field(default_factory=list)
    active: bool = True
    """True when this is the branch the agent continues from (its stored leaf)."""

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "name": self.name, "active": self.active,
                "messages": [m.to_json() for m in self.messages]}


class DataDirReader:
    """Reads a data directory without opening any agent. See the module docstring."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)

    # ---- listing --------------------------------------------------------------------------------

    def agents(self) -> list[AgentSummary]:
        """Every agent class with at least one instance, by name."""
        found = []
        for folder in self._agent_dirs():
            instances = self.instances(folder.name)
            stamps = [i.last_activity for i in instances if i.last_activity is not None]
            found.append(AgentSummary(agent=folder.name, instances=len(instances),
                                      last_activity=max(stamps) if stamps else None))
        return found

    def instances(self, agent: str) -> list[InstanceSummary]:
        """The instances of `agent`, most recently active first (hibernated ones included)."""
        folder = self._agent_dir(agent)
        summaries = [self._summary(agent, path) for path in sorted(folder.glob("*.db"))]
        return sorted(summaries, key=lambda s: (-(s.last_activity or 0.0), s.name))

    def instance(self, agent: str, name: str) -> InstanceSummary:
        return self._summary(agent, self._instance_path(agent, name))

    # ---- transcripts ----------------------------------------------------------------------------

    def transcript(self, agent: str, name: str, *, branch: str | None = None) -> Transcript:
        """The root session's active branch; with `branch` (a message id), the branch through that
        message instead (continued by the branch it leads to, or its newest one)."""
        path = self._instance_path(agent, name)
        with _reading(path) as conn:
            if not _has_messages(conn):
                if branch is not None:
                    raise BrowseError(f"{agent}/{name} has no message {branch!r}")
                return Transcript(agent=agent, name=name)
            leaf = _leaf_seq(conn)
            active = _path_seqs(conn, leaf) if leaf is not None else []
            if branch is None:
                end = leaf
            else:
                start = conn.execute("SELECT seq FROM think_messages WHERE session_id = ? AND id = ?",
                                     (ROOT_SESSION, branch)).fetchone()
                if start is None:
                    raise BrowseError(f"{agent}/{name} has no message {branch!r}")
                end = _descend(conn, int(start[0]), set(active))
            if end is None:
                return Transcript(agent=agent, name=name)
            seqs = active if end == leaf else _path_seqs(conn, end)
            messages = [_message(conn, seq) for seq in seqs]
        return Transcript(agent=agent, name=name, messages=messages, active=end == leaf)

    # ---- files ----------------------------------------------------------------------------------

    def _check_dir(self) -> None:
        if not self.data_dir.is_dir():
            raise BrowseError(f"data directory {self.data_dir} does not exist")

    def _agent_dirs(self) -> list[Path]:
        self._check_dir()
        return sorted(p for p in self.data_dir.iterdir()
                      if p.is_dir() and not p.name.startswith(("_", ".")) and any(p.glob("*.db")))

    def _agent_dir(self, agent: str) -> Path:
        self._check_dir()
        folder = self.data_dir / agent
        if "/" in agent or agent.startswith((".", "_")) or not folder.is_dir() or not any(folder.glob("*.db")):
            known = ", ".join(p.name for p in self._agent_dirs()) or "none"
            raise BrowseError(f"no agent {agent!r} in {self.data_dir} (agents there: {known})")
        return folder

    def _instance_path(self, agent: str, name: str) -> Path:
        folder = self._agent_dir(agent)
        for stem in (file_name(name), name) if name else ():
            path = folder / f"{stem}.db"
            if "/" not in stem and path.is_file():
                return path
        raise BrowseError(f"agent {agent!r} has no instance {name!r} in {self.data_dir}")

    def _summary(self, agent: str, path: Path) -> InstanceSummary:
        stem = path.name.removesuffix(".db")
        name = unquote(stem)
        addressable = not _HASHED.match(stem) and file_name(name) == stem
        if not addressable:
            name = stem  # a long name keeps only its start in the file name: the stem reads it
        try:
            with _reading(path) as conn:
                if not _has_messages(conn):
                    return InstanceSummary(agent=agent, name=name, title=None, last_activity=_mtime(path), messages=0,
                                           addressable=addressable)
                row = conn.execute("SELECT updated_at FROM think_sessions WHERE id = ?", (ROOT_SESSION,)).fetchone()
                leaf = _leaf_seq(conn)
                path_seqs = _path_seqs(conn, leaf) if leaf is not None else []
                title = _title(conn, path_seqs)
        except sqlite3.Error as exc:
            return InstanceSummary(agent=agent, name=name, title=None, last_activity=_mtime(path), messages=0,
                                   addressable=addressable, error=f"cannot read {path.name}: {exc}")
        updated = row[0] if row is not None and row[0] is not None else _mtime(path)
        return InstanceSummary(agent=agent, name=name, title=title, last_activity=updated, messages=len(path_seqs),
                               addressable=addressable)


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to `path` holding one read transaction (one consistent snapshot)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout=2000")
        conn.execute("BEGIN")
        yield conn
    finally:
        conn.close()


def _has_messages(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'think_messages'"
                        ).fetchone() is not None


def _leaf_seq(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT m.seq FROM think_sessions s JOIN think_messages m ON m.session_id = s.id "
                       "AND m.id = s.leaf_id WHERE s.id = ?", (ROOT_SESSION,)).fetchone()
    return None if row is None else int(row[0])


def _path_seqs(conn: sqlite3.Connection, leaf: int) -> list[int]:
    """The seqs of the path from the root to `leaf`, oldest first (no bodies are read)."""
    rows = conn.execute("""
        WITH RECURSIVE up(seq, parent, depth) AS (
            SELECT seq, parent, 0 FROM think_messages WHERE seq = ?
            UNION ALL SELECT m.seq, m.parent, u.depth + 1 FROM up u JOIN think_messages m ON m.seq = u.parent
        ) SELECT seq FROM up ORDER BY depth DESC""", (leaf,)).fetchall()
    return [int(r[0]) for r in rows]


def _descend(conn: sqlite3.Connection, seq: int, active: set[int]) -> int:
    """The leaf reached from `seq` by following the active branch where it passes, else the newest child."""
    while True:
        children = [int(r[0]) for r in conn.execute("SELECT seq FROM think_messages WHERE parent = ? ORDER BY seq",
                                                    (seq,)).fetchall()]
        if not children:
            return seq
        seq = next((c for c in children if c in active), children[-1])


def _title(conn: sqlite3.Connection, seqs: list[int]) -> str | None:
    if not seqs:
        return None
    head = seqs[:TITLE_SEARCH]  # the first user message is near the start of the path
    marks = ",".join("?" * len(head))
    row = conn.execute(f"SELECT seq, body FROM think_messages WHERE seq IN ({marks}) AND role = 'user' "
                       "ORDER BY seq LIMIT 1", head).fetchone()
    if row is None:
        return None
    text = _text_of(_decode(_whole(conn, row[0], row[1])))
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    if not line:
        return None
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"


def _message(conn: sqlite3.Connection, seq: int) -> TranscriptMessage:
    row = conn.execute("SELECT id, role, body, created_at, parent FROM think_messages WHERE seq = ?", (seq,)).fetchone()
    message_id, role, body, created_at, parent = row
    if parent is None:
        siblings = conn.execute("SELECT id FROM think_messages WHERE session_id = ? AND parent IS NULL ORDER BY seq",
                                (ROOT_SESSION,)).fetchall()
    else:
        siblings = conn.execute("SELECT id FROM think_messages WHERE parent = ? ORDER BY seq", (parent,)).fetchall()
    return TranscriptMessage(id=message_id, role=role, created_at=float(created_at),
                             message=_decode(_whole(conn, seq, body)),
                             branches=[s[0] for s in siblings])


def _whole(conn: sqlite3.Connection, seq: int, body: Any) -> Any:
    """A message's body with its continuation slices, if it was split (`think.sessions.rows`)."""
    try:
        rest = conn.execute("SELECT data FROM think_message_chunks WHERE seq = ? ORDER BY idx", (seq,)).fetchall()
    except sqlite3.OperationalError:  # a database from before split messages
        return body
    return bytes(body) + b"".join(bytes(r[0]) for r in rest) if rest else body


def _decode(body: Any) -> dict[str, Any]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {"parts": []}
    return value if isinstance(value, dict) else {"parts": []}


def _text_of(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(p["text"] for p in parts
                     if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))


def _mtime(path: Path) -> float | None:
    stamps = []
    for suffix in ("", "-wal"):
        try:
            stamps.append(Path(f"{path}{suffix}").stat().st_mtime)
        except OSError:
            continue
    return max(stamps) if stamps else None
