// The real `useAgent` (agents/react) under Node with its `onMcpUpdate` callback: every
// `cf_agent_mcp_servers` state it is given is recorded. It calls the agent's `add_demo(url)`
// callable once connected, waits for the server to be ready with its tools, calls
// `remove_server(id)`, waits for the list to be empty and prints every update as JSON.
//
//   node mcp_update.mjs HOST AGENT NAME MCP_URL

import { WebSocket as NodeWebSocket } from "ws";

globalThis.WebSocket = NodeWebSocket;
const [host, agentName, name, mcpUrl] = process.argv.slice(2);

const { createElement } = await import("react");
const { default: TestRenderer } = await import("react-test-renderer");
const { useAgent } = await import("agents/react");

const updates = [];
let agent = null;
let changed = () => {};

function Page() {
  agent = useAgent({
    agent: agentName,
    name,
    host,
    onMcpUpdate: (mcp) => {
      updates.push(structuredClone(mcp));
      queueMicrotask(() => changed());
    },
  });
  return null;
}

function until(predicate, what, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(updates)}`)), timeoutMs);
    const check = () => {
      const found = updates.find(predicate);
      if (found) {
        clearTimeout(timer);
        changed = () => {};
        resolve(found);
      }
    };
    changed = check;
    check();
  });
}

let renderer;
TestRenderer.act(() => {
  renderer = TestRenderer.create(createElement(Page));
});
let result;
try {
  await until(() => true, "the first update");
  const added = await agent.call("add_demo", [mcpUrl]);
  const ready = await until(
    (m) => m.servers[added.id]?.state === "ready" && m.tools.some((t) => t.serverId === added.id),
    "the server ready with its tools",
  );
  await agent.call("remove_server", [added.id]);
  await until((m) => updates.indexOf(m) > updates.indexOf(ready) && Object.keys(m.servers).length === 0, "removal");
  result = { ok: true, added, updates };
} catch (error) {
  result = { ok: false, error: String(error), updates };
}
TestRenderer.act(() => renderer.unmount());
agent?.close?.();
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
