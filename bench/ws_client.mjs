// The real npm client for bench/ws_turns.py: `AgentClient` (agents/client) and the chat transport
// `useAgentChat` uses (agents/chat/transport), sending the whole transcript with every request as
// the hook does, and building the reply from the stream with the AI SDK's `readUIMessageStream`.
//
//   node bench/ws_client.mjs '{"host":"127.0.0.1:8000","agent":"bench-chat","name":"room","turns":50,"warmup":5}'
//
// Prints one JSON line: {"start": <messages on connect>, "times": [ms per turn, send → done], "end": n,
// "cpu": the process's CPU ms per timed turn, "json": the floor of its own JSON work per turn (below),
// "frameBytes": the length of the last transcript frame}.
// The packages are the ones tests/node installs (npm ci there); nothing is mocked.

import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const plan = JSON.parse(process.argv[2] ?? "{}");
const require = createRequire(new URL("../tests/node/package.json", import.meta.url));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);

const ws = await load("ws");
globalThis.WebSocket ??= ws.WebSocket ?? ws.default; // Node 20 has none; partysocket uses the global one
const { AgentClient } = await load("agents/client");
const { WebSocketChatTransport } = await load("agents/chat/transport");
const { readUIMessageStream } = await load("ai");

const client = new AgentClient({ host: plan.host, agent: plan.agent, name: plan.name });
let transcript = null;
let transcriptFrame = ""; // the text of the last transcript frame, for the JSON floor below
const connected = new Promise((resolve) => {
  client.addEventListener("message", (event) => {
    const frame = JSON.parse(String(event.data));
    if (frame.type === "cf_agent_chat_messages") {
      transcriptFrame = String(event.data);
      transcript = frame.messages; // as useAgentChat: the server's transcript replaces the local one
      resolve();
    }
  });
});
await connected;
const start = transcript.length;
const transport = new WebSocketChatTransport({ agent: client });

let counter = 0;
async function turn() {
  const user = { id: `bench-${process.pid}-${counter}`, role: "user", parts: [{ type: "text", text: `question ${counter}` }] };
  counter += 1;
  const messages = [...transcript, user];
  const began = performance.now();
  const stream = await transport.sendMessages({ chatId: plan.name, messages, trigger: "submit-message",
                                                messageId: undefined, abortSignal: undefined });
  let reply = null;
  for await (const message of readUIMessageStream({ stream })) reply = message;
  const elapsed = performance.now() - began;
  transcript = reply ? [...messages, reply] : messages;
  return elapsed;
}

for (let i = 0; i < (plan.warmup ?? 5); i++) await turn();
const times = [];
const cpuBefore = process.cpuUsage();
for (let i = 0; i < plan.turns; i++) times.push(await turn());
const cpu = process.cpuUsage(cpuBefore);
client.close();

// The JSON work a turn costs this client whatever the server does: building the request (the
// transport stringifies the transcript, then the frame around it) and parsing the transcript frame
// the server sends before `done` — once by each of the three listeners that see every frame
// (AgentClient's own, the transport's, and the hook's, which this script stands in for).
// Median of 21 rounds, on the final transcript.
const question = { id: "floor", role: "user", parts: [{ type: "text", text: "question" }] };
const rounds = [];
for (let i = 0; i < 21; i++) {
  const began = performance.now();
  const body = JSON.stringify({ messages: [...transcript, question], trigger: "submit-message" });
  JSON.stringify({ id: "floor", init: { method: "POST", body }, type: "cf_agent_use_chat_request" });
  for (let j = 0; j < 3; j++) JSON.parse(transcriptFrame);
  rounds.push(performance.now() - began);
}
rounds.sort((a, b) => a - b);
const json = rounds[10];
process.stdout.write(JSON.stringify({ start, times, end: transcript.length, cpu: (cpu.user + cpu.system) / 1000 / plan.turns,
                                     json, frameBytes: transcriptFrame.length }) + "\n");
process.exit(0);
