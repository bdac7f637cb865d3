// Drives the chat page in headless Chromium for tests/ui, step by step.
//
//   node drive.mjs '<json>'     where json = {"chromium": path, "url": url, "steps": [...]}
//
// Each step is one object; the results of "text", "count", "attr" and "eval" steps are collected
// under their "as" name. Prints one JSON line: {"ok": true, "values": {...}, "frames": {...},
// "console": [...]} or {"ok": false, "error": "...", "step": n, ...} (and exits 1).
//
// "sockets" lists the WebSocket URLs the page opened, "open" those still open at the end, and
// "requests" the same-origin HTTP requests ("GET /path"), so a test can check the address the
// hooks used.
//
// Steps: goto {path?}; fill {selector, text}; press {selector?, key}; click {selector};
// waitFor {selector, state?, timeout?}; waitText {selector, text, timeout?};
// waitGone {selector, timeout?}; text {selector, as}; count {selector, as};
// attr {selector, name, as}; eval {js, as}; screenshot {path, fullPage?}; viewport {width, height};
// colorScheme {scheme}; sleep {ms}; waitSent {type, count?, timeout?} (until the page has sent that
// many WebSocket frames of that type); waitOpen {url, timeout?} (until a socket whose URL contains
// `url` is open); holdSocket {url} (before goto: what the server sends on sockets whose URL contains
// `url` is held back, the page's frames still go out) and releaseSocket (deliver what was held, in
// order, and stop holding).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const plan = JSON.parse(process.argv[2]);
const timeout = plan.timeout ?? 15000;
const profile = mkdtempSync(join(tmpdir(), "think-ui-chromium-"));

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
];

const frames = { sent: [], received: [] };
const sockets = [];
const openSockets = new Set();
const requests = [];
const consoleLines = [];
const values = {};
let context;
let page;
let stepIndex = -1;
let held = null; // {frames: [[route, message]], routes} while holdSocket is in force

function record(list, payload) {
  const text = typeof payload === "string" ? payload : payload.toString("utf8");
  try {
    list.push(JSON.parse(text));
  } catch {
    list.push({ raw: text });
  }
}

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: plan.chromium,
    headless: true,
    args: FLAGS,
    viewport: plan.viewport ?? { width: 1280, height: 860 },
    colorScheme: plan.colorScheme ?? "light",
    deviceScaleFactor: plan.deviceScaleFactor ?? 1,
    timeout: 30000,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(timeout);
  page.on("console", (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin === new URL(plan.url).origin) requests.push(`${request.method()} ${url.pathname}`);
  });
  page.on("websocket", (socket) => {
    sockets.push(socket.url());
    openSockets.add(socket);
    socket.on("close", () => openSockets.delete(socket));
    socket.on("framesent", (event) => record(frames.sent, event.payload));
    socket.on("framereceived", (event) => record(frames.received, event.payload));
  });

  for (const [index, step] of plan.steps.entries()) {
    stepIndex = index;
    const t = step.timeout ?? timeout;
    switch (step.action) {
      case "goto":
        await page.goto(new URL(step.path ?? "/", plan.url).toString(), { waitUntil: "load" });
        break;
      case "fill":
        await page.locator(step.selector).fill(step.text, { timeout: t });
        break;
      case "press":
        if (step.selector) await page.locator(step.selector).press(step.key, { timeout: t });
        else await page.keyboard.press(step.key);
        break;
      case "click":
        await page.locator(step.selector).first().click({ timeout: t });
        break;
      case "waitFor":
        await page.locator(step.selector).first().waitFor({ state: step.state ?? "visible", timeout: t });
        break;
      case "waitGone":
        await page.locator(step.selector).first().waitFor({ state: "detached", timeout: t });
        break;
      case "waitText":
        await page.waitForFunction(
          ([selector, text]) =>
            Array.from(document.querySelectorAll(selector)).some((el) => (el.textContent ?? "").includes(text)),
          [step.selector, step.text],
          { timeout: t },
        );
        break;
      case "text":
        values[step.as] = await page.locator(step.selector).allTextContents();
        break;
      case "count":
        values[step.as] = await page.locator(step.selector).count();
        break;
      case "attr":
        values[step.as] = await page.locator(step.selector).first().getAttribute(step.name, { timeout: t });
        break;
      case "setFiles": // pick files in a file input (paths on this machine)
        await page.locator(step.selector).first().setInputFiles(step.files, { timeout: t });
        break;
      case "grant": // browser permissions for the page's origin, e.g. ["clipboard-read", "clipboard-write"]
        await context.grantPermissions(step.permissions, { origin: new URL(plan.url).origin });
        break;
      case "eval":
        values[step.as] = await page.evaluate(step.js);
        break;
      case "screenshot":
        await page.screenshot({ path: step.path, fullPage: step.fullPage ?? false, animations: "disabled" });
        break;
      case "viewport":
        await page.setViewportSize({ width: step.width, height: step.height });
        break;
      case "colorScheme":
        await page.emulateMedia({ colorScheme: step.scheme });
        break;
      case "sleep":
        await page.waitForTimeout(step.ms);
        break;
      case "waitSent": {
        const deadline = Date.now() + t;
        const seen = () => frames.sent.filter((frame) => frame.type === step.type).length;
        while (seen() < (step.count ?? 1)) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${step.count ?? 1} ${step.type} frame(s)`);
          await page.waitForTimeout(20);
        }
        break;
      }
      case "waitOpen": {
        const deadline = Date.now() + t;
        const isOpen = () => [...openSockets].some((socket) => socket.url().includes(step.url));
        while (!isOpen()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for an open socket to ${step.url}`);
          await page.waitForTimeout(20);
        }
        break;
      }
      case "holdSocket":
        held = { frames: [] };
        await page.routeWebSocket((url) => url.toString().includes(step.url), (route) => {
          const server = route.connectToServer();
          server.onMessage((message) => {
            if (held) held.frames.push([route, message]);
            else route.send(message);
          });
        });
        break;
      case "releaseSocket": {
        const frames = held?.frames ?? [];
        held = null;
        for (const [route, message] of frames) route.send(message);
        break;
      }
      default:
        throw new Error(`unknown step action ${JSON.stringify(step.action)}`);
    }
  }
  const open = [...openSockets].map((socket) => socket.url());
  console.log(JSON.stringify({ ok: true, values, frames, sockets, open, requests, console: consoleLines }));
} catch (error) {
  // What the page showed when the step failed: its conversation's markup, for the report.
  const dom = await page
    ?.evaluate(() => document.querySelector(".messages")?.outerHTML ?? document.body?.outerHTML ?? "")
    .catch(() => "");
  console.log(
    JSON.stringify({
      ok: false,
      error: String(error?.stack ?? error),
      step: stepIndex,
      dom: (dom ?? "").slice(-6000),
      values,
      frames,
      sockets,
      requests,
      console: consoleLines,
    }),
  );
  process.exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
