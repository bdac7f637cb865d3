// One browser tab, in a worker thread: the unmodified `useAgent` (agents/react) and `useAgentChat`
// (@cloudflare/ai-chat/react, which composes the AI SDK's `useChat` with agents' WebSocket chat
// transport), rendered by React under Node with react-test-renderer.
//
// Each tab is its own worker, so it has its own module state (the hooks keep per-page caches,
// like the initial-messages request cache), exactly like a separate browser tab. Closing a tab
// and opening another one is a page reload.
//
// Node 20 has no WebSocket: the tab provides `ws`'s, wrapped to record every frame, as the
// global `WebSocket` (which partysocket uses). `fetch` is wrapped the same way to record the HTTP
// `get-messages` request. Commands come from drive.mjs as {id, op, args}; answers go back as
// {id, ok, value} or {id, ok: false, error, state}.

import { parentPort, workerData } from "node:worker_threads";
import { performance } from "node:perf_hooks";

import { WebSocket as NodeWebSocket } from "ws";

// Wall-clock milliseconds (0.1 ms resolution), comparable between tabs.
const now = () => Math.round((performance.timeOrigin + performance.now()) * 10) / 10;

// ---- recording: sockets, HTTP, console ------------------------------------------------------------

const sockets = []; // [{url, events: [{t, dir: "open"|"out"|"in"|"close", data}]}]
const http = []; // [{t, url, method, status, body}]
const consoleLines = []; // [{level, text}]
let changed = () => {};

class RecordingWebSocket extends NodeWebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    const record = { url: String(url), events: [] };
    sockets.push(record);
    this._record = record;
    this.addEventListener("open", () => {
      record.events.push({ t: now(), dir: "open", data: null });
      changed();
    });
    this.addEventListener("message", (event) => {
      record.events.push({ t: now(), dir: "in", data: String(event.data) });
      changed();
    });
    this.addEventListener("close", (event) => {
      record.events.push({ t: now(), dir: "close", data: { code: event.code, reason: event.reason } });
      changed();
    });
  }

  send(data) {
    this._record.events.push({ t: now(), dir: "out", data: String(data) });
    return super.send(data);
  }
}
globalThis.WebSocket = RecordingWebSocket;

const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = typeof input === "string" ? input : input.url ?? String(input);
  const entry = { t: now(), url, method: init?.method ?? "GET", status: null, body: null };
  http.push(entry);
  const response = await realFetch(input, init);
  entry.status = response.status;
  entry.body = await response.clone().text();
  changed();
  return response;
};

for (const level of ["log", "info", "warn", "error", "debug"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    const text = args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : safeJson(a))).join(" ");
    consoleLines.push({ level, text });
    original(`[tab ${workerData.label}] ${text}`);
  };
}

function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

// ---- the React tree ---------------------------------------------------------------------------------

// Imported after the globals above exist, as a page's scripts run after the browser's.
const { createElement, Suspense } = await import("react");
const { default: TestRenderer } = await import("react-test-renderer");
const { useAgent, useAgentToolEvents } = await import("agents/react");
const { useAgentChat } = await import("@cloudflare/ai-chat/react");

let chat = null; // the latest useAgentChat() result
let agent = null; // the latest useAgent() result
let toolEvents = null; // the latest useAgentToolEvents() result
const turnEnds = []; // onTurnEnd events
const sends = []; // one entry per sendMessage/regenerate call: how its promise settled
const streamed = []; // {id, text} of the last assistant message at each render while streaming (changes only)
const shown = []; // [[role, id, text], …] of every message at each render (changes only)
let renders = 0;
let agentState = null; // {value} once useAgent's onStateUpdate delivered the agent's state

function Tab({ options }) {
  agent = useAgent({
    agent: options.agent,
    name: options.name,
    host: options.host,
    onStateUpdate: (value) => {
      agentState = { value };
      queueMicrotask(() => changed());
    },
  });
  chat = useAgentChat({ agent, onTurnEnd: (event) => turnEnds.push(event) });
  toolEvents = useAgentToolEvents({ agent });
  renders += 1;
  const now = JSON.stringify(chat.messages.map((m) => [m.role, m.id, textOf(m)]));
  if (shown.at(-1) !== now) shown.push(now);
  const last = chat.messages.at(-1);
  if (chat.status === "streaming" && last?.role === "assistant") {
    const text = textOf(last);
    if (streamed.at(-1)?.text !== text || streamed.at(-1)?.id !== last.id) streamed.push({ id: last.id, text });
  }
  queueMicrotask(() => changed());
  return null;
}

