/**
 * What a message offers besides its content: when it was written (on hover), copying it, the
 * alternatives the server keeps of it ("‹ 2/3 ›" after a regenerate or an edit), and editing a
 * question (a new branch beside it). The server decides: `message_details`, `switch_branch` and
 * `edit_message` are callables of every Think agent, and a switch or an edit reaches every tab as
 * a new transcript.
 */

import { memo, useEffect, useRef, useState, type KeyboardEvent } from "react";
import type { UIMessage } from "ai";
import { ChevronLeft } from "./icons";

/** The server's `message_details()` entry for one message of the active branch. */
export type MessageDetail = {
  id: string;
  created_at: number | null;
  branch_index?: number;
  branch_count?: number;
  branch_ids?: string[];
};

type Caller = { call: <T>(method: string, args: unknown[]) => Promise<T> };

/**
 * The details of the messages shown, asked again whenever the transcript settles (not while an
 * answer streams: ids and branches change only between turns).
 */
export function useMessageDetails(
  agent: Caller,
  messages: UIMessage[],
  busy: boolean,
  connected: boolean,
): Map<string, MessageDetail> {
  const [details, setDetails] = useState<Map<string, MessageDetail>>(new Map());
  const key = messages.map((m) => m.id).join(" ");
  useEffect(() => {
    if (busy || !connected || !key) return;
    let live = true;
    agent.call<MessageDetail[]>("message_details", []).then(
      (rows) => {
        if (live && Array.isArray(rows)) setDetails(new Map(rows.map((row) => [row.id, row])));
      },
      () => {
        // An agent without the callable (not a Think): no timestamps, no alternatives.
      },
    );
    return () => {
      live = false;
    };
  }, [agent, key, busy, connected]);
  return details;
}

/** "14:03" today, "3 Mar 14:03" otherwise; the full date and time go in the tooltip. */
export function writtenAt(detail: MessageDetail | undefined): { short: string; full: string } | null {
  if (!detail || typeof detail.created_at !== "number") return null;
  const when = new Date(detail.created_at * 1000);
  const today = new Date().toDateString() === when.toDateString();
  const time = when.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  const short = today ? time : `${when.toLocaleDateString(undefined, { day: "numeric", month: "short" })} ${time}`;
  return { short, full: when.toLocaleString() };
}

export function messageText(message: UIMessage): string {
  return message.parts
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("\n\n")
    .trim();
}

export const CopyButton = memo(function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const timer = window.setTimeout(() => setState("idle"), 1500);
    return () => window.clearTimeout(timer);
  }, [state]);
  return (
    <button
      type="button"
      className="btn btn-ghost btn-small msg-copy"
      aria-label={label}
      disabled={!text}
      onClick={() => {
        if (!navigator.clipboard) return setState("failed");
        navigator.clipboard.writeText(text).then(
          () => setState("copied"),
          () => setState("failed"),
        );
      }}
    >
      {state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy"}
    </button>
  );
});

/** "‹ 2/3 ›": which alternative this is; the arrows show the previous or next one. */
export function BranchPager({
  detail,
  disabled,
  onSwitch,
}: {
  detail: MessageDetail | undefined;
  disabled: boolean;
  onSwitch: (messageId: string) => void;
}) {
  if (!detail || !detail.branch_ids || detail.branch_count === undefined || detail.branch_index === undefined) return null;
  const { branch_ids: ids, branch_index: index, branch_count: count } = detail;
  return (
    <span className="branch-pager" role="group" aria-label={`Alternative ${index + 1} of ${count}`}>
      <button
        type="button"
        className="icon-btn branch-prev"
        aria-label="Previous alternative"
        disabled={disabled || index === 0}
        onClick={() => onSwitch(ids[index - 1])}
      >
        <ChevronLeft />
      </button>
      <span className="branch-position">
        {index + 1}/{count}
      </span>
      <button
        type="button"
        className="icon-btn branch-next"
        aria-label="Next alternative"
        disabled={disabled || index === count - 1}
        onClick={() => onSwitch(ids[index + 1])}
      >
        <span className="flip">
          <ChevronLeft />
        </span>
      </button>
    </span>
  );
}

/** Editing a question in place: Enter (or Send) sends the new text as a new branch; Escape cancels. */
export function EditBox({
  initial,
  onSend,
  onCancel,
}: {
  initial: string;
  onSend: (text: string) => void;
  onCancel: () => void;
}) {
  const [text, setText] = useState(initial);
  const box = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    el.focus();
    el.setSelectionRange(el.value.length, el.value.length);
  }, []);
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      if (text.trim()) onSend(text.trim());
    } else if (event.key === "Escape") {
      event.preventDefault();
      onCancel();
    }
  };
  return (
    <div className="edit-box">
      <label className="visually-hidden" htmlFor="edit-input">
        Edit your message
      </label>
      <textarea id="edit-input" ref={box} value={text} rows={3} onChange={(e) => setText(e.target.value)} onKeyDown={onKeyDown} />
      <div className="edit-buttons">
        <button type="button" className="btn btn-secondary btn-small" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" className="btn btn-primary btn-small" disabled={!text.trim()} onClick={() => onSend(text.trim())}>
          Send
        </button>
      </div>
    </div>
  );
}
