/**
 * The agents browser of the server (`GET _think/agents/...`, read-only), when it serves one.
 *
 * The sidebar lists the conversations the server has (titles from the first message, last
 * activity, message count) instead of only those this browser remembers; `null` means the
 * server does not offer the listing (off, or refused), and the sidebar falls back to its own.
 */

import { useCallback, useEffect, useState } from "react";

export type ServerConversation = {
  agent: string;
  name: string;
  title: string | null;
  lastActivity: number | null;
  messages: number;
  /** False when `name` is only the file stem of a name too long to keep (view it, not chat). */
  addressable: boolean;
};

export type TranscriptEntry = {
  id: string;
  role: string;
  createdAt: number;
  parts: Array<Record<string, unknown>>;
  branches: string[];
  branch: number;
};

export type Transcript = { agent: string; name: string; active: boolean; messages: TranscriptEntry[] };

const REFRESH_MS = 15_000;

function url(path: string): URL {
  return new URL(`_think/agents/${path}`, document.baseURI);
}

async function getJson(target: URL, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const response = await fetch(target, { signal, headers: { accept: "application/json" } });
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) {
    throw new Error(typeof body.error === "string" ? body.error : `${target.pathname} answered ${response.status}`);
  }
  return body;
}

export async function fetchConversations(agents: string[], signal?: AbortSignal): Promise<ServerConversation[]> {
  const lists = await Promise.all(
    agents.map(async (agent) => {
      try {
        const body = await getJson(url(encodeURIComponent(agent)), signal);
        return Array.isArray(body.instances) ? (body.instances as Record<string, unknown>[]) : [];
      } catch (error) {
        if (error instanceof Error && /no agent/.test(error.message)) return []; // nothing stored for it yet
        throw error;
      }
    }),
  );
  return lists
    .flat()
    .filter((item) => typeof item.agent === "string" && typeof item.name === "string" && !item.error)
    .map((item) => ({
      agent: item.agent as string,
      name: item.name as string,
      title: typeof item.title === "string" ? item.title : null,
      lastActivity: typeof item.last_activity === "number" ? item.last_activity : null,
      messages: typeof item.messages === "number" ? item.messages : 0,
      addressable: item.addressable !== false,
    }))
    .sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
}

export async function fetchTranscript(agent: string, name: string, branch?: string): Promise<Transcript> {
  const target = url(`${encodeURIComponent(agent)}/${encodeURIComponent(name)}`);
  if (branch) target.searchParams.set("branch", branch);
  const body = await getJson(target);
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  return {
    agent,
    name,
    active: body.active !== false,
    messages: messages.map((m) => {
      const message = (m.message ?? {}) as Record<string, unknown>;
      return {
        id: String(m.id),
        role: String(m.role),
        createdAt: typeof m.created_at === "number" ? m.created_at : 0,
        parts: Array.isArray(message.parts) ? (message.parts as Array<Record<string, unknown>>) : [],
        branches: Array.isArray(m.branches) ? (m.branches as string[]) : [String(m.id)],
        branch: typeof m.branch === "number" ? m.branch : 0,
      };
    }),
  };
}

/** The server's conversations for `agents` (null while unknown or when the server offers none). */
export function useServerConversations(enabled: boolean, agents: string[], refreshKey: string) {
  const [list, setList] = useState<ServerConversation[] | null>(null);
  const [tick, setTick] = useState(0);
  const agentsKey = agents.join("\n");

  useEffect(() => {
    if (!enabled) return;
    const timer = window.setInterval(() => {
      if (document.visibilityState === "visible") setTick((n) => n + 1);
    }, REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [enabled]);

  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    fetchConversations(agentsKey.split("\n"), controller.signal)
      .then(setList)
      .catch((error: unknown) => {
        if (!controller.signal.aborted) {
          console.warn("the server's conversation list is unavailable:", error);
          setList(null);
        }
      });
    return () => controller.abort();
  }, [enabled, agentsKey, refreshKey, tick]);

  const refresh = useCallback(() => setTick((n) => n + 1), []);
  return { list: enabled ? list : null, refresh };
}

export function relativeTime(seconds: number | null, now = Date.now()): string {
  if (seconds === null) return "";
  const ago = Math.max(0, now / 1000 - seconds);
  if (ago < 60) return "just now";
  if (ago < 3600) return `${Math.floor(ago / 60)} min ago`;
  if (ago < 86400) return `${Math.floor(ago / 3600)} h ago`;
  return new Date(seconds * 1000).toLocaleDateString();
}
