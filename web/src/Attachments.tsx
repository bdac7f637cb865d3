/**
 * Attaching files to a message: pick them (the paperclip) or drop them on the conversation; they
 * wait as chips above the message until it is sent, as AI SDK file parts with `data:` URLs. A file
 * over the agent's limit (`Think.max_attachment_bytes`, from `_think/info`) is flagged here and not
 * sent; the server checks again and keeps the file in the agent's workspace (`/attachments/…`),
 * after which the message points at it with a `workspace:` URL, read back here over RPC.
 */

import { createContext, useCallback, useContext, useEffect, useState, type DragEvent } from "react";
import type { FileUIPart } from "ai";

export type PendingFile = { id: string; file: File; error: string | null };

function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, "")} MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, "")} KB`;
  return `${bytes} bytes`;
}

let counter = 0;

/** The files waiting to go with the next message. */
export function usePendingFiles(maxBytes: number) {
  const [files, setFiles] = useState<PendingFile[]>([]);
  const add = useCallback(
    (list: Iterable<File>) => {
      const added = Array.from(list, (file) => ({
        id: `f${++counter}`,
        file,
        error:
          maxBytes <= 0
            ? "this agent takes no attachments"
            : file.size > maxBytes
              ? `${size(file.size)}: larger than the ${size(maxBytes)} an attachment may be`
              : null,
      }));
      if (added.length) setFiles((current) => [...current, ...added]);
    },
    [maxBytes],
  );
  const remove = useCallback((id: string) => setFiles((current) => current.filter((f) => f.id !== id)), []);
  const clear = useCallback(() => setFiles([]), []);
  return { files, add, remove, clear, blocked: files.some((f) => f.error !== null) };
}

function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

/** The pending files as the file parts `sendMessage` takes. */
export async function toFileParts(files: PendingFile[]): Promise<FileUIPart[]> {
  return Promise.all(
    files.map(async ({ file }) => ({
      type: "file" as const,
      mediaType: file.type || "application/octet-stream",
      filename: file.name,
      url: await readAsDataUrl(file),
    })),
  );
}

export function AttachmentChips({ files, onRemove }: { files: PendingFile[]; onRemove: (id: string) => void }) {
  if (files.length === 0) return null;
  return (
    <ul className="attachments" aria-label="Attachments">
      {files.map(({ id, file, error }) => (
        <li key={id} className={`attachment${error ? " is-error" : ""}`} title={error ?? `${file.name} · ${size(file.size)}`}>
          <span className="attachment-name">{file.name}</span>
          <span className="attachment-size">{error ?? size(file.size)}</span>
          <button type="button" className="icon-btn attachment-remove" aria-label={`Remove ${file.name}`} onClick={() => onRemove(id)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

export function AttachButton({ onFiles, disabled }: { onFiles: (files: FileList) => void; disabled: boolean }) {
  return (
    <label className={`btn btn-ghost btn-small attach-btn${disabled ? " is-disabled" : ""}`} title="Attach files">
      <svg width="16" height="16" viewBox="0 0 20 20" fill="none" stroke="currentColor" strokeWidth={1.6} aria-hidden="true">
        <path d="M14.5 9.5l-5.3 5.3a3.2 3.2 0 0 1-4.5-4.5l6-6a2.2 2.2 0 0 1 3.1 3.1l-6 6a1.1 1.1 0 0 1-1.6-1.6l5.3-5.3" />
      </svg>
      <span className="visually-hidden">Attach files</span>
      <input
        type="file"
        multiple
        className="visually-hidden"
        disabled={disabled}
        onChange={(event) => {
          if (event.target.files) onFiles(event.target.files);
          event.target.value = ""; // the same file can be picked again
        }}
      />
    </label>
  );
}

/** Drag-and-drop of files onto an element: `dragging` while files hover over it. */
export function useDropZone(onFiles: (files: FileList) => void, enabled: boolean) {
  const [dragging, setDragging] = useState(false);
  const carriesFiles = (event: DragEvent) => Array.from(event.dataTransfer?.types ?? []).includes("Files");
  return {
    dragging,
    handlers: {
      onDragOver: (event: DragEvent) => {
        if (!enabled || !carriesFiles(event)) return;
        event.preventDefault();
        setDragging(true);
      },
      onDragLeave: (event: DragEvent) => {
        if (event.currentTarget === event.target) setDragging(false);
      },
      onDrop: (event: DragEvent) => {
        setDragging(false);
        if (!enabled || !event.dataTransfer?.files.length) return;
        event.preventDefault();
        onFiles(event.dataTransfer.files);
      },
    },
  };
}

/** Reads a workspace file for display: its `data:` URL (images), or null. */
export type WorkspaceReader = (path: string) => Promise<string | null>;
export const WorkspaceFiles = createContext<WorkspaceReader | null>(null);

/** A file part whose bytes are in the agent's workspace (`workspace:/attachments/…`). */
export function WorkspaceAttachment({ path, mediaType, filename }: { path: string; mediaType: string; filename?: string }) {
  const read = useContext(WorkspaceFiles);
  const [src, setSrc] = useState<string | null>(null);
  const image = mediaType.startsWith("image/");
  useEffect(() => {
    if (!image || !read) return;
    let live = true;
    read(path).then(
      (url) => {
        if (live) setSrc(url);
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [image, read, path]);
  if (image && src) return <img className="file-image" src={src} alt={filename ?? "Attached image"} data-path={path} />;
  return (
    <span className="file-chip" data-path={path} title={path}>
      {filename ?? path.split("/").pop()}
    </span>
  );
}
