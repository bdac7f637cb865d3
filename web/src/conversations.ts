/**
 * Conversations this browser has opened, kept in localStorage, and the address in the URL hash.
 *
 * A conversation is an agent instance: (agent, name). The server keeps the transcript; the
 * browser only remembers which names were used and a title taken from the first message.
 */

import { useCallback, useEffect, useState } from "react";

export type Conversation = { agent: string; name: string; title?: string; updatedAt: number };

const STORAGE_KEY = "think.conversations.v1";
const MAX_REMEMBERED = 40;
const NAME_LIMIT = 64;

export function cleanName(raw: string): string {
  return raw
    .trim()
    .replace(/\s+/g, "-")
    .replace(/[^\w.-]/g, "")
    .slice(0, NAME_LIMIT);
}

export function newConversationName(): string {
  const stamp = new Date().toISOString().slice(0, 10).replace(/-/g, "");
  const random = Math.random().toString(36).slice(2, 7);
  return `chat-${stamp}-${random}`;
}

function read(): Conversation[] {
  try {
    const value: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "[]");
    if (!Array.isArray(value)) return [];
    return value.filter(
      (item): item is Conversation =>
        typeof item === "object" && item !== null && typeof item.agent === "string" && typeof item.name === "string",
    );
  } catch {
    return [];
  }
}

function write(list: Conversation[]): void {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(list.slice(0, MAX_REMEMBERED)));
  } catch {
    // Storage may be full or disabled (private windows); remembering names is only a convenience.
  }
}

export function useConversations() {
  const [list, setList] = useState<Conversation[]>(read);

  useEffect(() => {
    const onStorage = (event: StorageEvent) => {
      if (event.key === STORAGE_KEY) setList(read());
    };
    window.addEventListener("storage", onStorage);
    return () => window.removeEventListener("storage", onStorage);
  }, []);

  const update = useCallback((change: (list: Conversation[]) => Conversation[]) => {
    const next = change(read());
    write(next);
    setList(next);
  }, []);

  const remember = useCallback(
    (agent: string, name: string) =>
      update((items) => {
        const existing = items.find((c) => c.agent === agent && c.name === name);
        const rest = items.filter((c) => c !== existing);
        return [{ agent, name, title: existing?.title, updatedAt: Date.now() }, ...rest];
      }),
    [update],
  );

  const setTitle = useCallback(
    (agent: string, name: string, title: string | undefined) =>
      update((items) => items.map((c) => (c.agent === agent && c.name === name ? { ...c, title } : c))),
    [update],
  );

  const forget = useCallback(
    (agent: string, name: string) => update((items) => items.filter((c) => !(c.agent === agent && c.name === name))),
    [update],
  );

  return { list, remember, setTitle, forget };
}

export type Address = { agent: string; name: string };

/** `#/<agent>/<name>` */
export function readHash(): Partial<Address> {
  const [agent, name] = window.location.hash.replace(/^#\/?/, "").split("/");
  const decode = (value: string | undefined) => {
    try {
      return value ? decodeURIComponent(value) : undefined;
    } catch {
      return undefined;
    }
  };
  return { agent: decode(agent), name: decode(name) ? cleanName(decode(name)!) || undefined : undefined };
}

export function writeHash({ agent, name }: Address): void {
  const hash = `#/${encodeURIComponent(agent)}/${encodeURIComponent(name)}`;
  if (window.location.hash !== hash) window.history.replaceState(null, "", hash);
}
