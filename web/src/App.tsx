/** The page: server info, the conversation switcher, and one <Chat> for the open conversation. */

import { Component, Suspense, useCallback, useEffect, useState, type FormEvent, type ReactNode } from "react";
import { Chat, TopBar } from "./Chat";
import {
  cleanName,
  newConversationName,
  readHash,
  useConversations,
  writeHash,
  type Address,
  type Conversation,
} from "./conversations";
import { ChevronDown, Close, Eye, Mark, Menu, Plus } from "./icons";
import { fetchInfo, type ServerInfo } from "./info";
import { relativeTime, useServerConversations, type ServerConversation } from "./browse";
import { TranscriptViewer } from "./Transcript";

export function App() {
  const [info, setInfo] = useState<ServerInfo | null>(null);
  const [infoError, setInfoError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const abort = new AbortController();
    setInfoError(null);
    fetchInfo(abort.signal).then(setInfo, (error: unknown) => {
      if (!abort.signal.aborted) setInfoError(error instanceof Error ? error.message : String(error));
    });
    return () => abort.abort();
  }, [attempt]);

  if (info) return <Shell info={info} />;
  return (
    <div className="splash">
      <Mark size={36} />
      {infoError ? (
        <>
          <h1>Cannot reach the think server</h1>
          <p>{infoError}</p>
          <button type="button" className="btn btn-primary" onClick={() => setAttempt((n) => n + 1)}>
            Try again
          </button>
        </>
      ) : (
        <p className="muted">Connecting…</p>
      )}
    </div>
  );
}

function initialAddress(info: ServerInfo, recent: Conversation[]): Address {
  const hash = readHash();
  const agent = hash.agent && info.agents.includes(hash.agent) ? hash.agent : info.agents[0];
  const name = hash.name ?? recent.find((c) => c.agent === agent)?.name ?? "default";
  return { agent, name };
}

