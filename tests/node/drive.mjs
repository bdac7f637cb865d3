// Runs the npm-client scenarios against a live server and prints one JSON result on stdout.
//
//   node drive.mjs '{"host":"127.0.0.1:8000","agent":"NodeChat","run":"<unique suffix>","only":[...]}'
//
// Every scenario opens one or more tabs (tab.mjs: a worker rendering the real `useAgent` +
// `useAgentChat`), drives them the way a person would (send, stop, clear, regenerate, reload),
// and returns what each tab ended with: messages, status, error, onTurnEnd events, and every
// WebSocket frame and HTTP request it exchanged. The pytest side asserts on all of it. Scenarios
// run concurrently, each in its own agent instance (room), to keep the batch fast.

import { Worker } from "node:worker_threads";

import { WebSocket as RawWebSocket } from "ws";

const plan = JSON.parse(process.argv[2] ?? "{}");
process.env.NODE_ENV ??= "production"; // the tabs' React build; workers copy this environment

const WAIT_MS = plan.waitMs ?? 10_000;

class Tab {
  constructor(label, room, host = plan.host) {
    this.label = label;
    this.room = room;
    this.host = host;
    this.nextId = 0;
    this.pending = new Map();
    this.worker = new Worker(new URL("./tab.mjs", import.meta.url), { workerData: { label } });
    this.ready = new Promise((resolve, reject) => {
      this.worker.once("error", reject);
      this.worker.on("message", (message) => {
        if (message.ready) {
          resolve();
          return;
        }
        const waiter = this.pending.get(message.id);
        if (!waiter) return;
        this.pending.delete(message.id);
        if (message.ok) waiter.resolve(message.value);
        else {
          const error = new Error(`tab ${label}: ${message.error}`);
          error.state = message.state;
          waiter.reject(error);
        }
      });
    });
    this.worker.on("error", (error) => {
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    });
  }

  async request(op, args) {
    await this.ready;
    const id = this.nextId++;
    return await new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, op, args });
    });
  }

  mount() {
    return this.request("mount", { host: this.host, agent: plan.agent, name: this.room });
  }

  waitFor(source, timeoutMs = WAIT_MS) {
    return this.request("waitFor", { source: String(source), timeoutMs });
  }

  /** Mounted, initial messages loaded, socket open and the resume probe answered. */
  waitReady() {
    return this.waitFor(
      `(s) => s.status === "ready" && s.sockets.length > 0 && s.sockets.at(-1).events.some((e) => e.dir === "in" &&
        /"type":"cf_agent_stream_resume_(none|resuming)"/.test(e.data))`,
    );
  }

  /** Wait until the tab's first `count` requests have settled, each got its done frame, and the chat is idle. */
  waitIdle(count) {
    return this.waitFor(
      `(s) => {
        if (s.sends.length < ${count} || !s.sends.slice(0, ${count}).every((x) => x.settled)) return false;
        if (s.status === "submitted" || s.status === "streaming" || s.isServerStreaming) return false;
        const frames = s.sockets.flatMap((k) => k.events);
        const sent = frames.filter((e) => e.dir === "out").map((e) => JSON.parse(e.data))
          .filter((f) => f.type === "cf_agent_use_chat_request").map((f) => f.id);
        const done = new Set(frames.filter((e) => e.dir === "in").map((e) => JSON.parse(e.data))
          .filter((f) => f.type === "cf_agent_use_chat_response" && f.done).map((f) => f.id));
        return sent.length >= ${count} && sent.every((id) => done.has(id));
      }`,
    );
  }

  /** Wait until `count` server continuations (tool results, approvals) have ended and the chat is
   *  idle. Sending before that races the continuation's closing transcript, which the stock hook
   *  applies over a message sent meanwhile. */
  waitContinued(count) {
    return this.waitFor(
      `(s) => {
        if (s.status !== "ready" || s.isServerStreaming) return false;
        const done = s.sockets.flatMap((k) => k.events).filter((e) => e.dir === "in").map((e) => JSON.parse(e.data))
          .filter((f) => f.type === "cf_agent_use_chat_response" && f.continuation && f.done);
        return done.length >= ${count};
      }`,
    );
  }

  send(text) {
    return this.request("send", { text });
  }

  regenerate() {
    return this.request("regenerate");
  }

  stop() {
    return this.request("stop");
  }

  clear() {
    return this.request("clear");
  }

  toolOutput(toolCallId, toolName, output) {
    return this.request("toolOutput", { toolCallId, toolName, output });
  }

  approve(approvalId, approved) {
    return this.request("approve", { approvalId, approved });
  }

  rpc(method, ...args) {
    return this.request("rpc", { method, args });
  }

  state() {
    return this.request("state");
  }

  /** Unmount (the socket closes), stop the worker, return what the tab saw. */
  async close() {
    const final = await this.request("unmount");
    await this.worker.terminate();
    return final;
  }

  async kill() {
    await this.worker.terminate();
  }
}

