/**
 * The agent's MCP servers, from the `cf_agent_mcp_servers` state `useAgent` hands to
 * `onMcpUpdate`: a chip in the top bar ("MCP 1/2") that opens a small list with each server's
 * state, its tool count, its error, and a sign-in link while it is authenticating.
 */

import { useState } from "react";

type McpServer = {
  name: string;
  server_url: string;
  auth_url: string | null;
  state: string;
  error: string | null;
};

export type McpState = {
  servers: Record<string, McpServer>;
  tools: { serverId: string; name: string }[];
};

const STATE_LABEL: Record<string, string> = {
  connecting: "Connecting…",
  authenticating: "Sign-in needed",
  discovering: "Listing tools…",
  ready: "Ready",
  failed: "Failed",
};

export function McpServers({ mcp }: { mcp: McpState | null }) {
  const [open, setOpen] = useState(false);
  const entries = Object.entries(mcp?.servers ?? {});
  if (entries.length === 0) return null;
  const ready = entries.filter(([, s]) => s.state === "ready").length;
  const tools = (id: string) => (mcp?.tools ?? []).filter((t) => t.serverId === id).length;
  return (
    <span className="mcp">
      <button
        type="button"
        className={`btn btn-ghost btn-small mcp-toggle${open ? " is-on" : ""}`}
        aria-label="MCP servers"
        aria-expanded={open}
        aria-controls="mcp-panel"
        title="The agent's MCP servers"
        onClick={() => setOpen(!open)}
      >
        <span className={`mcp-dot${ready === entries.length ? " is-ready" : ""}`} aria-hidden="true" />
        MCP {ready}/{entries.length}
      </button>
      {open ? (
        <ul className="mcp-panel" id="mcp-panel" aria-label="MCP servers">
          {entries.map(([id, server]) => (
            <li key={id} className="mcp-server" data-server-id={id} data-state={server.state}>
              <span className="mcp-name" title={server.server_url}>
                {server.name}
              </span>
              <span className={`mcp-state mcp-state-${server.state}`}>{STATE_LABEL[server.state] ?? server.state}</span>
              <span className="mcp-tools">
                {tools(id)} {tools(id) === 1 ? "tool" : "tools"}
              </span>
              {server.state === "authenticating" && server.auth_url ? (
                <a className="mcp-auth" href={server.auth_url} target="_blank" rel="noreferrer noopener">
                  Sign in
                </a>
              ) : null}
              {server.error ? <span className="mcp-error">{server.error}</span> : null}
            </li>
          ))}
        </ul>
      ) : null}
    </span>
  );
}
