"""New agent databases start from the framework's schema image; old ones still migrate."""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
from pathlib import Path

from think import EmbeddedRuntime, Think
from think.storage import Database, migrate, migration
from think.storage.template import create_from_image, schema_image, schema_wal


def schema_of(path: Path) -> dict[str, object]:
    conn = sqlite3.connect(path)
    try:
        return {
            "objects": sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(),
                              key=repr),
            "migrations": [r[0] for r in conn.execute("SELECT name FROM _think_migrations ORDER BY rowid")],
            "user_version": conn.execute("PRAGMA user_version").fetchone(),
            "journal_mode": conn.execute("PRAGMA journal_mode").fetchone(),
            "integrity": conn.execute("PRAGMA integrity_check").fetchone(),
        }
    finally:
        conn.close()


def read(path: Path) -> bytes:
    return path.read_bytes()


def migrated_the_old_way(path: Path, count: int | None = None) -> None:
    db = Database(path)
    migs = Think.all_migrations()
    migrate(db, migs if count is None else migs[:count])
    db.close()


async def test_a_new_agent_starts_from_the_image_with_the_schema_the_migrations_give(tmp_path: Path) -> None:
    schema_image(Think.framework_migrations())  # built once per process (maybe by an earlier test)
    runtime = EmbeddedRuntime(tmp_path / "data", idle_timeout=None)
    asked = time.time()
    agent = await runtime.get(Think, "new")
    # The framework's migrations were applied when the image was built, not one by one now.
    stamps = [row["applied_at"] for row in agent.db.sql("SELECT applied_at FROM _think_migrations")]
    assert len(stamps) == len(Think.framework_migrations())
    assert max(stamps) < asked
    path = Path(agent.db.path)
    await runtime.close()
    reference = tmp_path / "reference.db"
    migrated_the_old_way(reference)
    new, old = schema_of(path), schema_of(reference)
    assert new == old
    assert new["journal_mode"] == ("wal",) and new["integrity"] == ("ok",)


async def test_an_old_schema_database_still_upgrades(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runtime = EmbeddedRuntime(data, idle_timeout=None)
    path = runtime.path_for(Think, "old")
    path.parent.mkdir(parents=True)
    migrated_the_old_way(path, count=3)  # a database from before the later migrations existed
    agent = await runtime.get(Think, "old")
    await runtime.close()
    reference = tmp_path / "reference.db"
    migrated_the_old_way(reference)
    upgraded = schema_of(path)
    assert upgraded["objects"] == schema_of(reference)["objects"]
    assert upgraded["migrations"] == [m.name for m in Think.all_migrations()]
    assert agent.db.closed


@migration("ids.001")
def _fresh_id(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE my_identity (value TEXT NOT NULL)")
    conn.execute("INSERT INTO my_identity VALUES (?)", (secrets.token_hex(8),))


class WithOwnMigration(Think):
    migrations = (_fresh_id,)


async def test_an_agents_own_migrations_still_run_on_each_new_database(tmp_path: Path) -> None:
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    a = await runtime.get(WithOwnMigration, "a")
    b = await runtime.get(WithOwnMigration, "b")
    ids = {x.db.value("SELECT value FROM my_identity") for x in (a, b)}
    assert len(ids) == 2  # not one row copied from an image into both
    assert a.db.value("SELECT count(*) FROM _think_migrations WHERE name = 'ids.001'") == 1
    await runtime.close()


def test_an_existing_file_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"not mine to replace")
    assert not create_from_image(path, schema_image(Think.framework_migrations()))
    assert path.read_bytes() == b"not mine to replace"


def test_a_staging_file_left_by_a_killed_process_is_overwritten_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    (tmp_path / f"x.db.{os.getpid()}.new").write_bytes(b"half written")
    assert create_from_image(path, schema_image(Think.framework_migrations()))
    assert [p.name for p in tmp_path.iterdir()] == ["x.db"]
    assert schema_of(path)["integrity"] == ("ok",)


async def test_a_new_database_comes_with_a_log_its_first_commit_appends_to(tmp_path: Path) -> None:
    # A fresh log gets its header written and synced (the log and its directory) on the first
    # commit; the image's log already holds a frame, so the first turn's commits only append.
    wal = schema_wal(Think.framework_migrations())
    runtime = EmbeddedRuntime(tmp_path, idle_timeout=None)
    agent = await runtime.get(Think, "new")
    agent.kv_set("first", 1)
    agent.kv_set("second", 2)
    written = read(Path(f"{agent.db.path}-wal"))
    assert written[:len(wal)] == wal  # the same log, frames appended after the image's one
    assert len(written) > len(wal)
    assert agent.kv_get("second") == 2
    await runtime.close()
    assert schema_of(Path(agent.db.path))["integrity"] == ("ok",)


def test_the_image_without_its_log_is_the_same_database(tmp_path: Path) -> None:
    # A process killed after the file appeared but before the log was put next to it.
    migrations = Think.framework_migrations()
    alone, logged = tmp_path / "alone.db", tmp_path / "logged.db"
    assert create_from_image(alone, schema_image(migrations))
    assert create_from_image(logged, schema_image(migrations), schema_wal(migrations))
    assert not Path(f"{alone}-wal").exists() and Path(f"{logged}-wal").exists()
    assert schema_of(alone) == schema_of(logged)


def test_a_log_left_by_a_deleted_database_is_replaced(tmp_path: Path) -> None:
    # remove_database() deletes the file before its log: a kill in between leaves the log of a
    # database that is gone, which SQLite would otherwise replay into the new one.
    path = tmp_path / "x.db"
    other = Database(tmp_path / "other.db")
    other.sql("CREATE TABLE elsewhere (a TEXT)")
    other.sql("INSERT INTO elsewhere VALUES ('stale')")
    Path(f"{path}-wal").write_bytes(Path(f"{other.path}-wal").read_bytes())
    other.close()
    migrations = Think.framework_migrations()
    assert create_from_image(path, schema_image(migrations), schema_wal(migrations))
    assert Path(f"{path}-wal").read_bytes() == schema_wal(migrations)
    reference = tmp_path / "reference.db"
    migrated_the_old_way(reference)
    assert schema_of(path)["objects"] == schema_of(reference)["objects"]


def test_a_log_cut_short_by_a_kill_leaves_the_image(tmp_path: Path) -> None:
    migrations = Think.framework_migrations()
    wal = schema_wal(migrations)
    reference = tmp_path / "reference.db"
    migrated_the_old_way(reference)
    for cut in (0, 20, 32, 100, len(wal) - 1):
        path = tmp_path / f"cut-{cut}.db"
        assert create_from_image(path, schema_image(migrations))
        Path(f"{path}-wal").write_bytes(wal[:cut])  # what a kill mid-write leaves
        db = Database(path)
        db.sql("INSERT INTO think_kv (key, value) VALUES ('after', x'01')")  # usable, and writable
        db.close()
        cut_schema = schema_of(path)
        assert cut_schema["objects"] == schema_of(reference)["objects"]
        assert cut_schema["integrity"] == ("ok",)
