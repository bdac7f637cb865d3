/**
 * The agent's loaded extensions, from its `loaded_extensions()` callable: a chip in the top bar
 * ("Extensions 2") that opens a list with each extension's version, what its manifest grants
 * and its tools. The list is read when the socket opens and again after every turn (the model
 * may have loaded one), and kept out of sight for an agent that has none.
 */

import { useEffect, useState } from "react";

type Permissions = {
  network: string[] | false;
  workspace: "none" | "read" | "read-write";
  context: { read: string[] | "all"; write: string[] | "own" };
  messages: "none" | "read";
  session: { send_message: boolean };
};

export type LoadedExtension = {
  name: string;
  version: string;
  description: string;
  prefix: string;
  permissions: Permissions;
  tools: string[];
  hooks: string[];
  context: string[];
  static: boolean;
};

type CallingAgent = { call: <T = unknown>(method: string, args?: unknown[]) => Promise<T> };

/** The grants of a manifest in a few words: "workspace read-write · network api.example.com". */
export function grants(p: Permissions): string {
  const out: string[] = [];
  if (p.workspace !== "none") out.push(`workspace ${p.workspace}`);
  if (p.network && p.network.length > 0) out.push(`network ${p.network.join(", ")}`);
  const read = p.context.read === "all" || p.context.read.length > 0;
  const write = p.context.write === "own" || p.context.write.length > 0;
  if (read || write) out.push(`context ${[read ? "read" : "", write ? "write" : ""].filter(Boolean).join("+")}`);
  if (p.messages === "read") out.push("messages read");
  if (p.session.send_message) out.push("send messages");
  return out.length > 0 ? out.join(" · ") : "no permissions";
}

export function Extensions({ agent, open: socketOpen, busy }: { agent: CallingAgent; open: boolean; busy: boolean }) {
  const [extensions, setExtensions] = useState<LoadedExtension[]>([]);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (!socketOpen || busy) return;
    let live = true;
    agent.call<LoadedExtension[]>("loaded_extensions", []).then(
      (list) => {
        if (live && Array.isArray(list)) setExtensions(list);
      },
      () => {
        // An agent without the callable (not a Think): nothing to show.
      },
    );
    return () => {
      live = false;
    };
  }, [agent, socketOpen, busy]);
  if (extensions.length === 0) return null;
  return (
    <span className="mcp extensions">
      <button
        type="button"
        className={`btn btn-ghost btn-small mcp-toggle${open ? " is-on" : ""}`}
        aria-label="Extensions"
        aria-expanded={open}
        aria-controls="extensions-panel"
        title="The agent's loaded extensions"
        onClick={() => setOpen(!open)}
      >
        Extensions {extensions.length}
      </button>
      {open ? (
        <ul className="mcp-panel" id="extensions-panel" aria-label="Extensions">
          {extensions.map((ext) => (
            <li key={ext.name} className="mcp-server extension" data-extension={ext.name}>
              <span className="mcp-name" title={ext.description || ext.name}>
                {ext.name}
              </span>
              <span className="mcp-state">v{ext.version}</span>
              <span className="extension-grants">{grants(ext.permissions)}</span>
              <span className="extension-tools">{ext.tools.join(", ")}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </span>
  );
}
