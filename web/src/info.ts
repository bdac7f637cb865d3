/** What the server says about itself: `GET _think/info`, relative to the page. */

export type ServerInfo = {
  agents: string[];
  model: string;
  demo: boolean;
  version: string;
  prefix: string;
  /** The server lists its conversations at `_think/agents` (the agents browser). */
  browse: boolean;
};

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
  };
}