function Shell({ info }: { info: ServerInfo }) {
  const conversations = useConversations();
  const [address, setAddress] = useState<Address>(() => initialAddress(info, conversations.list));
  const [drawer, setDrawer] = useState(false);
  const [showDemoNote, setShowDemoNote] = useState(true);
  const [viewing, setViewing] = useState<(Address & { addressable: boolean }) | null>(null);
  const { remember, setTitle } = conversations;
  const server = useServerConversations(info.browse, info.agents, `${address.agent}/${address.name}/${drawer}`);

  useEffect(() => {
    writeHash(address);
    remember(address.agent, address.name);
    document.title = `${address.name} · think`;
  }, [address, remember]);

  useEffect(() => {
    const onHash = () => {
      const hash = readHash();
      if (hash.agent && hash.name && info.agents.includes(hash.agent)) {
        setAddress((current) =>
          current.agent === hash.agent && current.name === hash.name ? current : { agent: hash.agent!, name: hash.name! },
        );
      }
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, [info.agents]);

  const open = useCallback((next: Address) => {
    setAddress(next);
    setDrawer(false);
  }, []);

  const onTitle = useCallback(
    (title: string | undefined) => {
      if (title) setTitle(address.agent, address.name, title);
    },
    [address, setTitle],
  );

  const demoNote =
    info.demo && showDemoNote ? (
      <div className="demo-note" role="note">
        <span>
          <strong>Offline demo model</strong> — set <code>THINK_MODEL</code> to use a real one.
        </span>
        <button type="button" className="icon-btn" aria-label="Hide this note" onClick={() => setShowDemoNote(false)}>
          <Close />
        </button>
      </div>
    ) : null;

  const key = `${address.agent}/${address.name}`;
  const header = (
    <>
      <button
        type="button"
        className="icon-btn menu-btn"
        aria-label="Conversations"
        aria-expanded={drawer}
        onClick={() => setDrawer((v) => !v)}
      >
        <Menu />
      </button>
      <div className="crumbs">
        {info.agents.length > 1 ? (
          <span className="select-wrap">
            <label htmlFor="agent-select" className="visually-hidden">
              Agent
            </label>
            <select
              id="agent-select"
              value={address.agent}
              onChange={(event) => {
                const agent = event.target.value;
                const name = conversations.list.find((c) => c.agent === agent)?.name ?? "default";
                open({ agent, name });
              }}
            >
              {info.agents.map((agent) => (
                <option key={agent} value={agent}>
                  {agent}
                </option>
              ))}
            </select>
            <ChevronDown />
          </span>
        ) : (
          <span className="agent-name" title="Agent">
            {address.agent}
          </span>
        )}
        <span className="crumb-sep" aria-hidden="true">
          /
        </span>
        <span className="conv-name" title={`/${info.prefix}/${address.agent}/${address.name}`}>
          {address.name}
        </span>
      </div>
      <span
        className={`model-badge${info.demo ? " is-demo" : ""}`}
        title={info.demo ? "Offline demo model — set THINK_MODEL to use a real one" : `Model: ${info.model}`}
      >
        {info.demo ? (
          <>
            <span className="wide-only">Offline demo model</span>
            <span className="narrow-only">Demo model</span>
          </>
        ) : (
          info.model
        )}
      </span>
    </>
  );
  return (
    <div className={`app${drawer ? " drawer-open" : ""}`}>
      <Sidebar
        info={info}
        current={address}
        conversations={conversations.list}
        server={server.list}
        onOpen={open}
        onView={(address, addressable) => setViewing({ ...address, addressable })}
        onForget={conversations.forget}
        onClose={() => setDrawer(false)}
      />
      {viewing ? (
        <TranscriptViewer
          agent={viewing.agent}
          name={viewing.name}
          onClose={() => setViewing(null)}
          onOpen={
            viewing.addressable
              ? () => {
                  setViewing(null);
                  open({ agent: viewing.agent, name: viewing.name });
                }
              : undefined
          }
        />
      ) : null}
      <div className="scrim" onClick={() => setDrawer(false)} aria-hidden="true" />
      <main className="main">
        <ErrorBoundary key={key} header={header}>
          <Suspense
            fallback={
              <>
                <TopBar>{header}</TopBar>
                <div className="loading">Loading conversation…</div>
              </>
            }
          >
            <Chat
              agentName={address.agent}
              name={address.name}
              prefix={info.prefix}
              onTitle={onTitle}
              header={header}
              banner={demoNote}
              emptyHint={
                info.welcome[address.agent] ??
                (info.demo
                  ? `You are talking to “${address.agent}” with the offline demo model. It knows a few tricks.`
                  : `You are talking to “${address.agent}” on ${info.model}.`)
              }
              suggestions={info.suggestions[address.agent] ?? []}
              maxAttachmentBytes={info.maxAttachmentBytes[address.agent] ?? 0}
            />
          </Suspense>
        </ErrorBoundary>
      </main>
    </div>
  );
}

function Sidebar({
  info,
  current,
  conversations,
  server,
  onOpen,
  onView,
  onForget,
  onClose,
}: {
  info: ServerInfo;
  current: Address;
  conversations: Conversation[];
  server: ServerConversation[] | null;
  onOpen: (address: Address) => void;
  onView: (address: Address, addressable: boolean) => void;
  onForget: (agent: string, name: string) => void;
  onClose: () => void;
}) {
  const [draft, setDraft] = useState("");
  const several = info.agents.length > 1;
  const items = conversations.filter((c) => info.agents.includes(c.agent));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const name = cleanName(draft);
    if (!name) return;
    onOpen({ agent: current.agent, name });
    setDraft("");
  };

  return (
    <aside className="sidebar" aria-label="Conversations">
      <div className="sidebar-head">
        <Mark />
        <span className="brand">think</span>
        {info.version ? <span className="version">v{info.version}</span> : null}
        <span className="spacer" />
        <button type="button" className="icon-btn close-btn" aria-label="Close conversations" onClick={onClose}>
          <Close />
        </button>
      </div>
      <button
        type="button"
        className="btn btn-secondary new-chat"
        onClick={() => onOpen({ agent: current.agent, name: newConversationName() })}
      >
        <Plus />
        New conversation
      </button>
      <form className="open-form" onSubmit={submit}>
        <label htmlFor="conversation-name">Open by name</label>
        <div className="open-row">
          <input
            id="conversation-name"
            value={draft}
            onChange={(event) => setDraft(event.target.value)}
            placeholder="e.g. default"
            autoComplete="off"
            spellCheck={false}
          />
          <button type="submit" className="btn btn-secondary btn-small" disabled={!cleanName(draft)}>
            Open
          </button>
        </div>
      </form>
      {server ? (
        <ServerList info={info} current={current} server={server} onOpen={onOpen} onView={onView} />
      ) : (
        <nav className="recent" aria-label="Recent conversations">
          <h2>Recent</h2>
          {items.length === 0 ? <p className="muted small">Nothing yet.</p> : null}
          <ul>
            {items.map((c) => {
              const active = c.agent === current.agent && c.name === current.name;
              return (
                <li key={`${c.agent}/${c.name}`} className={active ? "is-active" : undefined}>
                  <button
                    type="button"
                    className="recent-item"
                    aria-current={active ? "page" : undefined}
                    onClick={() => onOpen({ agent: c.agent, name: c.name })}
                  >
                    <span className="recent-title">{c.title ?? c.name}</span>
                    {several || c.title ? (
                      <span className="recent-meta">
                        {[several ? c.agent : null, c.title ? c.name : null].filter(Boolean).join(" · ")}
                      </span>
                    ) : null}
                  </button>
                  {!active ? (
                    <button
                      type="button"
                      className="icon-btn recent-forget"
                      aria-label={`Forget ${c.name}`}
                      title="Remove from this list (the conversation stays on the server)"
                      onClick={() => onForget(c.agent, c.name)}
                    >
                      <Close />
                    </button>
                  ) : null}
                </li>
              );
            })}
          </ul>
        </nav>
      )}
    </aside>
  );
}

/** The conversations the server stores (the agents browser), newest first; the open one on top
 * when it has no messages yet. */
function ServerList({
  info,
  current,
  server,
  onOpen,
  onView,
}: {
  info: ServerInfo;
  current: Address;
  server: ServerConversation[];
  onOpen: (address: Address) => void;
  onView: (address: Address, addressable: boolean) => void;
}) {
  const several = info.agents.length > 1;
  const items = server.filter((c) => info.agents.includes(c.agent));
  const listed = items.some((c) => c.agent === current.agent && c.name === current.name);
  const all: ServerConversation[] = listed
    ? items
    : [{ ...current, title: null, lastActivity: null, messages: 0, addressable: true }, ...items];
  return (
    <nav className="recent server-list" aria-label="Conversations on the server">
      <h2>On the server</h2>
      <ul>
        {all.map((c) => {
          const active = c.agent === current.agent && c.name === current.name;
          const meta = [
            several ? c.agent : null,
            c.title ? c.name : null,
            `${c.messages} message${c.messages === 1 ? "" : "s"}`,
            relativeTime(c.lastActivity) || null,
          ].filter(Boolean);
          return (
            <li
              key={`${c.agent}/${c.name}`}
              className={active ? "is-active" : undefined}
              data-agent={c.agent}
              data-name={c.name}
              data-messages={c.messages}
            >
              <button
                type="button"
                className="recent-item"
                aria-current={active ? "page" : undefined}
                onClick={() =>
                  c.addressable ? onOpen({ agent: c.agent, name: c.name }) : onView({ agent: c.agent, name: c.name }, false)
                }
              >
                <span className="recent-title">{c.title ?? c.name}</span>
                <span className="recent-meta">{meta.join(" · ")}</span>
              </button>
              {c.messages > 0 ? (
                <button
                  type="button"
                  className="icon-btn recent-forget recent-view"
                  aria-label={`View the transcript of ${c.name}`}
                  title="Read the transcript (read-only, with its branches)"
                  onClick={() => onView({ agent: c.agent, name: c.name }, c.addressable)}
                >
                  <Eye />
                </button>
              ) : null}
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

class ErrorBoundary extends Component<{ children: ReactNode; header: ReactNode }, { error: Error | null }> {
  state = { error: null as Error | null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  render() {
    if (!this.state.error) return this.props.children;
    return (
      <>
        <TopBar>{this.props.header}</TopBar>
        <div className="splash">
          <h1>Something went wrong</h1>
          <p>{this.state.error.message}</p>
          <button type="button" className="btn btn-primary" onClick={() => this.setState({ error: null })}>
            Try again
          </button>
        </div>
      </>
    );
  }
}
