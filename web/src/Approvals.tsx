/**
 * Paused work waiting for a person: parked actions and paused code executions, from the agent's
 * `pending_approvals` callable. A top-bar chip ("Approvals 2") opens the list; each entry says
 * what would run (summary, action, risk, input) and has Approve / Reject, sent as the
 * `approve_execution` / `reject_execution` callables. The list is read again on connect and
 * whenever the transcript changes on the server (another tab's approval, a new pause), so it is
 * right after a reload and in every open tab.
 */

import { useCallback, useEffect, useRef, useState } from "react";
import type { WorkspaceAgent } from "./Files";

type Descriptor = {
  action?: string;
  summary?: string;
  input?: unknown;
  risk?: string;
  permissions?: string[];
  kind?: string;
};

type Pending = { execution_id: string; source: "action" | "codemode"; descriptor: Descriptor };

type Outcome = { status?: string; error?: string };

/** Frames after which the list may have changed. */
const CHANGES = /"type":"cf_agent_(chat_messages|message_updated)"|"done":true/;

function shown(value: unknown): string {
  if (value === undefined) return "";
  try {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function PendingApprovals({ agent, connected }: { agent: WorkspaceAgent; connected: boolean }) {
  const [items, setItems] = useState<Pending[]>([]);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);

  const refresh = useCallback(async () => {
    try {
      const listed = await agent.call<Pending[]>("pending_approvals", []);
      setItems(Array.isArray(listed) ? listed : []);
    } catch {
      // An older server without the callable, or a dropped socket: keep what we have.
    }
  }, [agent]);

  useEffect(() => {
    if (connected) void refresh();
  }, [connected, refresh]);

  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (typeof event.data !== "string" || !CHANGES.test(event.data)) return;
      if (timer.current) clearTimeout(timer.current);
      timer.current = setTimeout(() => void refresh(), 100);
    };
    agent.addEventListener("message", onMessage);
    return () => {
      agent.removeEventListener("message", onMessage);
      if (timer.current) clearTimeout(timer.current);
    };
  }, [agent, refresh]);

  const resolve = async (item: Pending, approved: boolean) => {
    setBusy(item.execution_id);
    setError(null);
    try {
      const result = await agent.call<Outcome>(approved ? "approve_execution" : "reject_execution", [
        item.execution_id,
      ]);
      if (result && result.status === "error") setError(result.error ?? "The agent refused.");
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(null);
      await refresh();
    }
  };

  if (items.length === 0 && !error) return null;
  return (
    <span className="approvals">
      <button
        type="button"
        className={`btn btn-ghost btn-small approvals-toggle${open ? " is-on" : ""}`}
        aria-label="Pending approvals"
        aria-expanded={open}
        aria-controls="approvals-panel"
        title="Paused work waiting for your approval"
        onClick={() => setOpen(!open)}
      >
        <span className="approvals-dot" aria-hidden="true" />
        Approvals {items.length}
      </button>
      {open ? (
        <div className="approvals-panel" id="approvals-panel" role="region" aria-label="Pending approvals">
          {error ? (
            <p className="approvals-error" role="alert">
              {error}
            </p>
          ) : null}
          {items.length === 0 ? <p className="approvals-empty">Nothing waits for approval.</p> : null}
          <ul>
            {items.map((item) => {
              const d = item.descriptor ?? {};
              return (
                <li key={item.execution_id} className="approval" data-execution-id={item.execution_id}>
                  <div className="approval-head">
                    <strong className="approval-summary">{d.summary || d.action || item.execution_id}</strong>
                    {d.risk ? <span className={`approval-risk approval-risk-${d.risk}`}>{d.risk} risk</span> : null}
                  </div>
                  <div className="approval-meta">
                    {item.source === "codemode" ? "code execution" : "action"} · <code>{d.action}</code>
                  </div>
                  {d.input !== undefined ? <pre className="tool-value">{shown(d.input)}</pre> : null}
                  <div className="approval-buttons">
                    <button
                      type="button"
                      className="btn btn-primary btn-small"
                      disabled={busy !== null}
                      onClick={() => void resolve(item, true)}
                    >
                      Approve
                    </button>
                    <button
                      type="button"
                      className="btn btn-secondary btn-small"
                      disabled={busy !== null}
                      onClick={() => void resolve(item, false)}
                    >
                      Reject
                    </button>
                  </div>
                </li>
              );
            })}
          </ul>
        </div>
      ) : null}
    </span>
  );
}
