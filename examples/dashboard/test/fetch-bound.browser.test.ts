// The bound on fetch answers in a real browser, the dashboard's: Debian's Chromium (headless,
// playwright-core) loads the SDK's source through Vite and calls a gateway stand-in served from
// the same origin. What Node's fetch does (test/node/fetch-bound.test.ts) is not proof of what a
// browser does: Chromium's arrayBuffer() turns a body's error into "Failed to fetch", so unary
// answers must be read by the SDK's own wrapper for the caller to see ResourceExhausted; a
// stream's reader carries the error as it is; a call within the bound still reads.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { createServer, type Plugin, type ViteDevServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { GRPC_WEB_OK, header, sandboxAnswer, watchEnvelope } from "../../../test/support/answer-bytes.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const CHROMIUM = "/usr/bin/chromium";
const DEFAULT_MAX = 64 * 1024 * 1024;

/** The gateway stand-in: each call answers as its x-scenario header says. */
const gateway: Plugin = {
  name: "gateway-stand-in",
  configureServer(server) {
    server.middlewares.use((req, res, next) => {
      if (!req.url?.startsWith("/openshell.v1.OpenShell/")) return next();
      req.resume();
      req.once("end", () => {
        switch (req.headers["x-scenario"]) {
          case "unary-300":
            res.writeHead(200, { "content-type": "application/proto" });
            res.write(sandboxAnswer(300).subarray(0, 100));
            setTimeout(() => res.end(sandboxAnswer(300).subarray(100)), 20);
            return;
          case "unary-301":
            res.writeHead(200, { "content-type": "application/proto" });
            res.write(sandboxAnswer(301).subarray(0, 300));
            // The last byte, then nothing: a browser that waited for the whole body would hang.
            setTimeout(() => res.write(sandboxAnswer(301).subarray(300)), 20);
            return;
          case "unary-length":
            res.writeHead(200, { "content-type": "application/proto", "content-length": String(DEFAULT_MAX + 1) });
            res.flushHeaders();
            return;
          case "unary-stall":
            res.writeHead(200, { "content-type": "application/proto" });
            res.write(Buffer.from([0x0a]));
            return;
          case "grpc-web-unary":
            res.writeHead(200, { "content-type": "application/grpc-web+proto" });
            res.end(Buffer.concat([header(200), sandboxAnswer(200), GRPC_WEB_OK]));
            return;
          case "stream": {
            res.writeHead(200, { "content-type": "application/connect+proto" });
            for (let i = 0; i < 20; i++) res.write(watchEnvelope(`op-${i}`));
            // Then a message one byte past the page's bound of 64, its header split in two.
            res.write(header(65).subarray(0, 3));
            setTimeout(() => res.write(header(65).subarray(3)), 20);
            return;
          }
          default:
            res.writeHead(404).end();
        }
      });
    });
  },
};

const MAIN = `
import { createConfigClient } from "openshell-config";
import { createWebTransport } from "openshell-config/transport/web";
import { OpenShell, workspaceScope } from "openshell-config/raw";

const failure = (err) => ({ code: err?.code, message: err?.rawMessage ?? String(err), name: err?.name });
window.bound = {
  async unary(scenario, options) {
    const { timeoutMs, ...transport } = options;
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: location.origin, ...transport }) }).raw(OpenShell);
    try {
      const res = await raw.getSandbox({ name: "dev", workspaceScope: workspaceScope() }, { headers: { "x-scenario": scenario }, timeoutMs: options.timeoutMs });
      return { ok: res.sandbox.hostKeyFingerprint.length };
    } catch (err) {
      return failure(err);
    }
  },
  async stream(readMaxBytes) {
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: location.origin, readMaxBytes }) }).raw(OpenShell);
    const seen = [];
    try {
      for await (const res of raw.watchConfigUpdateOperations({ sandbox: "dev", workspaceScope: workspaceScope() }, { headers: { "x-scenario": "stream" } })) seen.push(res.operation.operationId);
      return { seen };
    } catch (err) {
      return { seen, ...failure(err) };
    }
  },
};
document.body.dataset.ready = "yes";
`;

let vite: ViteDevServer | undefined;
let browser: Browser | undefined;
let page: Page;
let dir: string | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "osc-fetch-bound-"));
  writeFileSync(join(dir, "index.html"), `<!doctype html><html><body><script type="module" src="/main.js"></script></body></html>`);
  writeFileSync(join(dir, "main.js"), MAIN);
  vite = await createServer({
    configFile: false,
    root: dir,
    cacheDir: join(dir, ".vite"),
    logLevel: "warn",
    plugins: [gateway],
    resolve: {
      alias: [
        { find: /^openshell-config\/transport\/web$/, replacement: join(ROOT, "src/transport/web.ts") },
        { find: /^openshell-config\/raw$/, replacement: join(ROOT, "src/raw.ts") },
        { find: /^openshell-config$/, replacement: join(ROOT, "src/index.ts") },
      ],
    },
    server: { host: "127.0.0.1", port: 0, hmr: false, watch: null, fs: { allow: [ROOT, dir] } },
  });
  await vite.listen();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  page = await browser.newPage();
  await page.goto(vite.resolvedUrls!.local[0]!);
  await page.waitForSelector("body[data-ready=yes]", { state: "attached", timeout: 30_000 });
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([browser?.close(), vite?.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Result = { ok?: number; seen?: string[]; code?: number; message?: string };
const unary = (scenario: string, options: Record<string, unknown> = {}) =>
  page.evaluate(([s, o]) => (window as unknown as { bound: { unary(s: string, o: unknown): Promise<Result> } }).bound.unary(s, o), [scenario, options] as const);

describe("the fetch transport in Chromium", () => {
  it("reads a Connect unary answer of exactly readMaxBytes", async () => {
    expect(await unary("unary-300", { readMaxBytes: 300 })).toEqual({ ok: expect.any(Number) });
  });

  it("fails a Connect unary answer one byte past readMaxBytes with ResourceExhausted, without waiting for its end", async () => {
    expect(await unary("unary-301", { readMaxBytes: 300 })).toMatchObject({ code: Code.ResourceExhausted, message: "message size is larger than configured readMaxBytes 300" });
  });

  it("fails at once an answer whose Content-Length is past the default 64 MiB", async () => {
    expect(await unary("unary-length")).toMatchObject({ code: Code.ResourceExhausted, message: `message size is larger than configured readMaxBytes ${DEFAULT_MAX}` });
  });

  it("ends a unary call whose body stalls after the headers at its deadline", async () => {
    expect(await unary("unary-stall", { timeoutMs: 300 })).toMatchObject({ code: Code.DeadlineExceeded });
  });

  it("bounds each gRPC-Web message: 200 bytes read under a bound of 200, refused under 199", async () => {
    expect(await unary("grpc-web-unary", { protocol: "grpc-web", readMaxBytes: 200 })).toEqual({ ok: expect.any(Number) });
    expect(await unary("grpc-web-unary", { protocol: "grpc-web", readMaxBytes: 199 })).toMatchObject({ code: Code.ResourceExhausted, message: "message size 200 is larger than configured readMaxBytes 199" });
  });

  it("reads a stream past readMaxBytes in all, and fails the first message past it from its header", async () => {
    const result = await page.evaluate(() => (window as unknown as { bound: { stream(n: number): Promise<Result> } }).bound.stream(64));
    expect(result.seen).toEqual(Array.from({ length: 20 }, (_, i) => `op-${i}`));
    expect(result).toMatchObject({ code: Code.ResourceExhausted, message: "message size 65 is larger than configured readMaxBytes 64" });
  });
});
