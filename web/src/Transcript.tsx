/** A read-only view of a conversation the server stores, with its branches (the agents browser). */

import { useEffect, useState } from "react";
import { fetchTranscript, type Transcript, type TranscriptEntry } from "./browse";
import { ChevronLeft, Chevron, Close } from "./icons";
import { Markdown } from "./markdown";

function Part({ part }: { part: Record<string, unknown> }) {
  const type = String(part.type ?? "");
  if (type === "text") return <Markdown text={String(part.text ?? "")} />;
  if (type === "reasoning") return <p className="viewer-reasoning">{String(part.text ?? "")}</p>;
  if (type === "dynamic-tool" || type.startsWith("tool-")) {
    const name = type === "dynamic-tool" ? String(part.toolName ?? "tool") : type.slice("tool-".length);
    return (
      <p className="viewer-tool">
        <code>{name}</code> · {String(part.state ?? "")}
      </p>
    );
  }
  if (type === "file") return <p className="viewer-tool">file {String(part.filename ?? part.mediaType ?? "")}</p>;
  return null;
}

function Entry({ entry, onBranch }: { entry: TranscriptEntry; onBranch: (id: string) => void }) {
  const count = entry.branches.length;
  return (
    <li className={`viewer-msg viewer-${entry.role}`} data-id={entry.id}>
      <div className="viewer-head">
        <span className="viewer-role">{entry.role}</span>
        <span className="viewer-time">{entry.createdAt ? new Date(entry.createdAt * 1000).toLocaleString() : ""}</span>
        {count > 1 ? (
          <span className="viewer-branches">
            <button
              type="button"
              className="icon-btn"
              aria-label="Previous branch"
              disabled={entry.branch === 0}
              onClick={() => onBranch(entry.branches[entry.branch - 1])}
            >
              <ChevronLeft />
            </button>
            <span className="viewer-branch-count">
              {entry.branch + 1}/{count}
            </span>
            <button
              type="button"
              className="icon-btn"
              aria-label="Next branch"
              disabled={entry.branch === count - 1}
              onClick={() => onBranch(entry.branches[entry.branch + 1])}
            >
              <Chevron />
            </button>
          </span>
        ) : null}
      </div>
      <div className="viewer-body">
        {entry.parts.map((part, index) => (
          <Part key={index} part={part} />
        ))}
      </div>
    </li>
  );
}

export function TranscriptViewer({
  agent,
  name,
  onClose,
  onOpen,
}: {
  agent: string;
  name: string;
  onClose: () => void;
  /** Absent when the conversation cannot be opened by this name (see `addressable`). */
  onOpen?: () => void;
}) {
  const [branch, setBranch] = useState<string | undefined>(undefined);
  const [transcript, setTranscript] = useState<Transcript | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    fetchTranscript(agent, name, branch)
      .then((found) => live && (setTranscript(found), setError(null)))
      .catch((reason: unknown) => live && setError(reason instanceof Error ? reason.message : String(reason)));
    return () => {
      live = false;
    };
  }, [agent, name, branch]);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  return (
    <div className="viewer-backdrop" onClick={(event) => event.target === event.currentTarget && onClose()}>
      <section className="viewer" role="dialog" aria-modal="true" aria-label={`Transcript of ${agent}/${name}`}>
        <header className="viewer-top">
          <h2>
            {agent}/{name}
          </h2>
          <span className="viewer-note">
            Read-only{transcript && !transcript.active ? " · not the active branch" : ""}
          </span>
          <span className="spacer" />
          {onOpen ? (
            <button type="button" className="btn btn-secondary btn-small" onClick={onOpen}>
              Open in chat
            </button>
          ) : null}
          <button type="button" className="icon-btn" aria-label="Close transcript" onClick={onClose}>
            <Close />
          </button>
        </header>
        {error ? <p className="viewer-error">{error}</p> : null}
        {transcript && transcript.messages.length === 0 ? <p className="muted small">No messages yet.</p> : null}
        <ol className="viewer-messages">
          {transcript?.messages.map((entry) => <Entry key={entry.id} entry={entry} onBranch={setBranch} />)}
        </ol>
      </section>
    </div>
  );
}
