/** What the server says about itself: `GET _think/info`, relative to the page. */

export type ServerInfo = {
  agents: string[];
  model: string;
  demo: boolean;
  version: string;
  prefix: string;
  /** The server lists its conversations at `_think/agents` (the agents browser). */
  browse: boolean;
  /** Per agent: what an empty conversation says (`Think.welcome`), null for the default text. */
  welcome: Record<string, string | null>;
  /** Per agent: the prompts an empty conversation offers (`Think.suggestions`). */
  suggestions: Record<string, string[]>;
  /** Per agent: the largest file a message may attach (`Think.max_attachment_bytes`; 0: none). */
  maxAttachmentBytes: Record<string, number>;
};

function stringMap<T>(value: unknown, item: (entry: unknown) => T | undefined): Record<string, T> {
  const out: Record<string, T> = {};
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
      const parsed = item(entry);
      if (parsed !== undefined) out[key] = parsed;
    }
  }
  return out;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

export async function fetchInfo(signal?: AbortSignal): Promise<ServerInfo> {
  const url = new URL("_think/info", document.baseURI);
  const response = await fetch(url, { signal, headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`${url.pathname} answered ${response.status} ${response.statusText}`.trim());
  const body: unknown = await response.json();
  const data = (body ?? {}) as Record<string, unknown>;
  if (!isStringArray(data.agents) || data.agents.length === 0) {
    throw new Error(`${url.pathname} lists no agents`);
  }
  return {
    agents: data.agents,
    model: typeof data.model === "string" ? data.model : "unknown",
    demo: data.demo === true,
    version: typeof data.version === "string" ? data.version : "",
    prefix: typeof data.prefix === "string" && data.prefix ? data.prefix.replace(/^\/+|\/+$/g, "") : "agents",
    browse: data.browse === true,
    welcome: stringMap(data.welcome, (entry) => (typeof entry === "string" ? entry : undefined)),
    suggestions: stringMap(data.suggestions, (entry) => (isStringArray(entry) ? entry : undefined)),
    maxAttachmentBytes: stringMap(data.max_attachment_bytes, (entry) => (typeof entry === "number" ? entry : undefined)),
  };
}