const lastText = (s) => `(s) => { const m = s.messages.at(-1); return m && m.role === "assistant" &&
  m.parts.filter((p) => p.type === "text").map((p) => p.text).join("") === ${JSON.stringify(s)}; }`;
const messageCount = (n) => `(s) => s.messages.length === ${n}`;
const toolPart = (state, name) => state.messages.flatMap((m) => m.parts).findLast((p) => p.type === `tool-${name}`);
const toolState = (name, wanted) => `(s) => s.messages.flatMap((m) => m.parts).findLast((p) => p.type ===
  ${JSON.stringify(`tool-${name}`)})?.state === ${JSON.stringify(wanted)}`;

// ---- scenarios --------------------------------------------------------------------------------------
// Each gets `open(label)` (a mounted tab in the scenario's own room) and returns the tabs' final states.

const scenarios = {
  /** One tab: a streamed answer with reasoning, then a second turn (the transcript grows). */
  async send_stream({ open }) {
    const a = await open("A");
    const ready = await a.state();
    await a.send("hello streaming world");
    await a.waitIdle(1);
    await a.send("again");
    await a.waitIdle(2);
    return { A: await a.close(), ready };
  },

  /** Two turns, then a reload (a new tab): history over HTTP get-messages and over the socket. */
  async reload({ open }) {
    const a = await open("A");
    await a.send("one");
    await a.waitIdle(1);
    await a.send("two");
    await a.waitIdle(2);
    const before = await a.close();
    const b = await open("reloaded");
    const reloaded = await b.state();
    await b.send("three");
    await b.waitIdle(1);
    return { A: before, reloaded_at_mount: reloaded, reloaded: await b.close() };
  },

  /** Stop a streaming answer: the partial is kept, the conversation goes on. */
  async cancel({ open }) {
    const a = await open("A");
    await a.send("slow please");
    await a.waitFor(lastText("w01 w02 w03 "));
    await a.stop();
    await a.waitIdle(1);
    await a.waitFor(`(s) => s.sockets[0].events.some((e) => e.dir === "in" && e.data.includes('"outcome":"aborted"'))`);
    const afterStop = await a.state();
    await a.send("after cancel");
    await a.waitIdle(2);
    return { A: await a.close(), after_stop: afterStop };
  },

  /** Clear in one tab: both tabs and the server are empty; the conversation restarts. */
  async clear({ open }) {
    const a = await open("A");
    const b = await open("B");
    await a.send("to be cleared");
    await a.waitIdle(1);
    await b.waitFor(messageCount(2));
    await a.clear();
    await a.waitFor(messageCount(0));
    await b.waitFor(messageCount(0));
    await b.send("after clear");
    await b.waitIdle(1);
    await a.waitFor(messageCount(2));
    const c = await open("C"); // a fresh tab loads the post-clear history
    return { A: await a.close(), B: await b.close(), C: await c.close() };
  },

  /** Two tabs: B watches A's answer stream live, opens the gate by RPC, both end identical. */
  async two_tabs({ open }) {
    const a = await open("A");
    const b = await open("B");
    await a.send("gated two tabs");
    await a.waitFor(lastText("w01 w02 w03 "));
    const bLive = await b.waitFor(`(s) => s.isServerStreaming && (${lastText("w01 w02 w03 ")})(s)`);
    const gate = await b.rpc("open_gate");
    await a.waitIdle(1);
    await b.waitFor(`(s) => !s.isServerStreaming && (${lastText("w01 w02 w03 w04 w05")})(s)`);
    return { A: await a.close(), B: await b.close(), B_live: bLive, gate };
  },

  /** A server tool call: input streamed, output from the server, then the final answer. */
  async server_tool({ open }) {
    const a = await open("A");
    await a.send("add 2 3");
    await a.waitIdle(1);
    return { A: await a.close() };
  },

  /** Tools that wait, answered through the hook's own API: a client tool's output continues the
   *  turn; a result the app sends for a server tool waiting for approval is refused (the tab gets
   *  the server's copy back); the approval then runs the tool; the conversation goes on. */
  async tool_answers({ open }) {
    const a = await open("A");
    await a.send("where am I");
    await a.waitIdle(1);
    await a.waitFor(toolState("get_city", "input-available"));
    const location = toolPart(await a.state(), "get_city");
    await a.toolOutput(location.toolCallId, "get_city", { city: "Lisbon" });
    await a.waitFor(lastText("You are in Lisbon."));
    await a.waitContinued(1);
    await a.send("delete notes.txt");
    await a.waitIdle(2);
    await a.waitFor(toolState("danger", "approval-requested"));
    const asked = toolPart(await a.state(), "danger");
    await a.toolOutput(asked.toolCallId, "danger", { deleted: "PWNED" });
    await a.waitFor(`(s) => s.sockets.at(-1).events.some((e) => e.dir === "in" &&
      e.data.includes('"cf_agent_protocol_error"'))`);
    const refused = await a.waitFor(`(s) => s.status === "ready" && (${toolState("danger", "approval-requested")})(s)`);
    await a.approve(asked.approval.id, true);
    await a.waitFor(lastText("Deleted notes.txt."));
    await a.waitContinued(2);
    await a.send("add 2 3");
    await a.waitIdle(3);
    return { A: await a.close(), refused, calls: { location: location.toolCallId, danger: asked.toolCallId } };
  },

  /** The model fails mid-answer: the error reaches useChat, the partial is kept, the next turn works. */
  async model_error({ open }) {
    const a = await open("A");
    await a.send("boom now");
    await a.waitIdle(1);
    const failed = await a.state();
    await a.send("after error");
    await a.waitIdle(2);
    return { A: await a.close(), after_error: failed };
  },

  /** An agent tool: A watches the child's run live (useAgentToolEvents); a tab opened after the
   *  run gets it replayed on connect. */
  async agent_tool({ open }) {
    const a = await open("A");
    await a.send("delegate tidal charts");
    await a.waitIdle(1);
    await a.waitFor(`(s) => Object.values(s.agentToolRuns).some((run) => run.status === "completed")`);
    const live = await a.close();
    const b = await open("reloaded");
    await b.waitFor(`(s) => Object.values(s.agentToolRuns).some((run) => run.status === "completed")`);
    return { A: live, reloaded: await b.close() };
  },

  /** Regenerate replaces the last answer; a reload shows only the new one. */
  async regenerate({ open }) {
    const a = await open("A");
    await a.send("regen me");
    await a.waitIdle(1);
    const first = await a.state();
    await a.regenerate();
    await a.waitIdle(2);
    const final = await a.close();
    const b = await open("reloaded");
    return { A: final, first, reloaded: await b.close() };
  },
};

