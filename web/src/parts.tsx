/** How each kind of message part looks: text, reasoning, tool calls (with approvals), files. */

import type { DynamicToolUIPart, ToolUIPart, UIMessage } from "ai";
import { memo, useEffect, useState } from "react";
import { Chevron, Spark, Wrench } from "./icons";
import { Markdown, safeHref } from "./markdown";

export type Part = UIMessage["parts"][number];
export type ToolPart = ToolUIPart | DynamicToolUIPart;

export function isToolPart(part: Part): part is ToolPart {
  return part.type === "dynamic-tool" || part.type.startsWith("tool-");
}

export function toolName(part: ToolPart): string {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

export type ToolActions = {
  /** Answer an `approval-requested` part (sends `cf_agent_tool_approval`). */
  respond: (part: ToolPart, approved: boolean) => void;
  /** Tell the agent this page cannot run a browser-side tool (sends an error result). */
  decline: (part: ToolPart) => void;
  /** Approve or reject a paused `execute` run (RPC `approve_execution` / `reject_execution`);
   * resolves to an error text when the agent refused (already resolved, say). */
  resolveExecution: (executionId: string, approved: boolean) => Promise<string | null>;
};

/** Paused work waiting for approval: a code execution paused at a call (`{status: "paused",
 * execution_id, pending}`) or a parked action (`{status: "paused", execution_id, descriptor}`). */
export type PausedExecution = { executionId: string; tool: string; input: unknown; description: string; action: boolean };

export function pausedExecution(part: ToolPart): PausedExecution | null {
  if (part.state !== "output-available" || part.preliminary) return null;
  const output = part.output as { status?: unknown; execution_id?: unknown; pending?: unknown; descriptor?: unknown } | null;
  if (!output || output.status !== "paused" || typeof output.execution_id !== "string") return null;
  const descriptor = output.descriptor as { action?: unknown; input?: unknown; summary?: unknown } | undefined;
  const pending = (output.pending ??
    (descriptor ? { tool: descriptor.action, input: descriptor.input, description: descriptor.summary } : {})) as {
    tool?: unknown;
    input?: unknown;
    description?: unknown;
  };
  return {
    executionId: output.execution_id,
    tool: typeof pending.tool === "string" ? pending.tool : "a tool",
    input: pending.input,
    description: typeof pending.description === "string" ? pending.description : "",
    action: output.pending === undefined && descriptor !== undefined,
  };
}

type Status = { label: string; tone: "busy" | "ok" | "warn" | "error" | "muted" };

/** Where a call stands for this page: `busy` (a turn streams), `offline` (the socket is down),
 * and whether the page may be asked to run it (`pageRuns`: not one of the server's tools). */
/** What a running tool last said about itself (`report_progress`: a transient part, or a milestone). */
export type ToolProgress = { fraction?: number; message?: string; phase?: string; milestone?: string };

export type CallContext = { busy: boolean; offline: boolean; pageRuns: boolean; recovering: boolean };

function toolStatus(part: ToolPart, { busy, offline, pageRuns, recovering }: CallContext): Status {
  switch (part.state) {
    case "input-streaming":
      return offline ? { label: "reconnecting", tone: "muted" } : { label: "streaming", tone: "busy" };
    case "input-available":
      if (offline) return { label: "reconnecting", tone: "muted" };
      if (busy) return { label: "running", tone: "busy" };
      if (!pageRuns) return recovering ? { label: "recovering", tone: "busy" } : { label: "running", tone: "busy" };
      return { label: "waiting", tone: "warn" };
    case "approval-requested":
      return { label: "needs approval", tone: "warn" };
    case "approval-responded":
      return part.approval.approved
        ? busy
          ? { label: "running", tone: "busy" }
          : { label: "approved", tone: "ok" }
        : { label: "denied", tone: "muted" };
    case "output-available":
      if (pausedExecution(part)) return { label: "needs approval", tone: "warn" };
      return part.preliminary ? { label: "running", tone: "busy" } : { label: "done", tone: "ok" };
    case "output-error":
      return { label: "error", tone: "error" };
    case "output-denied":
      return { label: "denied", tone: "muted" };
    default:
      return { label: String((part as { state?: unknown }).state ?? "unknown"), tone: "muted" };
  }
}

function formatValue(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** One line for a collapsed card: a lone argument's value, or compact JSON. */
function oneLine(value: unknown, limit = 160): string {
  if (value === undefined || value === null) return "";
  let text: string;
  if (typeof value === "string") text = value;
  else if (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 1) {
    const only = Object.values(value as Record<string, unknown>)[0];
    text = typeof only === "string" ? only : JSON.stringify(only);
  } else {
    try {
      text = JSON.stringify(value);
    } catch {
      text = String(value);
    }
  }
  text = (text ?? "").replace(/\s+/g, " ").trim();
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function summaryOf(part: ToolPart): string {
  const input = oneLine(part.input, 80);
  if (part.state === "output-available") {
    const output = oneLine(part.output);
    return input ? `${input} → ${output}` : output;
  }
  if (part.state === "output-error") return input ? `${input} → ${oneLine(part.errorText)}` : oneLine(part.errorText);
  return input;
}

/** Whether the page is the one asked to run this call now: a call of a tool that is not the
 * server's, waiting for its output while the page is connected and no turn streams. */
function asksThePage(part: ToolPart, { busy, offline, pageRuns }: CallContext): boolean {
  return part.state === "input-available" && !busy && !offline && pageRuns;
}

/** Cards that need the reader open themselves; the rest stay one line until clicked. */
function needsAttention(part: ToolPart, context: CallContext): boolean {
  return (
    part.state === "approval-requested" ||
    part.state === "output-error" ||
    asksThePage(part, context) ||
    pausedExecution(part) !== null
  );
}

export const ToolCall = memo(function ToolCall({
  part,
  context,
  canAct,
  actions,
  progress,
}: {
  part: ToolPart;
  context: CallContext;
  /** Whether this part belongs to the latest turn, so buttons may act on it. */
  canAct: boolean;
  actions: ToolActions;
  /** The latest progress the call reported, shown while it runs. */
  progress?: ToolProgress;
}) {
  const name = toolName(part);
  const status = toolStatus(part, context);
  const needsApproval = part.state === "approval-requested";
  const awaitingBrowser = canAct && asksThePage(part, context);
  const [chosen, setChosen] = useState<boolean | null>(null);
  const open = chosen ?? needsAttention(part, context);
  const [answered, setAnswered] = useState(false);
  useEffect(() => setAnswered(false), [part.state]);
  const paused = pausedExecution(part);
  const [refused, setRefused] = useState<string | null>(null);

  const input = part.input;
  const hasInput = input !== undefined && !(typeof input === "object" && input && Object.keys(input).length === 0);
  const summary = summaryOf(part);

  return (
    <section
      className={`tool is-${status.tone}${needsApproval ? " tool-attention" : ""}`}
      aria-label={`Tool call ${name}: ${status.label}`}
      data-tool-name={name}
      data-tool-state={part.state}
      data-tool-call-id={part.toolCallId}
    >
      <button
        type="button"
        className="tool-head"
        aria-expanded={open}
        onClick={() => setChosen(!open)}
      >
        <span className="tool-icon">
          <Wrench />
        </span>
        <span className="tool-name">{name}</span>
        {summary && !open ? (
          <span className="tool-summary" title={summary}>
            {summary}
          </span>
        ) : (
          <span className="spacer" />
        )}
        <span className={`pill pill-${status.tone}`}>
          {status.tone === "busy" ? <span className="pill-spinner" aria-hidden="true" /> : null}
          {status.label}
        </span>
        <span className={`tool-chevron${open ? " is-open" : ""}`}>
          <Chevron />
        </span>
      </button>
      {progress && (part.state === "input-available" || part.state === "input-streaming") ? (
        <ProgressLine progress={progress} />
      ) : null}
      {open ? (
        <div className="tool-body">
          {hasInput || part.state === "input-streaming" ? (
            <div className="tool-field">
              <div className="tool-label">Input</div>
              <pre className="tool-value">
                {part.state === "input-streaming" && !hasInput ? "…" : formatValue(input)}
              </pre>
            </div>
          ) : null}
          {part.state === "output-available" ? (
            <div className="tool-field">
              <div className="tool-label">Output</div>
              <pre className="tool-value tool-output">{formatValue(part.output)}</pre>
            </div>
          ) : null}
          {part.state === "output-error" ? (
            <div className="tool-field">
              <div className="tool-label">Error</div>
              <pre className="tool-value tool-error">{part.errorText}</pre>
            </div>
          ) : null}
          {part.state === "output-denied" || (part.state === "approval-responded" && !part.approval.approved) ? (
            <p className="tool-note">You denied this call{part.approval?.reason ? `: ${part.approval.reason}` : "."}</p>
          ) : null}
        </div>
      ) : null}
      {needsApproval ? (
        <div className="tool-approval" role="group" aria-label={`Approve ${name}?`}>
          <p>
            <strong>{name}</strong> needs your approval to run
            {part.approval.requestReason ? `: ${part.approval.requestReason}` : "."}
          </p>
          <div className="tool-approval-buttons">
            <button
              type="button"
              className="btn btn-secondary"
              disabled={!canAct || answered}
              onClick={() => {
                setAnswered(true);
                actions.respond(part, false);
              }}
            >
              Deny
            </button>
            <button
              type="button"
              className="btn btn-primary"
              disabled={!canAct || answered}
              onClick={() => {
                setAnswered(true);
                actions.respond(part, true);
              }}
            >
              Approve
            </button>
          </div>
        </div>
      ) : null}
      {paused ? (
        <div className="tool-approval" role="group" aria-label={`Approve ${paused.tool}?`}>
          <p>
            {paused.action ? "Waiting for you: " : "The code is paused: "}
            <strong>{paused.tool}</strong> needs your approval to run
            {paused.description ? ` (${paused.description})` : ""}.
          </p>
          {paused.input !== undefined ? <pre className="tool-value">{formatValue(paused.input)}</pre> : null}
          {refused ? <p className="tool-note">{refused}</p> : null}
          <div className="tool-approval-buttons">
            {([false, true] as const).map((approved) => (
              <button
                key={String(approved)}
                type="button"
                className={`btn ${approved ? "btn-primary" : "btn-secondary"}`}
                disabled={context.offline || answered}
                onClick={() => {
                  setAnswered(true);
                  void actions.resolveExecution(paused.executionId, approved).then((error) => {
                    if (error) {
                      setRefused(error);
                      setAnswered(false);
                    }
                  });
                }}
              >
                {approved ? "Approve" : "Deny"}
              </button>
            ))}
          </div>
        </div>
      ) : null}
      {awaitingBrowser ? (
        <div className="tool-approval">
          <p>The agent asked this page to run <strong>{name}</strong>, which it does not provide.</p>
          <div className="tool-approval-buttons">
            <button
              type="button"
              className="btn btn-secondary"
              disabled={answered}
              onClick={() => {
                setAnswered(true);
                actions.decline(part);
              }}
            >
              Tell the agent it is unavailable
            </button>
          </div>
        </div>
      ) : null}
    </section>
  );
});

export const Reasoning = memo(function Reasoning({ text, streaming }: { text: string; streaming: boolean }) {
  const [open, setOpen] = useState(false);
  if (!text.trim() && !streaming) return null;
  return (
    <div className={`reasoning${open ? " is-open" : ""}`}>
      <button
        type="button"
        className={`reasoning-head${streaming ? " is-live" : ""}`}
        aria-expanded={open} onClick={() => setOpen((v) => !v)}>
        <Spark />
        <span>{streaming ? "Thinking…" : "Reasoning"}</span>
        <span className={`tool-chevron${open ? " is-open" : ""}`}>
          <Chevron />
        </span>
      </button>
      {open ? <div className="reasoning-body">{text}</div> : null}
    </div>
  );
});

export function FilePart({ url, mediaType, filename }: { url: string; mediaType: string; filename?: string }) {
  const href = url.startsWith("data:") ? url : safeHref(url);
  if (href && mediaType.startsWith("image/")) {
    return <img className="file-image" src={href} alt={filename ?? "Attached image"} />;
  }
  return (
    <span className="file-chip">
      {href && !href.startsWith("data:") ? (
        <a href={href} target="_blank" rel="noopener noreferrer nofollow">
          {filename ?? href}
        </a>
      ) : (
        (filename ?? mediaType)
      )}
    </span>
  );
}

export function TextPart({ text, streaming }: { text: string; streaming: boolean }) {
  return (
    <div className={`text-part${streaming ? " is-streaming" : ""}`}>
      <Markdown text={text} />
    </div>
  );
}

function ProgressLine({ progress }: { progress: ToolProgress }) {
  const fraction = typeof progress.fraction === "number" ? Math.min(1, Math.max(0, progress.fraction)) : null;
  const text = progress.message ?? progress.milestone ?? progress.phase ?? "";
  return (
    <div className="tool-progress">
      {fraction !== null ? (
        <div
          className="tool-progress-bar"
          role="progressbar"
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={Math.round(fraction * 100)}
          aria-label="Progress"
        >
          <span style={{ width: `${fraction * 100}%` }} />
        </div>
      ) : null}
      {text || fraction !== null ? (
        <span className="tool-progress-text">
          {fraction !== null ? `${Math.round(fraction * 100)}%` : ""}
          {fraction !== null && text ? " · " : ""}
          {text}
        </span>
      ) : null}
    </div>
  );
}
