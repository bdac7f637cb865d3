"""SQLite plumbing shared by sessions, streams, state and the workspace."""

from think.storage.database import Database, Row
from think.storage.migrations import Migration, migrate, migration, rebuild_table

__all__ = ["Database", "Migration", "Row", "migrate", "migration", "rebuild_table"]
