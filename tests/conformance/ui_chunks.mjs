// Checks recorded UI message chunk streams against the npm `ai` package (pinned in package.json).
//
// stdin:  {"streams": [{"name": "...", "chunks": [{...}, ...], "message"?: {...}}, ...]}
//         (`message`: the assistant message the stream continues, as `readUIMessageStream` takes it)
// stdout: {"aiVersion": "7.0.173", "results": [{
//            "name": "...",
//            "invalid": [{"index", "chunk", "issues"}],   // chunks `uiMessageChunkSchema` rejects
//            "unknownKeys": [{"index", "type", "keys"}],  // keys the `UIMessageChunk` type does not declare
//            "message": {...} | null,                     // the last message `readUIMessageStream` yielded
//            "streamErrors": ["..."],                     // errorTexts of `error` chunks, via onError
//            "error": "..." | null                        // the fold failed (e.g. a chunk for an unknown part)
//          }]}
//
// `uiMessageChunkSchema` is built from `z.looseObject`s, so it accepts keys it does not know: a
// misspelt optional field (`providerMetaData`) would pass. `unknownKeys` closes that gap by reading
// the field names of each member of the `UIMessageChunk` union from the package's own type
// declarations.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { readUIMessageStream, uiMessageChunkSchema } from "ai";

const require = createRequire(import.meta.url);
const aiDir = dirname(dirname(require.resolve("ai")));
const aiVersion = JSON.parse(readFileSync(join(aiDir, "package.json"), "utf8")).version;

/** Field names per chunk type, from `type UIMessageChunk` (and `DataUIMessageChunk`) in index.d.ts. */
function declaredChunkKeys() {
  const dts = readFileSync(join(aiDir, "dist", "index.d.ts"), "utf8");
  const start = dts.search(/^type DataUIMessageChunk</m);
  const union = dts.search(/^type UIMessageChunk</m);
  if (start < 0 || union < start) throw new Error("cannot find `type UIMessageChunk` in ai/dist/index.d.ts");
  const end = dts.indexOf("\n};", union);
  const keys = new Map(); // type literal (or "data-*") -> Set of field names
  let fields = null;
  let kind = null;
  const flush = () => {
    if (fields !== null && kind !== null) keys.set(kind, fields);
    fields = new Set();
    kind = null;
  };
  // Each member object opens on a line at indent 0 ending in "{" and lists its fields at indent 2.
  for (const line of dts.slice(start, end).split("\n")) {
    if (/^\S.*\{$/.test(line)) {
      flush();
      continue;
    }
    const field = line.match(/^ {2}(\w+)\??:/);
    if (!field || fields === null) continue;
    fields.add(field[1]);
    const literal = field[1] === "type" && line.match(/^ {2}type: (?:'([^']+)'|`(data-)\$\{)/);
    if (literal) kind = literal[1] ?? "data-*";
  }
  flush();
  for (const expected of ["start", "text-delta", "tool-input-available", "tool-output-error", "finish", "data-*"]) {
    if (!keys.has(expected)) {
      throw new Error(`the UIMessageChunk union in ai/dist/index.d.ts no longer parses (no "${expected}")`);
    }
  }
  return keys;
}

function unknownKeysOf(chunk, declared) {
  const type = typeof chunk?.type === "string" && chunk.type.startsWith("data-") ? "data-*" : chunk?.type;
  const fields = declared.get(type);
  if (fields === undefined) return null; // an unknown type is reported by the schema already
  return Object.keys(chunk).filter((key) => !fields.has(key));
}

/** The issues of the union member for this chunk's `type`, not those of every member. */
function relevantIssues(issues) {
  if (issues?.length !== 1 || issues[0].code !== "invalid_union") return issues;
  const typeMatched = issues[0].errors.filter((branch) => !branch.some((i) => i.path?.[0] === "type"));
  if (typeMatched.length === 0) return [{ code: "unknown_type", path: ["type"], message: "no chunk type matches" }];
  return typeMatched.flat();
}

function describe(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

async function check(stream, schema, declared) {
  const chunks = stream.chunks;
  const invalid = [];
  const unknownKeys = [];
  for (const [index, chunk] of chunks.entries()) {
    const result = await schema.validate(chunk);
    if (!result.success) {
      const issues = relevantIssues(result.error?.issues) ?? [{ message: describe(result.error) }];
      invalid.push({ index, chunk, issues });
    }
    const extra = unknownKeysOf(chunk, declared);
    if (extra?.length) unknownKeys.push({ index, type: chunk.type, keys: extra });
  }

  // The client fold, exactly as a caller of the public API sees it: the last snapshot
  // `readUIMessageStream` yields. `error` chunks reach `onError` as `new Error(errorText)` and the
  // fold goes on; a chunk the fold cannot apply (a delta for an unknown id, an output for an
  // unknown tool call) errors the stream: it reaches `onError` too and the fold stops there.
  // Chunks that change nothing visible yield no snapshot: a `start-step` pushes its `step-start`
  // part without one, so it only shows once a later chunk (text, tool, ...) yields.
  const streamErrorTexts = new Set(chunks.filter((c) => c?.type === "error").map((c) => c.errorText));
  const streamErrors = [];
  let error = null;
  let message = null;
  const source = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(structuredClone(chunk));
      controller.close();
    },
  });
  try {
    const messages = readUIMessageStream({
      message: stream.message == null ? undefined : structuredClone(stream.message),
      stream: source,
      onError(e) {
        if (e?.constructor === Error && streamErrorTexts.has(e.message)) streamErrors.push(e.message);
        else error ??= describe(e);
      },
    });
    for await (const snapshot of messages) message = snapshot;
  } catch (e) {
    error ??= describe(e);
  }
  return { name: stream.name, invalid, unknownKeys, message, streamErrors, error };
}

async function main() {
  const input = JSON.parse(readFileSync(0, "utf8"));
  const schema = uiMessageChunkSchema();
  const declared = declaredChunkKeys();
  const results = [];
  for (const stream of input.streams) results.push(await check(stream, schema, declared));
  process.stdout.write(JSON.stringify({ aiVersion, results }));
}

main().catch((e) => {
  process.stderr.write(`${e?.stack ?? e}\n`);
  process.exit(1);
});
