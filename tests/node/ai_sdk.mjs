// Drives the AI SDK HTTP protocol (think.ui_protocols.ai_sdk) with the real `ai` package: the
// `Chat` class `useChat` is built on (@ai-sdk/react) over `DefaultChatTransport`, and prints one
// JSON result on stdout.
//
//   node ai_sdk.mjs '{"base":"http://127.0.0.1:8000/agents/node-chat","run":"<suffix>","only":[...]}'
//
// Each scenario uses its own agent instance and reports what its chat ended with (messages,
// status, error) and every HTTP exchange of its transport (method, URL, status, headers, request
// body, and the response body as received).

import { Chat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { WebSocket } from "ws";

const opened = {}; // room -> its pages, for the report of a failed scenario
const plan = JSON.parse(process.argv[2] ?? "{}");
const WAIT_MS = plan.waitMs ?? 15_000;

async function waitFor(what, predicate) {
  const deadline = Date.now() + WAIT_MS;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function within(what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function textOf(message) {
  return (message?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
}

class Page {
  // One page: a Chat on its transport, with a recording fetch.
  constructor(room, options = {}) {
    this.room = room;
    this.url = `${plan.base}/${encodeURIComponent(room)}`;
    this.http = [];
    (opened[room] ??= []).push(this);
    const record = async (input, init) => {
      const entry = { method: init?.method ?? "GET", url: String(input), body: init?.body ?? null };
      this.http.push(entry);
      let response;
      try {
        response = await fetch(input, init);
      } catch (error) {
        entry.error = String(error);
        throw error;
      }
      entry.status = response.status;
      entry.headers = Object.fromEntries(response.headers.entries());
      if (!response.body) return response;
      const [mine, theirs] = response.body.tee();
      entry.received = "";
      entry.done = (async () => {
        const decoder = new TextDecoder();
        try {
          for await (const piece of theirs) entry.received += decoder.decode(piece, { stream: true });
        } catch (error) {
          entry.readError = String(error);
        }
      })();
      return new Response(mine, { status: response.status, statusText: response.statusText,
                                  headers: response.headers });
    };
    this.chat = new Chat({
      id: options.chatId ?? `chat-${room}`,
      messages: options.messages ?? [],
      transport: new DefaultChatTransport({ api: `${this.url}/chat`, fetch: record, body: options.body }),
      sendAutomaticallyWhen: options.sendAutomaticallyWhen,
      onToolCall: options.onToolCall ? (event) => options.onToolCall(this.chat, event) : undefined,
      onError: () => {},
    });
  }

  last() {
    return this.chat.messages[this.chat.messages.length - 1];
  }

  async settled() {
    await waitFor("the chat to be ready", () => this.chat.status === "ready" || this.chat.status === "error");
    await within("the responses to end", Promise.all(this.http.map((e) => e.done)));
  }

  async transcript() {
    const response = await fetch(`${this.url}/chat`);
    return await response.json();
  }

  state() {
    return {
      messages: this.chat.messages, status: this.chat.status, error: this.chat.error?.message ?? null,
      http: this.http.map(({ done, ...rest }) => rest),
    };
  }
}

async function rpc(room, method) {
  // The open_gate RPC over the agent's WebSocket (the other protocol on the same agent).
  const socket = new WebSocket(`${plan.base.replace(/^http/, "ws")}/${encodeURIComponent(room)}`);
  try {
    return await within(`the ${method} RPC`, new Promise((resolve, reject) => {
      socket.on("error", reject);
      socket.on("open", () => socket.send(JSON.stringify({ type: "rpc", id: "1", method, args: [] })));
      socket.on("message", (raw) => {
        const frame = JSON.parse(String(raw));
        if (frame.type === "rpc" && frame.id === "1") {
          if (frame.success) resolve(frame.result);
          else reject(new Error(frame.error));
        }
      });
    }));
  } finally {
    socket.close();
  }
}

const scenarios = {
  async turn(room) {
    const page = new Page(room);
    await page.chat.sendMessage({ text: "hello there" });
    await page.settled();
    const first = page.state();
    await page.chat.regenerate();
    await page.settled();
    return { first, regenerated: page.state(), transcript: await page.transcript() };
  },

  async tool(room) {
    const page = new Page(room);
    await page.chat.sendMessage({ text: "add 2 3" });
    await page.settled();
    return { page: page.state(), transcript: await page.transcript() };
  },

  async approval(room) {
    const page = new Page(room, { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await page.chat.sendMessage({ text: "delete notes.txt" });
    await page.settled();
    const asked = page.state();
    const part = page.last().parts.find((p) => p.state === "approval-requested");
    if (!part) throw new Error("no approval was requested");
    await page.chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await waitFor("the continuation", () => textOf(page.last()).includes("Deleted"));
    await page.settled();
    return { asked, page: page.state(), transcript: await page.transcript() };
  },

  async denied(room) {
    const page = new Page(room, { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
    await page.chat.sendMessage({ text: "remove old.txt" });
    await page.settled();
    const part = page.last().parts.find((p) => p.state === "approval-requested");
    if (!part) throw new Error("no approval was requested");
    await page.chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not today" });
    await waitFor("the continuation", () => textOf(page.last()).includes("Kept it"));
    await page.settled();
    return { page: page.state(), transcript: await page.transcript() };
  },

  async clientTool(room) {
    const page = new Page(room, {
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: (chat, { toolCall }) => {
        if (toolCall.toolName === "get_city") {
          chat.addToolOutput({ tool: "get_city", toolCallId: toolCall.toolCallId, output: { city: "Paris" } });
        }
      },
    });
    await page.chat.sendMessage({ text: "where am I" });
    await waitFor("the continuation", () => textOf(page.last()).includes("You are in"));
    await page.settled();
    return { page: page.state(), transcript: await page.transcript() };
  },

  async pageTool(room) {
    // A tool the page registers itself (`clientTools` in the custom body), answered by onToolCall.
    const page = new Page(room, {
      body: { clientTools: [{ name: "get_location", description: "Where the browser is",
                              parameters: { type: "object", properties: {} } }] },
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: (chat, { toolCall }) => {
        chat.addToolOutput({ tool: toolCall.toolName, toolCallId: toolCall.toolCallId, output: { lat: 48.85 } });
      },
    });
    await page.chat.sendMessage({ text: "locate me" });
    await waitFor("the continuation", () => textOf(page.last()).includes("Located."));
    await page.settled();
    return { page: page.state(), transcript: await page.transcript() };
  },

  async reload(room) {
    // A page streams a reply, is closed mid-stream; a new page loads the transcript and resumes.
    const before = new Page(room);
    const sending = before.chat.sendMessage({ text: "gated reload" });
    await waitFor("w03 on the first page", () => textOf(before.last()).includes("w03"));
    await before.chat.stop(); // the page goes away: its fetch is aborted, the turn runs on
    await sending;
    await before.settled();
    const loaded = await before.transcript();
    const after = new Page(room, { messages: loaded });
    const resuming = after.chat.resumeStream();
    await waitFor("the replay on the new page", () => textOf(after.last()).includes("w03"));
    const midway = JSON.parse(JSON.stringify(after.chat.messages));
    await rpc(room, "open_gate");
    await within("the resumed stream", resuming);
    await after.settled();
    return { before: before.state(), loaded, midway, after: after.state(), transcript: await after.transcript() };
  },

  async reloadContinuation(room) {
    // The same, while the continuation after a client tool's answer streams.
    const answer = (chat, { toolCall }) => {
      chat.addToolOutput({ tool: "get_city", toolCallId: toolCall.toolCallId, output: { city: "Oslo" } });
    };
    const before = new Page(room, { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
                                    onToolCall: answer });
    const sending = before.chat.sendMessage({ text: "where, gated" }); // resolves after the continuation
    await waitFor("w03 on the first page", () => textOf(before.last()).includes("w03"));
    await before.chat.stop();
    await within("the stopped request", sending);
    await before.settled();
    const loaded = await before.transcript();
    const after = new Page(room, { messages: loaded });
    const resuming = after.chat.resumeStream();
    await waitFor("the replay on the new page", () => textOf(after.last()).includes("w03"));
    const midway = JSON.parse(JSON.stringify(after.chat.messages));
    await rpc(room, "open_gate");
    await within("the resumed stream", resuming);
    await after.settled();
    return { before: before.state(), loaded, midway, after: after.state(), transcript: await after.transcript() };
  },

  async idle(room) {
    const page = new Page(room);
    await page.chat.resumeStream();
    await page.settled();
    return { page: page.state() };
  },

  async refused(room) {
    const page = new Page(`locked-${room}`);
    await page.chat.sendMessage({ text: "hello there" });
    await page.settled();
    const sent = page.state();
    const again = new Page(`locked-${room}`);
    await again.chat.resumeStream();
    await again.settled();
    return { sent, resumed: again.state() };
  },
};

const alive = setInterval(() => {}, 1000); // fetch's sockets do not keep Node running on their own
const names = plan.only ?? Object.keys(scenarios);
const results = {};
await Promise.all(names.map(async (name) => {
  const room = `${name}-${plan.run ?? "x"}`;
  try {
    results[name] = { ok: true, ...(await scenarios[name](room)) };
  } catch (error) {
    results[name] = { ok: false, error: String(error?.stack ?? error),
                      pages: (opened[room] ?? []).map((page) => page.state()) };
  }
}));
clearInterval(alive);
process.stdout.write(JSON.stringify({ scenarios: results }) + "\n");
process.exit(0);
