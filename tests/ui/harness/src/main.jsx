/**
 * The protocol harness: the stock `useAgent` + `useAgentChat` hooks and nothing else, with
 * `window.harness` for the tests to drive and read them. Query parameters:
 *
 *   agent, name      the agent's address (kebab class name, instance name)
 *   clientTools=1    register the browser tool `getBrowserInfo` (sent as `clientTools`)
 *   answer=0         do not answer client tool calls from onToolCall (the test answers them)
 *   trace=1          record the hook's status and messages at every render in `harness.trace`
 *
 * `window.harness.events` records onToolCall and onTurnEnd calls, in order.
 */

import { useAgentChat } from "@cloudflare/ai-chat/react";
import { useAgent } from "agents/react";
import { Suspense, useEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const AGENT = params.get("agent") ?? "protocol-chat";
const NAME = params.get("name") ?? "default";
const CLIENT_TOOLS = params.get("clientTools") === "1";
const ANSWER = params.get("answer") !== "0";
const TRACE = params.get("trace") === "1";

const events = [];
// What the page shows now: the latest render's hook result, and the agent (the socket).
let current = null;
const chat = () => current.chat.current;

const harness = {
  events,
  trace: [],
  shown: [], // [[role, id, text], …] of every message at each render where they changed (JSON)
  ready: false,
  opens: 0,
  synced: 0, // the server's answers to the hook's resume probe (one per open): the connect
             // transcript is applied by then, so a message sent now cannot be overwritten by it
  closes: 0,
  get messages() {
    return chat().messages;
  },
  get status() {
    return chat().status;
  },
  get error() {
    const error = chat().error;
    return error ? String(error.message ?? error) : null;
  },
  get busy() {
    const c = chat();
    return c.status === "submitted" || c.status === "streaming" || c.isStreaming || c.isServerStreaming
      || c.isToolContinuation;
  },
  texts: () => chat().messages.map((m) => `${m.role}: ${textOf(m)}`),
  send: (text) => void chat().sendMessage({ text }),
  regenerate: () => void chat().regenerate(),
  stop: () => void chat().stop(),
  clear: () => chat().clearHistory(),
  approve: (toolCallId, approved) => {
    for (const message of chat().messages) {
      for (const part of message.parts) {
        if (part.toolCallId === toolCallId && part.approval) {
          void chat().addToolApprovalResponse({ id: part.approval.id, approved });
          return true;
        }
      }
    }
    return false;
  },
  output: (toolCallId, toolName, output) => chat().addToolOutput({ toolCallId, toolName, output }),
  reconnect: () => current.agent.reconnect(),
};
window.harness = harness;

const BROWSER_TOOLS = {
  getBrowserInfo: {
    description: "Details of the browser the user is on",
    parameters: { type: "object", properties: {} },
    execute: async () => ({ userAgent: "protocol-harness" }),
  },
};

const ANSWERS = {
  getBrowserInfo: { userAgent: "protocol-harness" },
  get_location: { city: "Lisbon" },
};

function textOf(message) {
  return message.parts
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("");
}

function Chat() {
  const [, setConnection] = useState("connecting");
  const agent = useAgent({
    agent: AGENT,
    name: NAME,
    onOpen: () => {
      harness.opens += 1;
      setConnection("open");
    },
    onClose: () => {
      harness.closes += 1;
      setConnection("closed");
    },
  });
  const chat = useAgentChat({
    agent,
    ...(CLIENT_TOOLS ? { tools: BROWSER_TOOLS } : {}),
    onToolCall: async ({ toolCall, addToolOutput }) => {
      events.push({ type: "toolCall", toolCallId: toolCall.toolCallId, toolName: toolCall.toolName });
      if (ANSWER && toolCall.toolName in ANSWERS) {
        addToolOutput({ toolCallId: toolCall.toolCallId, output: ANSWERS[toolCall.toolName] });
      }
    },
    onTurnEnd: (event) => events.push({ type: "turnEnd", ...event }),
  });
  const latest = useRef(chat);
  latest.current = chat;
  const shown = JSON.stringify(chat.messages.map((m) => [m.role, m.id, textOf(m)]));
  if (harness.shown.at(-1) !== shown) harness.shown.push(shown);
  if (TRACE) {
    harness.trace.push(JSON.stringify([chat.status, chat.messages.map((m) => [m.role, m.id.slice(0, 6),
      m.parts.map((p) => `${p.type}:${p.state ?? ""}`)])]));
  }

  useEffect(() => {
    current = { chat: latest, agent };
    harness.ready = true;
  }, [agent]);

  useEffect(() => {
    const onMessage = (event) => {
      if (typeof event.data === "string" && /"type":"cf_agent_stream_resum(e_none|ing)"/.test(event.data)
        && event.data.includes('"probeId"')) harness.synced += 1;
    };
    agent.addEventListener("message", onMessage);
    return () => agent.removeEventListener("message", onMessage);
  }, [agent]);

  return (
    <main>
      <p id="status">{chat.status}</p>
      <ol id="messages">
        {chat.messages.map((message) => (
          <li key={message.id} className={`msg msg-${message.role}`}>
            {textOf(message)}
          </li>
        ))}
      </ol>
    </main>
  );
}

createRoot(document.getElementById("root")).render(
  <Suspense fallback={<p id="loading">loading</p>}>
    <Chat />
  </Suspense>,
);