function textOf(message) {
  return message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}

let renderer = null;

function state() {
  return {
    mounted: chat !== null,
    status: chat?.status ?? null,
    error: chat?.error ? chat.error.message : null,
    isStreaming: chat?.isStreaming ?? false,
    isServerStreaming: chat?.isServerStreaming ?? false,
    messages: chat ? structuredClone(chat.messages) : [],
    identity: agent ? { name: agent.name, agent: agent.agent, identified: agent.identified ?? null } : null,
    agentState: structuredClone(agentState),
    turnEnds: structuredClone(turnEnds),
    agentToolRuns: toolEvents ? structuredClone(toolEvents.runsById) : {},
    sends: structuredClone(sends),
    streamed: structuredClone(streamed),
    shown: shown.map((entry) => JSON.parse(entry)),
    renders,
    sockets: structuredClone(sockets),
    http: structuredClone(http),
    console: [...consoleLines],
  };
}

// ---- waiting ----------------------------------------------------------------------------------------

const waiters = new Set();
changed = () => {
  for (const waiter of [...waiters]) waiter();
};

function waitFor(source, timeoutMs) {
  const predicate = new Function("s", `return (${source})(s);`);
  return new Promise((resolve, reject) => {
    let timer = null;
    const check = () => {
      let ok = false;
      try {
        ok = Boolean(predicate(state()));
      } catch (error) {
        ok = false;
      }
      if (ok) {
        waiters.delete(check);
        clearTimeout(timer);
        resolve(state());
      }
    };
    timer = setTimeout(() => {
      waiters.delete(check);
      const error = new Error(`timed out after ${timeoutMs} ms waiting for ${source}`);
      error.state = state();
      reject(error);
    }, timeoutMs);
    waiters.add(check);
    check();
  });
}

// ---- commands ---------------------------------------------------------------------------------------

function track(kind, promise) {
  const entry = { kind, settled: null, error: null };
  sends.push(entry);
  promise.then(
    () => {
      entry.settled = "resolved";
      changed();
    },
    (error) => {
      entry.settled = "rejected";
      entry.error = error?.message ?? String(error);
      changed();
    },
  );
}

const ops = {
  mount(options) {
    renderer = TestRenderer.create(createElement(Suspense, { fallback: null }, createElement(Tab, { options })));
    return null;
  },
  send({ text }) {
    track("send", chat.sendMessage({ text }));
    return null;
  },
  regenerate() {
    track("regenerate", chat.regenerate());
    return null;
  },
  async stop() {
    await chat.stop();
    return null;
  },
  toolOutput({ toolCallId, toolName, output }) {
    chat.addToolOutput({ toolCallId, toolName, output });
    return null;
  },
  approve({ approvalId, approved }) {
    chat.addToolApprovalResponse({ id: approvalId, approved });
    return null;
  },
  clear() {
    chat.clearHistory();
    return null;
  },
  async rpc({ method, args }) {
    return await agent.call(method, args ?? []);
  },
  waitFor({ source, timeoutMs }) {
    return waitFor(source, timeoutMs ?? 10_000);
  },
  state() {
    return state();
  },
  async unmount() {
    const open = sockets.filter((s) => !s.events.some((e) => e.dir === "close")).length;
    renderer?.unmount();
    renderer = null;
    if (open) await waitFor("(s) => s.sockets.every((k) => k.events.some((e) => e.dir === 'close'))", 5_000);
    return state();
  },
};

parentPort.on("message", async ({ id, op, args }) => {
  try {
    const value = await ops[op](args ?? {});
    parentPort.postMessage({ id, ok: true, value });
  } catch (error) {
    parentPort.postMessage({ id, ok: false, error: error?.stack ?? String(error), state: error?.state ?? state() });
  }
});
parentPort.postMessage({ ready: true });
