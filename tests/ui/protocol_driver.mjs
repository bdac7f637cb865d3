// An interactive browser for tests/ui/test_protocol_conformance.py: headless Chromium (the
// system one) driven by JSON commands on stdin, one a line; one JSON answer a line on stdout.
//
//   {"id": 1, "cmd": "open", "page": "a", "url": "http://…"}     a new tab (same browser profile);
//                                     "harness": false for another page (no wait for window.harness)
//   {"id": 2, "cmd": "eval", "page": "a", "js": "harness.status"}  → {"id": 2, "ok": true, "value": …}
//   {"id": 3, "cmd": "wait", "page": "a", "js": "…", "timeout": 10000}   until `js` is truthy → its value
//   {"id": 4, "cmd": "reload", "page": "a"}     {"cmd": "close", "page": "a"}
//   {"id": 5, "cmd": "frames", "page": "a"}     → {sent: [...], received: [...]} WebSocket frames so far
//   {"id": 6, "cmd": "console", "page": "a"}    → console lines and page errors so far
//   {"id": 7, "cmd": "quit"}
//
// Errors come back as {"id", "ok": false, "error"}; the browser stays up for the next command.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--disable-background-timer-throttling",
  "--disable-renderer-backgrounding",
  "--disable-backgrounding-occluded-windows",
];

const profile = mkdtempSync(join(tmpdir(), "think-protocol-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.argv[2],
  headless: true,
  args: FLAGS,
  viewport: { width: 1000, height: 800 },
  timeout: 30000,
  bypassCSP: true, // "wait" evaluates its expression, which the shipped page's CSP forbids
});
const pages = new Map();

function record(list, payload) {
  const text = typeof payload === "string" ? payload : payload.toString("utf8");
  try {
    list.push(JSON.parse(text));
  } catch {
    list.push({ raw: text });
  }
}

async function open(name, url, harness = true) {
  const page = await context.newPage();
  const state = { page, frames: { sent: [], received: [] }, console: [] };
  page.on("console", (message) => state.console.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => state.console.push(`pageerror: ${error.message}`));
  page.on("websocket", (socket) => {
    socket.on("framesent", (event) => record(state.frames.sent, event.payload));
    socket.on("framereceived", (event) => record(state.frames.received, event.payload));
  });
  pages.set(name, state);
  await page.goto(url, { waitUntil: "load" });
  if (harness) await connected(page);
}

// The hook mounted, its socket is open and the server answered its resume probe. A message sent
// before that is lost by the stock hook: the connect transcript that follows replaces it.
async function connected(page) {
  await page.waitForFunction(() => window.harness && window.harness.ready && window.harness.opens >= 1
    && window.harness.synced >= 1, null,
    { timeout: 15000, polling: 10 });
}

function pageOf(command) {
  const state = pages.get(command.page);
  if (!state) throw new Error(`no page ${JSON.stringify(command.page)}`);
  return state;
}

async function handle(command) {
  switch (command.cmd) {
    case "open":
      await open(command.page, command.url, command.harness !== false);
      return null;
    case "eval":
      return await pageOf(command).page.evaluate(command.js);
    case "wait": {
      const handle = await pageOf(command).page.waitForFunction(command.js, null, {
        timeout: command.timeout ?? 15000,
        polling: 20,
      });
      return await handle.jsonValue();
    }
    case "reload": {
      const { page } = pageOf(command);
      await page.reload({ waitUntil: "load" });
      await connected(page);
      return null;
    }
    case "close": {
      const state = pageOf(command);
      pages.delete(command.page);
      await state.page.close();
      return null;
    }
    case "frames":
      return pageOf(command).frames;
    case "console":
      return pageOf(command).console;
    default:
      throw new Error(`unknown command ${JSON.stringify(command.cmd)}`);
  }
}

const lines = createInterface({ input: process.stdin });
console.log(JSON.stringify({ id: 0, ok: true, value: "ready" }));
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  if (command.cmd === "quit") break;
  try {
    const value = await handle(command);
    console.log(JSON.stringify({ id: command.id, ok: true, value: value ?? null }));
  } catch (error) {
    console.log(JSON.stringify({ id: command.id, ok: false, error: String(error?.stack ?? error) }));
  }
}
await context.close().catch(() => {});
rmSync(profile, { recursive: true, force: true });
process.exit(0);
