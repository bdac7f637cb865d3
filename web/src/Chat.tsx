/**
 * One conversation: the real `useAgent` + `useAgentChat` hooks on `/<prefix>/<agent>/<name>`.
 *
 * `useAgentChat` suspends while it fetches `get-messages`, so this component sits under a
 * <Suspense> keyed by the address: switching conversations mounts a fresh connection.
 */

import { useAgentChat } from "@cloudflare/ai-chat/react";
import { useAgent } from "agents/react";
import type { UIMessage } from "ai";
import {
  useCallback,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type FormEvent,
  type KeyboardEvent,
  type ReactNode,
} from "react";
import { FilesPanel } from "./Files";
import { Extensions } from "./Extensions";
import { type McpState, McpServers } from "./Mcp";
import { AttachButton, AttachmentChips, toFileParts, useDropZone, usePendingFiles, WorkspaceAttachment, WorkspaceFiles } from "./Attachments";
import { BranchPager, CopyButton, EditBox, messageText, useMessageDetails, writtenAt } from "./MessageTools";
import { PendingApprovals } from "./Approvals";
import { sumUsage, usageDetail, usageLabel } from "./usage";
import { Alert, ArrowUp, Close, Folder, Mark, Refresh, StopSquare, Trash } from "./icons";
import {
  FilePart,
  isToolPart,
  pausedExecution,
  Reasoning,
  TextPart,
  ToolCall,
  toolName,
  type CallContext,
  type ToolActions,
  type ToolPart,
  type ToolProgress,
} from "./parts";

type Connection = "connecting" | "open" | "closed";

const FILES_KEY = "think.files-panel.v1";

/** Whether the files panel is open, remembered across conversations and reloads. */
function useFilesPanel(): [boolean, (open: boolean) => void] {
  const [open, setOpen] = useState(() => {
    try {
      return localStorage.getItem(FILES_KEY) === "open";
    } catch {
      return false;
    }
  });
  const set = useCallback((value: boolean) => {
    setOpen(value);
    try {
      localStorage.setItem(FILES_KEY, value ? "open" : "closed");
    } catch {
      // Storage may be disabled; the panel still toggles for this page.
    }
  }, []);
  return [open, set];
}

type Group = { role: UIMessage["role"]; messages: UIMessage[] };

/** Think stores a tool continuation as a second assistant message; show consecutive ones as one reply. */
function groupMessages(messages: UIMessage[]): Group[] {
  const groups: Group[] = [];
  for (const message of messages) {
    const last = groups[groups.length - 1];
    if (last && last.role === "assistant" && message.role === "assistant") last.messages.push(message);
    else groups.push({ role: message.role, messages: [message] });
  }
  return groups;
}

function plainText(message: UIMessage): string {
  return message.parts
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("")
    .trim();
}

export type ChatProps = {
  agentName: string;
  name: string;
  prefix: string;
  onTitle: (title: string | undefined) => void;
  /** The start of the top bar (menu, agent and model); the chat adds its own controls. */
  header: ReactNode;
  banner?: ReactNode;
  emptyHint: string;
  /** Prompts offered on an empty conversation (the agent's `suggestions`). */
  suggestions: string[];
  /** The largest file a message may attach (the agent's `max_attachment_bytes`; 0: none). */
  maxAttachmentBytes: number;
};

export function TopBar({ children }: { children: ReactNode }) {
  return <header className="topbar">{children}</header>;
}

