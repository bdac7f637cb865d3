import type { UIMessage } from "ai";

/** What the server keeps in an assistant message's `metadata.usage` (see think.usage). */
export type Usage = {
  inputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  cachedInputTokens: number;
  /** US dollars; null unless every message summed has a price. */
  costUsd: number | null;
};

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** The usage of these messages summed; null when none of them carries any. */
export function sumUsage(messages: readonly UIMessage[]): Usage | null {
  let found = false;
  let priced = true;
  const total: Usage = { inputTokens: 0, outputTokens: 0, reasoningTokens: 0, cachedInputTokens: 0, costUsd: 0 };
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    const metadata = message.metadata as { usage?: Record<string, unknown> } | undefined;
    const usage = metadata?.usage;
    if (!usage || typeof usage !== "object" || !("inputTokens" in usage || "outputTokens" in usage)) continue;
    found = true;
    total.inputTokens += count(usage.inputTokens);
    total.outputTokens += count(usage.outputTokens);
    total.reasoningTokens += count(usage.reasoningTokens);
    total.cachedInputTokens += count(usage.cachedInputTokens);
    if (typeof usage.costUsd === "number") total.costUsd = (total.costUsd ?? 0) + usage.costUsd;
    else priced = false;
  }
  if (!found) return null;
  return priced ? total : { ...total, costUsd: null };
}

const numbers = new Intl.NumberFormat("en-US");

export function formatCost(cost: number): string {
  if (cost >= 1) return `$${cost.toFixed(2)}`;
  return `$${cost.toFixed(6).replace(/0+$/, "").replace(/\.$/, "")}`;
}

/** `2,538 tokens · $0.0012` */
export function usageLabel(usage: Usage): string {
  const tokens = `${numbers.format(usage.inputTokens + usage.outputTokens)} tokens`;
  return usage.costUsd === null ? tokens : `${tokens} · ${formatCost(usage.costUsd)}`;
}

/** The breakdown, for a tooltip. */
export function usageDetail(usage: Usage): string {
  const parts = [`${numbers.format(usage.inputTokens)} in`, `${numbers.format(usage.outputTokens)} out`];
  if (usage.reasoningTokens) parts.push(`${numbers.format(usage.reasoningTokens)} reasoning`);
  if (usage.cachedInputTokens) parts.push(`${numbers.format(usage.cachedInputTokens)} cached`);
  return parts.join(" · ") + (usage.costUsd === null ? " · price unknown for this model" : "");
}
