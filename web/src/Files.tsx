/**
 * The workspace files panel: the agent's virtual filesystem, read over RPC and kept live.
 *
 * Lists a directory with the agent's `list_workspace(path)` callable and shows a file with
 * `read_workspace_file(path)` (text, or a note for binary and large files). The server broadcasts
 * `{"type":"think_workspace_change","changes":[{kind, path, entryType}]}` whenever the workspace
 * changes (a tool, bash, the agent's own code); the panel reloads what such a frame touches.
 */

import { useEffect, useReducer, useRef, useState } from "react";
import { ChevronLeft, Chevron, Close, FileIcon, Folder, Refresh } from "./icons";

/** What the panel needs from `useAgent`'s socket. */
export type WorkspaceAgent = {
  call: <T = unknown>(method: string, args?: unknown[]) => Promise<T>;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void;
};

export type FileInfo = {
  path: string;
  name: string;
  type: "file" | "directory";
  mimeType: string;
  size: number;
  createdAt: number;
  updatedAt: number;
};

export type FilePreview = FileInfo & {
  content: string | null;
  reason?: "binary" | "too-large";
  note?: string;
  /** A raster image within the size limit, as `data:image/…;base64,…`. */
  dataUrl?: string;
};

export type WorkspaceChange = { kind: "create" | "update" | "delete"; path: string; entryType: "file" | "directory" };

export function parentOf(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut <= 0 ? "/" : path.slice(0, cut);
}

/** True if `path` is `directory` or below it. */
function isWithin(path: string, directory: string): boolean {
  return directory === "/" || path === directory || path.startsWith(`${directory}/`);
}