// ---- scenarios run only when asked for by name (`only`) --------------------------------------------

/** `depth` levels of objects and arrays around a string, as JSON text (as tests/server/deep_agents.py). */
const nestedText = (depth) => {
  let open = "";
  let close = "";
  for (let level = 1; level <= depth; level++) {
    open += level % 2 ? '{"k":' : "[";
    close = (level % 2 ? "}" : "]") + close;
  }
  return `${open}"leaf"${close}`;
};

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A bare socket to the room, for frames no page would send; frames in are kept in `received`. */
async function rawSocket(room) {
  const socket = new RawWebSocket(`ws://${plan.host}/agents/${kebab(plan.agent)}/${room}?_pk=raw-${room}`);
  const received = [];
  const waiters = new Set();
  socket.on("message", (data) => {
    received.push(JSON.parse(String(data)));
    for (const waiter of [...waiters]) waiter();
  });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  const next = (predicate, timeoutMs = WAIT_MS) => new Promise((resolve, reject) => {
    const start = received.length;
    const check = () => {
      const found = received.slice(start).find(predicate);
      if (found) {
        waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
      }
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`raw socket: timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    waiters.add(check);
  });
  let probes = 0;
  return {
    /** Send `text`; resolve with the frame `answer` picks, or (by default) with the error frames
     *  that arrived before the server answered a resume probe sent after it (frames are handled in order). */
    async send(text, answer) {
      const probeId = `probe-${probes++}`;
      const start = received.length;
      const reply = answer ? next(answer) : next((f) => f.probeId === probeId);
      socket.send(text);
      if (!answer) socket.send(JSON.stringify({ type: "cf_agent_stream_resume_request", probeId }));
      const frame = await reply;
      const errors = received.slice(start).filter((f) => f.type === "cf_agent_protocol_error" || f.type === "cf_agent_state_error")
        .map((f) => f.error);
      return answer ? frame : errors;
    },
    close() {
      socket.close();
    },
  };
}

const kebab = (name) => name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();

const chatRequest = (id, message, extra = {}) => JSON.stringify({
  type: "cf_agent_use_chat_request",
  id,
  init: { method: "POST", body: `{"messages":[${message}],"trigger":"submit-message"${
    Object.entries(extra).map(([k, v]) => `,${JSON.stringify(k)}:${JSON.stringify(v)}`).join("")}}` },
});

const standalone = {
  /** `plan.agent` has actions: an approval-gated `refund` is asked with a descriptor and approved
   *  through the hook (`addToolApprovalResponse`); a durable-pause `deploy` parks, and a second tab
   *  lists it and approves it by RPC (`pending_approvals`, `approve_execution`) while A watches the
   *  outcome replace the pause and the continuation answer. A second approve is an error. */
  async actions({ open }) {
    const a = await open("A");
    await a.send("refund order-7");
    await a.waitIdle(1);
    await a.waitFor(toolState("refund", "approval-requested"));
    const asked = toolPart(await a.state(), "refund");
    await a.approve(asked.approval.id, true);
    await a.waitFor(lastText("Refunded order-7."));
    await a.waitContinued(1);
    await a.send("deploy v2");
    await a.waitIdle(2);
    await a.waitFor(lastText("Waiting for approval to deploy v2."));
    const b = await open("B");
    const pending = await b.rpc("pending_approvals");
    const approved = await b.rpc("approve_execution", pending[0].execution_id);
    await a.waitFor(lastText("Deployed v2."));
    await a.waitFor("(s) => !s.isServerStreaming");
    await b.waitFor(lastText("Deployed v2."));
    const again = await b.rpc("approve_execution", pending[0].execution_id);
    const left = await b.rpc("pending_approvals");
    return { A: await a.close(), B: await b.close(), asked, pending, approved, again, left };
  },

  /** `plan.agent` steers (`message_concurrency = "steer"`): the tab sends a second message while
   *  the first answer streams and its tool waits for the gate; the gate opens (RPC) and the second
   *  message joins the running turn at its step boundary. A second tab watches. */
  async steer({ open }) {
    const a = await open("A");
    const watcher = await open("watcher");
    await a.send("plan a trip");
    await a.waitFor(toolState("wait_gate", "input-available"));
    await a.send("and book a hotel");
    await a.waitFor(`(s) => s.sockets[0].events.filter((e) => e.dir === "out" &&
      e.data.includes('"cf_agent_use_chat_request"')).length === 2`);
    await a.rpc("wait_steered");
    await a.rpc("open_gate");
    await a.waitIdle(2);
    await a.waitFor(lastText("Noted: and book a hotel (after 1 tool results)."));
    await watcher.waitFor(lastText("Noted: and book a hotel (after 1 tool results)."));
    await watcher.waitFor("(s) => !s.isServerStreaming");
    return { A: await a.close(), watcher: await watcher.close() };
  },

  /** Raw frames nest values at every depth from 240 to 270 and around the limit (plan.limit) in the
   *  state, a data part, a message's metadata and a client tool's output; then a page opens the
   *  room, reads what was kept and chats on (its request resends the whole transcript). */
  async deep_nesting({ open, room }) {
    const { limit, inPart } = plan;
    const raw = await rawSocket(room);
    const located = await raw.send(
      chatRequest("locate", '{"id":"u-locate","role":"user","parts":[{"type":"text","text":"locate me"}]}',
        { clientTools: [{ name: "get_location", description: "Where the page is." }] }),
      (f) => f.type === "cf_agent_use_chat_response" && f.id === "locate" && f.done);
    // The client tool's output first: a later turn settles a call still waiting as interrupted.
    const allowed = { "tool-output": limit - inPart, state: limit, metadata: limit - 1, "data-part": limit - inPart };
    const outcomes = [];
    for (const [kind, most] of Object.entries(allowed)) {
      const depths = [...new Set([...range(most - 2, most + 2), ...range(limit - 2, limit + 2), ...range(240, 270)])]
        .sort((a, b) => a - b);
      for (const depth of depths) {
        const value = nestedText(depth);
        if (kind === "state") {
          const errors = await raw.send(`{"type":"cf_agent_state","state":${value}}`);
          outcomes.push({ kind, depth, errors });
        } else if (kind === "tool-output") {
          const errors = await raw.send(
            `{"type":"cf_agent_tool_result","toolCallId":"loc1","toolName":"get_location","output":${value}}`);
          outcomes.push({ kind, depth, errors });
        } else {
          const id = `${kind}-${depth}`;
          const part = kind === "data-part" ? `,{"type":"data-deep","data":${value}}` : "";
          const meta = kind === "metadata" ? `,"metadata":${value}` : "";
          const message = `{"id":"user-${id}","role":"user","parts":[{"type":"text","text":"deep"}${part}]${meta}}`;
          const done = await raw.send(chatRequest(id, message),
            (f) => f.type === "cf_agent_use_chat_response" && f.id === id && f.done);
          outcomes.push({ kind, depth, errors: done.error ? [done.body] : [] });
        }
      }
    }
    raw.close();
    const reader = await open("reader");
    await reader.waitFor("(s) => s.agentState !== null");
    const atMount = await reader.state();
    await reader.send("next after deep");
    await reader.waitIdle(1);
    return { located, outcomes, at_mount: atMount, reader: await reader.close() };
  },

  /** After a restart on the same data: a page opens the room of `deep_nesting` and chats on. */
  async deep_reopen({ open }) {
    const reader = await open("reader", `deep-nesting-${plan.run}`);
    await reader.waitFor("(s) => s.agentState !== null");
    const atMount = await reader.state();
    await reader.send("next after restart");
    await reader.waitIdle(1);
    return { at_mount: atMount, reader: await reader.close() };
  },
};

// Scenarios that need the test's help in the middle (kill and restart the server): run only when
// named in `plan.only`. `control(what)` prints {"control": what} and waits for the test's answer,
// one line on stdin.
const controlled = {
  /** The server is SIGKILLed while an answer streams and restarted on the same data; the page
   *  stays open, reconnects, and gets the saved words replayed and the recovery's continuation. */
  async restart({ open, control }) {
    const a = await open("A");
    await a.send("count 40");
    await a.waitFor(`(s) => { const m = s.messages.at(-1); return m && m.role === "assistant" &&
      m.parts.some((p) => p.type === "text" && p.text.includes("w13")); }`);
    const beforeKill = await a.state();
    const restarted = await control("kill-and-restart");
    await a.waitFor(`(s) => s.sockets.length >= 2 && s.status === "ready" && !s.isServerStreaming &&
      s.sockets.at(-1).events.some((e) => e.dir === "in" && e.data.includes('"recovering":false')) &&
      s.messages.at(-1)?.parts.some((p) => p.type === "text" && p.text.includes("w40"))`, 40_000);
    const live = await a.close();
    const b = await open("reloaded");
    return { A: live, before_kill: beforeKill, restarted, reloaded: await b.close() };
  },
};

// A cluster (`think serve --database`, `plan.hosts`: three processes): tab A opens the agent on the
// first process, tab B on the second follows A's turn live (forwarded); the test SIGKILLs the first
// process mid-answer; B reconnects to its own process, which takes the agent over and finishes
// the turn; tab C on the third process then loads the same transcript.
controlled.cluster = async ({ open, room, control }) => {
  const [hostA, hostB, hostC] = plan.hosts;
  const a = await open("A", room, hostA);
  const b = await open("B", room, hostB);
  await a.send("count 40");
  await b.waitFor(`(s) => { const m = s.messages.at(-1); return m && m.role === "assistant" &&
    m.parts.some((p) => p.type === "text" && p.text.includes("w13")); }`);
  const beforeKill = await b.state();
  await control("kill-owner");
  await b.waitFor(`(s) => s.sockets.length >= 2 && s.status === "ready" && !s.isServerStreaming &&
    s.messages.at(-1)?.parts.some((p) => p.type === "text" && p.text.includes("w40"))`, 40_000);
  const live = await b.close();
  await a.kill();
  const c = await open("C", room, hostC);
  return { B: live, before_kill: beforeKill, C: await c.close() };
};

let stdinLines = null; // read only by scenarios that use control()
const readLines = () => {
  let buffer = "";
  const waiting = [];
  const ready = [];
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (data) => {
    buffer += data;
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 1);
      if (waiting.length) waiting.shift()(line);
      else ready.push(line);
    }
  });
  return { next: () => (ready.length ? Promise.resolve(ready.shift()) : new Promise((r) => waiting.push(r))) };
};

async function control(what) {
  stdinLines ??= readLines();
  process.stdout.write(`${JSON.stringify({ control: what })}\n`);
  return JSON.parse(await stdinLines.next());
}

async function runScenario(name) {
  const room = `${name.replaceAll("_", "-")}-${plan.run ?? "x"}`;
  const tabs = [];
  const open = async (label, inRoom = room, host = plan.host) => {
    const tab = new Tab(label, inRoom, host);
    tabs.push(tab);
    await tab.mount();
    await tab.waitReady();
    return tab;
  };
  const t0 = Date.now();
  try {
    const result = await (scenarios[name] ?? standalone[name] ?? controlled[name])({ open, room, control });
    return { ok: true, room, ms: Date.now() - t0, result };
  } catch (error) {
    return { ok: false, room, ms: Date.now() - t0, error: error?.stack ?? String(error), state: error?.state ?? null };
  } finally {
    await Promise.all(tabs.map((tab) => tab.kill()));
  }
}

const names = plan.only ?? Object.keys(scenarios);
const unknown = names.filter((name) => !(name in scenarios) && !(name in standalone) && !(name in controlled));
if (unknown.length) {
  console.error(`unknown scenarios: ${unknown.join(", ")}`);
  process.exit(2);
}
const results = plan.serial
  ? await names.reduce(async (acc, name) => ({ ...(await acc), [name]: await runScenario(name) }), {})
  : Object.fromEntries(await Promise.all(names.map(async (name) => [name, await runScenario(name)])));
process.stdout.write(`${JSON.stringify({ node: process.version, scenarios: results })}\n`);
if (stdinLines) process.stdin.destroy(); // no more control answers: let the process end