export function Chat({
  agentName,
  name,
  prefix,
  onTitle,
  header,
  banner,
  emptyHint,
  suggestions,
  maxAttachmentBytes,
}: ChatProps) {
  const [connection, setConnection] = useState<Connection>("connecting");
  // Whether the server has answered this socket's resume probe. Until then the transcript it
  // sends on connect may still be on its way, and the stock hook would apply it over a message
  // sent meanwhile (the message would vanish, its answer land above it): sends wait for this.
  const [synced, setSynced] = useState(false);
  const [mcp, setMcp] = useState<McpState | null>(null);
  const agent = useAgent({
    agent: agentName,
    name,
    ...(prefix !== "agents" ? { prefix } : {}),
    onOpen: () => setConnection("open"),
    onMcpUpdate: (state) => setMcp(state as unknown as McpState),
    onClose: () => {
      setConnection("closed");
      setSynced(false);
    },
  });
  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (typeof event.data !== "string" || !event.data.includes('"probeId"')) return;
      if (/"type":"cf_agent_stream_resum(e_none|ing)"/.test(event.data)) setSynced(true);
    };
    agent.addEventListener("message", onMessage);
    return () => agent.removeEventListener("message", onMessage);
  }, [agent]);

  const [filesOpen, setFilesOpen] = useFilesPanel();
  const [turnError, setTurnError] = useState<string | null>(null);
  const [progress, setProgress] = useState<Record<string, ToolProgress>>({});
  const {
    messages,
    sendMessage,
    status,
    error,
    clearError,
    stop,
    regenerate,
    clearHistory,
    addToolApprovalResponse,
    addToolOutput,
    isStreaming,
    isServerStreaming,
    isRecovering,
    connectionError,
  } = useAgentChat({
    agent,
    onData: (part) => {
      // report_progress from a tool: a transient part the hook does not keep; remember the latest per call.
      if (part.type !== "data-agent-progress") return;
      const data = (part as { data?: unknown }).data as (ToolProgress & { toolCallId?: unknown }) | undefined;
      if (!data || typeof data.toolCallId !== "string") return;
      const { toolCallId, ...rest } = data;
      const id = toolCallId as string;
      setProgress((current) => ({ ...current, [id]: { ...current[id], ...rest } }));
    },
    onTurnEnd: (event) => {
      if (event.outcome === "error" && !event.replay) setTurnError(event.error || "The reply failed.");
    },
  });

  // Think-specific: a frame the server could not handle is answered with cf_agent_protocol_error,
  // which the stock hooks ignore. Show it rather than leaving a turn silently stuck.
  const [serverNotice, setServerNotice] = useState<string | null>(null);
  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (typeof event.data !== "string" || !event.data.includes("cf_agent_protocol_error")) return;
      try {
        const frame = JSON.parse(event.data) as { type?: unknown; error?: unknown };
        if (frame.type === "cf_agent_protocol_error") setServerNotice(String(frame.error ?? "Unknown error"));
      } catch {
        // not JSON: not ours to show
      }
    };
    agent.addEventListener("message", onMessage);
    return () => agent.removeEventListener("message", onMessage);
  }, [agent]);

  // The tools the agent runs itself (RPC `server_tools`): a call of one of them is never this
  // page's to run, whatever state it is left in (a server that went down mid-call, say). Until
  // the list arrives no call is offered to the page.
  const [serverTools, setServerTools] = useState<ReadonlySet<string> | null>(null);
  useEffect(() => {
    if (connection !== "open") return;
    let live = true;
    agent.call<string[]>("server_tools", []).then(
      (names) => {
        if (live && Array.isArray(names)) setServerTools(new Set(names));
      },
      () => {
        // An agent without the RPC (not a Think): calls stay the agent's.
      },
    );
    return () => {
      live = false;
    };
  }, [agent, connection]);

  const busy = status === "submitted" || status === "streaming" || isStreaming || isServerStreaming;
  const offline = connection !== "open";
  const callContext = useCallback(
    (part: ToolPart, latest: boolean): CallContext => ({
      busy: busy && latest,
      offline,
      pageRuns: serverTools !== null && !serverTools.has(toolName(part)),
      recovering: isRecovering,
    }),
    [busy, offline, serverTools, isRecovering],
  );
  const groups = useMemo(() => groupMessages(messages), [messages]);
  // Milestones are kept in the reply: the latest per call, for its card (after a reload too).
  const milestones = useMemo(() => {
    const found: Record<string, string> = {};
    for (const message of messages) {
      for (const part of message.parts) {
        if (part.type !== "data-agent-milestone") continue;
        const data = (part as { data?: { toolCallId?: unknown; name?: unknown } }).data;
        if (data && typeof data.toolCallId === "string" && typeof data.name === "string") found[data.toolCallId] = data.name;
      }
    }
    return found;
  }, [messages]);
  const lastGroup = groups[groups.length - 1];

  // --- the conversation tree: timestamps, alternatives ("‹ 2/3 ›"), editing a question ---------
  const details = useMessageDetails(agent, messages, busy, !offline);
  const [editing, setEditing] = useState<string | null>(null);
  const treeCall = useCallback(
    (method: "switch_branch" | "edit_message", args: string[]) => {
      setServerNotice(null);
      agent.call(method, args).then(
        () => setEditing(null),
        (e: unknown) => setServerNotice(e instanceof Error ? e.message : String(e)),
      );
    },
    [agent],
  );
  const switchBranch = useCallback((id: string) => treeCall("switch_branch", [id]), [treeCall]);
  // No new answer is asked for while the last one waits for a person (an approval, a paused run).
  const awaitingApproval =
    lastGroup?.role === "assistant" &&
    lastGroup.messages.some((m) =>
      m.parts.some((p) => isToolPart(p) && (p.state === "approval-requested" || pausedExecution(p) !== null)),
    );

  // The first thing the user said names the conversation in the sidebar.
  const firstUser = messages.find((m) => m.role === "user");
  const title = firstUser ? plainText(firstUser).slice(0, 80) || undefined : undefined;
  useEffect(() => {
    onTitle(title);
  }, [title, onTitle]);

  const actions = useMemo<ToolActions>(
    () => ({
      respond: (part: ToolPart, approved: boolean) => {
        if (part.state === "approval-requested") void addToolApprovalResponse({ id: part.approval.id, approved });
      },
      decline: (part: ToolPart) =>
        addToolOutput({
          toolCallId: part.toolCallId,
          state: "output-error",
          errorText: "This tool runs in the browser, and the think web UI does not provide it.",
        }),
      resolveExecution: async (executionId: string, approved: boolean) => {
        try {
          const result = await agent.call<{ status?: string; error?: string }>(
            approved ? "approve_execution" : "reject_execution",
            [executionId],
          );
          return result && result.status === "error" ? (result.error ?? "The agent refused.") : null;
        } catch (e) {
          return e instanceof Error ? e.message : String(e);
        }
      },
    }),
    [addToolApprovalResponse, addToolOutput, agent],
  );

  // --- scrolling: follow the stream while the reader is at the bottom -----------------------
  const scroller = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const onScroll = () => {
    const el = scroller.current;
    if (el) atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 96;
  };
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [messages, status, turnError, error, serverNotice]);

  // --- sending --------------------------------------------------------------------------------
  const [draft, setDraft] = useState("");
  const input = useRef<HTMLTextAreaElement>(null);
  useEffect(() => input.current?.focus(), []);

  // A message sent before the connection is in sync waits here (still in the composer).
  const [held, setHeld] = useState<string | null>(null);
  const pending = usePendingFiles(maxAttachmentBytes);
  const { files: pendingFiles, blocked: filesBlocked, clear: clearFiles } = pending;
  const send = useCallback(
    (text: string) => {
      const value = text.trim();
      if ((!value && pendingFiles.length === 0) || busy || filesBlocked) return;
      if (!synced) {
        setHeld(value);
        return;
      }
      setTurnError(null);
      setServerNotice(null);
      if (error) clearError();
      atBottom.current = true;
      setHeld(null);
      setDraft("");
      if (pendingFiles.length === 0) {
        void sendMessage({ text: value });
        return;
      }
      clearFiles();
      toFileParts(pendingFiles).then(
        (files) => void sendMessage(value ? { text: value, files } : { files }),
        (e: unknown) => setServerNotice(`Could not read the attachment: ${e instanceof Error ? e.message : String(e)}`),
      );
    },
    [busy, synced, error, clearError, sendMessage, pendingFiles, filesBlocked, clearFiles],
  );
  const readWorkspace = useCallback(
    async (path: string) => {
      const file = await agent.call<{ dataUrl?: unknown }>("read_workspace_file", [path, 4 * 1024 * 1024]);
      return file && typeof file.dataUrl === "string" ? file.dataUrl : null;
    },
    [agent],
  );
  const drop = useDropZone(pending.add, maxAttachmentBytes > 0 && !offline);
  useEffect(() => {
    if (synced && held !== null) send(held);
  }, [synced, held, send]);

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    if (busy) void stop();
    else send(draft);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send(draft);
    } else if (event.key === "Escape" && busy) {
      event.preventDefault();
      void stop();
    }
  };

  useLayoutEffect(() => {
    const el = input.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 220)}px`;
  }, [draft]);

  // --- clearing takes a second click, so a stray one cannot lose a conversation ---------------
  const [confirmClear, setConfirmClear] = useState(false);
  useEffect(() => {
    if (!confirmClear) return;
    const timer = window.setTimeout(() => setConfirmClear(false), 3000);
    return () => window.clearTimeout(timer);
  }, [confirmClear]);
  const onClear = () => {
    if (!confirmClear) return setConfirmClear(true);
    setConfirmClear(false);
    setTurnError(null);
    if (error) clearError();
    clearHistory();
  };

  const onRegenerate = () => {
    if (busy || awaitingApproval || !lastGroup || lastGroup.role !== "assistant") return;
    setTurnError(null);
    if (error) clearError();
    // Regenerate the whole last answer, tool calls included, not only its final message.
    void regenerate({ messageId: lastGroup.messages[0].id });
  };

  const errorText = error?.message || turnError;
  const waiting = status === "submitted" && (!lastGroup || lastGroup.role === "user");
  const conversationUsage = sumUsage(messages);

  return (
    <div className="chat">
      <TopBar>
        {header}
        <span className="spacer" />
        {conversationUsage ? (
          <span
            className="usage usage-conversation"
            title={`This conversation: ${usageDetail(conversationUsage)}`}
            data-input-tokens={conversationUsage.inputTokens}
            data-output-tokens={conversationUsage.outputTokens}
          >
            {usageLabel(conversationUsage)}
          </span>
        ) : null}
        <span className={`conn conn-${connection}`} role="status">
          <span className="conn-dot" aria-hidden="true" />
          <span className="conn-label">
            {connection === "open" ? "Connected" : connection === "connecting" ? "Connecting…" : "Reconnecting…"}
          </span>
        </span>
        <McpServers mcp={mcp} />
        <Extensions agent={agent} open={connection === "open"} busy={busy} />
        <PendingApprovals agent={agent} connected={connection === "open"} />
        <button
          type="button"
          className={`btn btn-ghost btn-small files-toggle${filesOpen ? " is-on" : ""}`}
          aria-label="Files"
          aria-pressed={filesOpen}
          aria-controls="files-panel"
          title={filesOpen ? "Hide the workspace files" : "Show the workspace files"}
          onClick={() => setFilesOpen(!filesOpen)}
        >
          <Folder />
          <span className="wide-only">Files</span>
        </button>
        {messages.length > 0 ? (
          <button
            type="button"
            className={`btn btn-ghost btn-small${confirmClear ? " btn-danger" : ""}`}
            onClick={onClear}
            disabled={busy}
            title="Delete this conversation's messages on the server"
          >
            <Trash />
            {confirmClear ? "Click again to clear" : "Clear"}
          </button>
        ) : null}
      </TopBar>

      <WorkspaceFiles.Provider value={readWorkspace}>
      <div className="chat-body">
        <div className={`chat-main${drop.dragging ? " is-dropping" : ""}`} {...drop.handlers}>
          <div className="scroller" ref={scroller} onScroll={onScroll}>
            <div className="column">
              {messages.length === 0 && !busy ? (
                <div className="empty">
                  <Mark size={40} />
                  <h1>What can I help with?</h1>
                  <p className="empty-hint">{emptyHint}</p>
                  {suggestions.length > 0 ? (
                    <ul className="suggestions" aria-label="Suggested prompts">
                      {suggestions.map((text) => (
                        <li key={text}>
                          <button type="button" className="suggestion" onClick={() => send(text)}>
                            {text}
                          </button>
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </div>
              ) : (
                <div className="messages" role="log" aria-live="polite" aria-relevant="additions" aria-label="Conversation">
                  {groups.map((group, index) => {
                    const isLast = index === groups.length - 1;
                    if (group.role === "user") {
                      return group.messages.map((message) => {
                        const when = writtenAt(details.get(message.id));
                        return (
                          <article key={message.id} className="msg msg-user" aria-label="You" title={when?.full}>
                            {editing === message.id ? (
                              <EditBox
                                initial={messageText(message)}
                                onSend={(text) => treeCall("edit_message", [message.id, text])}
                                onCancel={() => setEditing(null)}
                              />
                            ) : (
                              <div className="bubble">
                                {message.parts.map((part, i) =>
                                  part.type === "text" ? (
                                    <p key={i} className="user-text">
                                      {part.text}
                                    </p>
                                  ) : part.type === "file" ? (
                                    part.url.startsWith("workspace:") ? (
                                      <WorkspaceAttachment
                                        key={i}
                                        path={part.url.slice("workspace:".length)}
                                        mediaType={part.mediaType}
                                        filename={part.filename}
                                      />
                                    ) : (
                                      <FilePart key={i} url={part.url} mediaType={part.mediaType} filename={part.filename} />
                                    )
                                  ) : null,
                                )}
                              </div>
                            )}
                            {editing === message.id ? null : (
                              <div className="msg-user-actions">
                                {when ? <time className="msg-time">{when.short}</time> : null}
                                <CopyButton text={messageText(message)} label="Copy message" />
                                <button
                                  type="button"
                                  className="btn btn-ghost btn-small msg-edit"
                                  disabled={busy || offline}
                                  onClick={() => setEditing(message.id)}
                                >
                                  Edit
                                </button>
                                <BranchPager detail={details.get(message.id)} disabled={busy || offline} onSwitch={switchBranch} />
                              </div>
                            )}
                          </article>
                        );
                      });
                    }
                    if (group.role !== "assistant") return null;
                    const parts = group.messages.flatMap((message) =>
                      message.parts.map((part, i) => ({ part, key: `${message.id}:${i}` })),
                    );
                    const lastTextIndex = parts.map((p) => p.part.type).lastIndexOf("text");
                    const groupUsage = sumUsage(group.messages);
                    const settled = !(isLast && busy);
                    // A text or reasoning part still "streaming" in a settled answer: it was stopped.
                    const stopped =
                      settled && parts.some(({ part }) => (part.type === "text" || part.type === "reasoning") && part.state === "streaming");
                    const when = writtenAt(details.get(group.messages[0].id));
                    return (
                      <article
                        key={group.messages[0].id}
                        className="msg msg-assistant"
                        aria-label="Assistant"
                        title={when?.full}
                        data-message-ids={group.messages.map((message) => message.id).join(" ")}
                      >
                        {parts.map(({ part, key }, i) => {
                          if (part.type === "text") {
                            return (
                              <TextPart
                                key={key}
                                text={part.text}
                                streaming={isLast && busy && i === lastTextIndex && i === parts.length - 1}
                              />
                            );
                          }
                          if (part.type === "reasoning") {
                            return <Reasoning key={key} text={part.text} streaming={part.state === "streaming" && busy} />;
                          }
                          if (isToolPart(part)) {
                            return (
                              <ToolCall
                                key={key}
                                part={part}
                                context={callContext(part, isLast)}
                                canAct={isLast}
                                actions={actions}
                                progress={
                                  progress[part.toolCallId] || milestones[part.toolCallId]
                                    ? { milestone: milestones[part.toolCallId], ...progress[part.toolCallId] }
                                    : undefined
                                }
                              />
                            );
                          }
                          if (part.type === "file") {
                            return <FilePart key={key} url={part.url} mediaType={part.mediaType} filename={part.filename} />;
                          }
                          if (part.type === "source-url") {
                            return (
                              <a key={key} className="source" href={part.url} target="_blank" rel="noopener noreferrer nofollow">
                                {part.title ?? part.url}
                              </a>
                            );
                          }
                          return null;
                        })}
                        {isLast && busy && parts.length === 0 ? <Typing /> : null}
                        {groupUsage && !(isLast && busy) ? (
                          <div
                            className="usage msg-usage"
                            title={usageDetail(groupUsage)}
                            data-input-tokens={groupUsage.inputTokens}
                            data-output-tokens={groupUsage.outputTokens}
                          >
                            {usageLabel(groupUsage)}
                          </div>
                        ) : null}
                        {stopped ? (
                          <p className="msg-stopped" role="note">
                            Stopped
                          </p>
                        ) : null}
                        {settled ? (
                          <div className="msg-actions">
                            {when ? <time className="msg-time">{when.short}</time> : null}
                            <CopyButton text={group.messages.map(messageText).filter(Boolean).join("\n\n")} label="Copy answer" />
                            <BranchPager detail={details.get(group.messages[0].id)} disabled={busy || offline} onSwitch={switchBranch} />
                            {isLast && !errorText && !awaitingApproval ? (
                              <button type="button" className="btn btn-ghost btn-small msg-regenerate" onClick={onRegenerate}>
                                <Refresh />
                                Regenerate
                              </button>
                            ) : null}
                          </div>
                        ) : null}
                      </article>
                    );
                  })}
                  {waiting ? (
                    <article className="msg msg-assistant" aria-label="Assistant">
                      <Typing />
                    </article>
                  ) : null}
                  {connection === "closed" ? (
                    <p className="notice notice-reconnecting" role="status">
                      Connection lost. Reconnecting…
                    </p>
                  ) : null}
                  {isRecovering ? <p className="notice">Recovering an interrupted reply…</p> : null}
                </div>
              )}
              {errorText ? (
                <div className="error-banner" role="alert">
                  <Alert />
                  <div className="error-text">
                    <strong>The reply failed.</strong> <span>{errorText}</span>
                  </div>
                  <button type="button" className="btn btn-secondary btn-small" onClick={onRegenerate} disabled={busy}>
                    Retry
                  </button>
                  <button
                    type="button"
                    className="icon-btn"
                    aria-label="Dismiss error"
                    onClick={() => {
                      setTurnError(null);
                      clearError();
                    }}
                  >
                    <Close />
                  </button>
                </div>
              ) : null}
              {serverNotice ? (
                <div className="error-banner" role="alert">
                  <Alert />
                  <div className="error-text">
                    <strong>The server could not handle that.</strong> <span>{serverNotice}</span>
                  </div>
                  <button
                    type="button"
                    className="icon-btn"
                    aria-label="Dismiss"
                    onClick={() => setServerNotice(null)}
                  >
                    <Close />
                  </button>
                </div>
              ) : null}
              {connectionError ? (
                <div className="error-banner" role="alert">
                  <Alert />
                  <div className="error-text">
                    <strong>Disconnected.</strong> <span>{connectionError.reason || "The server closed the connection."}</span>
                  </div>
                </div>
              ) : null}
            </div>
          </div>

          <div className="composer-wrap">
            {banner}
            <form className="composer" onSubmit={onSubmit} data-held={held !== null ? "" : undefined}>
              <label htmlFor="composer-input" className="visually-hidden">
                Message
              </label>
              <AttachmentChips files={pendingFiles} onRemove={pending.remove} />
              <textarea
                id="composer-input"
                ref={input}
                rows={1}
                value={draft}
                placeholder={`Message ${agentName}…`}
                onChange={(event) => setDraft(event.target.value)}
                onKeyDown={onKeyDown}
                aria-describedby="composer-hint"
              />
              <div className="composer-row">
                {maxAttachmentBytes > 0 ? <AttachButton onFiles={pending.add} disabled={offline} /> : null}
                <span id="composer-hint" className="composer-hint" aria-live="polite">
                  {held !== null ? (
                    "Connecting… the message is sent as soon as the chat is in sync."
                  ) : (
                    <>
                      <kbd>Enter</kbd> to send · <kbd>Shift</kbd>+<kbd>Enter</kbd> for a new line
                    </>
                  )}
                </span>
                {busy ? (
                  <button type="submit" className="send-btn is-stop" aria-label="Stop generating" title="Stop (Esc)">
                    <StopSquare />
                  </button>
                ) : (
                  <button
                    type="submit"
                    className="send-btn"
                    aria-label="Send message"
                    disabled={(!draft.trim() && pendingFiles.length === 0) || filesBlocked}
                  >
                    <ArrowUp />
                  </button>
                )}
              </div>
            </form>
          </div>
        </div>
        {filesOpen ? (
          <FilesPanel agent={agent} connected={connection === "open"} onClose={() => setFilesOpen(false)} />
        ) : null}
      </div>
      </WorkspaceFiles.Provider>
    </div>
  );
}

function Typing() {
  return (
    <div className="typing" role="status" aria-label="The assistant is replying">
      <span />
      <span />
      <span />
    </div>
  );
}