export function formatSize(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} KB`;
  return `${(size / (1024 * 1024)).toFixed(1)} MB`;
}

/** The changes of a `think_workspace_change` frame; null for any other message. */
export function workspaceChanges(data: unknown): WorkspaceChange[] | null {
  if (typeof data !== "string" || !data.includes("think_workspace_change")) return null;
  try {
    const frame = JSON.parse(data) as { type?: unknown; changes?: unknown };
    if (frame.type !== "think_workspace_change" || !Array.isArray(frame.changes)) return null;
    return frame.changes.filter(
      (c): c is WorkspaceChange => typeof c === "object" && c !== null && typeof c.path === "string",
    );
  } catch {
    return null;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const bump = (n: number) => n + 1;

export function FilesPanel({
  agent,
  connected,
  onClose,
}: {
  agent: WorkspaceAgent;
  connected: boolean;
  onClose: () => void;
}) {
  const [dir, setDir] = useState("/");
  const [entries, setEntries] = useState<FileInfo[] | null>(null);
  const [listError, setListError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [preview, setPreview] = useState<FilePreview | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [listVersion, reloadList] = useReducer(bump, 0);
  const [previewVersion, reloadPreview] = useReducer(bump, 0);

  // The listing: on open, on navigation, after a change inside it, after a reconnect.
  useEffect(() => {
    if (!connected) return;
    let current = true;
    agent.call<FileInfo[]>("list_workspace", [dir]).then(
      (list) => {
        if (!current) return;
        setEntries(list);
        setListError(null);
      },
      (error: unknown) => {
        if (!current) return;
        const text = errorText(error);
        // The directory was deleted (or replaced by a file) under us: show its parent instead.
        if (dir !== "/" && /^(ENOENT|ENOTDIR)/.test(text)) setDir(parentOf(dir));
        else setListError(text);
      },
    );
    return () => {
      current = false;
    };
  }, [agent, connected, dir, listVersion]);

  useEffect(() => {
    if (!connected || selected === null) return;
    let current = true;
    agent.call<FilePreview>("read_workspace_file", [selected]).then(
      (file) => {
        if (!current) return;
        setPreview(file);
        setPreviewError(null);
      },
      (error: unknown) => {
        if (!current) return;
        setPreview(null);
        setPreviewError(errorText(error));
      },
    );
    return () => {
      current = false;
    };
  }, [agent, connected, selected, previewVersion]);

  // Live changes: reload the listing when a change is in it (or takes its directory away), and
  // the open file when it changed.
  const watched = useRef({ dir, selected });
  watched.current = { dir, selected };
  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      const changes = workspaceChanges(event.data);
      if (!changes || changes.length === 0) return;
      const { dir, selected } = watched.current;
      if (changes.some((c) => parentOf(c.path) === dir || (c.path !== "/" && isWithin(dir, c.path)))) reloadList();
      if (selected !== null && changes.some((c) => isWithin(selected, c.path))) reloadPreview();
    };
    agent.addEventListener("message", onMessage);
    return () => agent.removeEventListener("message", onMessage);
  }, [agent]);

  const open = (path: string) => {
    setSelected(null);
    setPreview(null);
    setPreviewError(null);
    if (path !== dir) {
      setEntries(null);
      setListError(null);
      setDir(path);
    }
  };

  const show = (path: string) => {
    setPreview(null);
    setPreviewError(null);
    setSelected(path);
  };

  const refresh = () => {
    reloadList();
    if (selected !== null) reloadPreview();
  };

  const segments = dir === "/" ? [] : dir.slice(1).split("/");

  return (
    <aside id="files-panel" className="files" aria-label="Workspace files">
      <div className="files-head">
        <span className="files-title">Files</span>
        <span className="spacer" />
        <button type="button" className="icon-btn" aria-label="Refresh files" title="Refresh" onClick={refresh}>
          <Refresh />
        </button>
        <button type="button" className="icon-btn" aria-label="Close files" title="Close" onClick={onClose}>
          <Close />
        </button>
      </div>
      <nav className="files-crumbs" aria-label="Folder">
        <button
          type="button"
          className="files-crumb"
          onClick={() => open("/")}
          aria-current={segments.length === 0 ? "location" : undefined}
        >
          workspace
        </button>
        {segments.map((name, index) => {
          const path = `/${segments.slice(0, index + 1).join("/")}`;
          return (
            <span key={path} className="files-crumb-wrap">
              <span className="crumb-sep" aria-hidden="true">
                /
              </span>
              <button
                type="button"
                className="files-crumb"
                onClick={() => open(path)}
                aria-current={index === segments.length - 1 ? "location" : undefined}
              >
                {name}
              </button>
            </span>
          );
        })}
      </nav>
      {selected !== null ? (
        <FileView
          path={selected}
          preview={preview}
          error={previewError}
          onBack={() => {
            setSelected(null);
            setPreview(null);
            setPreviewError(null);
          }}
        />
      ) : (
        <div className="files-body">
          {listError ? (
            <p className="files-error" role="alert">
              {listError}
            </p>
          ) : entries === null ? (
            <p className="files-note">Loading…</p>
          ) : entries.length === 0 ? (
            <p className="files-note">
              {dir === "/" ? "The workspace is empty. Files the agent writes appear here." : "This folder is empty."}
            </p>
          ) : (
            <ul className="files-list">
              {entries.map((entry) => (
                <li key={entry.path}>
                  <button
                    type="button"
                    className="files-item"
                    data-path={entry.path}
                    data-type={entry.type}
                    title={entry.path}
                    onClick={() => (entry.type === "directory" ? open(entry.path) : show(entry.path))}
                  >
                    <span className={`files-icon files-icon-${entry.type}`}>
                      {entry.type === "directory" ? <Folder /> : <FileIcon />}
                    </span>
                    <span className="files-name">{entry.name}</span>
                    {entry.type === "directory" ? (
                      <span className="files-meta">
                        <Chevron />
                      </span>
                    ) : (
                      <span className="files-meta">{formatSize(entry.size)}</span>
                    )}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </aside>
  );
}

function FileView({
  path,
  preview,
  error,
  onBack,
}: {
  path: string;
  preview: FilePreview | null;
  error: string | null;
  onBack: () => void;
}) {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return (
    <div className="files-view" data-path={path}>
      <div className="files-view-head">
        <button type="button" className="icon-btn" aria-label="Back to the folder" title="Back" onClick={onBack}>
          <ChevronLeft />
        </button>
        <span className="files-view-name" title={path}>
          {name}
        </span>
        {preview ? (
          <span className="files-meta">
            {preview.mimeType} · {formatSize(preview.size)}
          </span>
        ) : null}
      </div>
      {error ? (
        <p className="files-error" role="alert">
          {error}
        </p>
      ) : preview === null ? (
        <p className="files-note">Loading…</p>
      ) : preview.dataUrl ? (
        <div className="files-image">
          <img src={preview.dataUrl} alt={name} />
        </div>
      ) : preview.content === null ? (
        <p className="files-note">{preview.note ?? "This file cannot be shown."}</p>
      ) : (
        <pre className="files-content">
          <code>{preview.content}</code>
        </pre>
      )}
    </div>
  );
}
