"""The workspace: a virtual filesystem in the agent's SQLite database, and the file tools over it."""

from think.workspace.blobs import BlobStore, LocalBlobStore, S3BlobStore
from think.workspace.errors import (
    DirectoryNotEmpty,
    FileExists,
    FileNotFound,
    InvalidPath,
    IsADirectory,
    NotADirectory,
    QuotaExceeded,
    WorkspaceError,
)
from think.workspace.operations import (
    DeleteOps,
    EditOps,
    FileInfo,
    FindOps,
    GrepOps,
    ListOps,
    ReadOps,
    WriteOps,
)
from think.workspace.preview import preview_file
from think.workspace.search import SearchMatch, SearchResult
from think.workspace.tools import (
    create_delete_tool,
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_list_tool,
    create_read_tool,
    create_workspace_tools,
    create_write_tool,
)
from think.workspace.workspace import MIGRATIONS, BatchResult, Workspace, WorkspaceChange

__all__ = [
    "MIGRATIONS",
    "BatchResult",
    "BlobStore",
    "DeleteOps",
    "DirectoryNotEmpty",
    "EditOps",
    "FileExists",
    "FileInfo",
    "FileNotFound",
    "FindOps",
    "GrepOps",
    "InvalidPath",
    "IsADirectory",
    "ListOps",
    "LocalBlobStore",
    "NotADirectory",
    "QuotaExceeded",
    "ReadOps",
    "S3BlobStore",
    "SearchMatch",
    "SearchResult",
    "Workspace",
    "WorkspaceChange",
    "WorkspaceError",
    "WriteOps",
    "create_delete_tool",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_list_tool",
    "create_read_tool",
    "create_workspace_tools",
    "create_write_tool",
    "preview_file",
]
