// The lean path for unary gRPC calls (src/http/grpc-unary.ts) answers exactly as connect does: one
// real gateway (SQLite, auth, every interceptor) served twice, once with the lean path and once
// without, gets the same raw HTTP/2 requests, and each pair of answers must match: status,
// headers, body bytes and trailers. Also: what the lean path leaves to connect, a body that arrives
// a byte at a time, a call whose client goes away, and a request that can never be answered.

import { mkdtempSync, rmSync } from "node:fs";
import * as http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConfigUpdateWaitMode, CreateSandboxRequestSchema, GetSandboxRequestSchema, HealthRequestSchema, UpdateConfigRequestSchema, UpdateConfigResponseSchema } from "openshell-config/raw";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import type { RunningServer } from "../../src/server.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { policy } from "../rpc/fixtures.js";
import { fastPathCounts } from "../../src/http/grpc-unary.js";
import { serveGateway } from "../serve-gateway.js";
import { envelope, rawGrpcCall, type RawAnswer } from "./raw-grpc.js";

const TOKEN = "admin-token-0123456789";
const SCOPE = { selection: { case: "workspace" as const, value: "default" } };
const AUTH = parseAuthFile({ tokens: [{ token: TOKEN, principal: "alice", role: "admin", workspaces: ["default"] }] });

type Answer = RawAnswer;

let dir: string;
let store: Store;
let gateway: Gateway;
let fast: RunningServer;
let slow: RunningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "osc-grpc-unary-"));
  store = await openStore(`sqlite:${join(dir, "gateway.db")}`);
  const metrics = createMetrics();
  const logger = createLogger({ level: "silent" });
  gateway = createGateway({ store, logger, metrics, auth: AUTH });
  await gateway.start();
  fast = await serveGateway(gateway, logger, metrics);
  slow = await serveGateway(gateway, logger, metrics, { fastUnary: false, onShutdown: async () => {} });
  const created = await post(fast.url, "CreateSandbox", envelope(toBinary(CreateSandboxRequestSchema, create(CreateSandboxRequestSchema, { name: "dev", spec: { policy: policy(), template: { image: "ghcr.io/example/agent:1" } }, workspaceScope: SCOPE }))));
  expect(created.trailers, JSON.stringify(created.trailers)).toMatchObject({ "grpc-status": "0" });
});

afterAll(async () => {
  await slow?.close({ graceMs: 500 });
  await fast?.close({ graceMs: 500 });
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One raw gRPC call to `method` as the admin. */
function post(url: string, method: string, body: Buffer | Buffer[], headers: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
  return rawGrpcCall(url, body, { path: `/openshell.v1.OpenShell/${method}`, headers: { authorization: `Bearer ${TOKEN}`, ...headers } });
}

/** The same call against both servers: the answers, lean path first. */
async function both(method: string, body: Buffer | Buffer[], headers?: http2.OutgoingHttpHeaders): Promise<[Answer, Answer]> {
  const before = { ...fastPathCounts };
  const a = await post(fast.url, method, body, headers);
  const lean = { answered: fastPathCounts.answered - before.answered, handedOver: fastPathCounts.handedOver - before.handedOver };
  const b = await post(slow.url, method, body, headers);
  // The server without the lean path never takes a call.
  expect(fastPathCounts.answered - before.answered).toBe(lean.answered);
  expect(fastPathCounts.handedOver - before.handedOver).toBe(lean.handedOver);
  lastLean = lean;
  return [a, b];
}
/** What the lean path did with the last call of `both`: answered it, handed it to connect, or neither (0, 0: left it unread). */
let lastLean = { answered: 0, handedOver: 0 };

const health = envelope(toBinary(HealthRequestSchema, create(HealthRequestSchema, {})));
const getDev = envelope(toBinary(GetSandboxRequestSchema, create(GetSandboxRequestSchema, { name: "dev", workspaceScope: SCOPE })));

describe("the lean path for unary gRPC calls", () => {
  it("answers a call exactly as connect does, with and without an accepted response encoding and a timeout", async () => {
    for (const headers of [{}, { "grpc-accept-encoding": "gzip,br" }, { "grpc-accept-encoding": "identity" }, { "grpc-timeout": "5S" }, { "content-type": "application/grpc+proto" }]) {
      for (const [method, body] of [["Health", health], ["GetSandbox", getDev]] as const) {
        const [a, b] = await both(method, body, headers);
        expect(a.trailers["grpc-status"], `${method} ${JSON.stringify(headers)}`).toBe("0");
        expect(a, `${method} ${JSON.stringify(headers)}`).toEqual(b);
        expect(a.body.length).toBeGreaterThan(5);
        expect(lastLean).toEqual({ answered: 1, handedOver: 0 });
      }
    }
  });

  it("answers errors exactly as connect does: not found, a forbidden request, an invalid one, bytes that are not UTF-8, an unknown method's input", async () => {
    const missing = envelope(toBinary(GetSandboxRequestSchema, create(GetSandboxRequestSchema, { name: "nope", workspaceScope: SCOPE })));
    const invalid = envelope(toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", policy: policy(), global: true })));
    const empty = envelope(toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", workspaceScope: SCOPE })));
    // GetSandboxRequest.name (field 1) holding 0xff: not UTF-8.
    const notUtf8 = envelope(Buffer.from([0x0a, 0x02, 0xff, 0xfe]));
    // A length that runs past the end of the message.
    const truncated = envelope(Buffer.from([0x0a, 0x09, 0x61]));
    for (const [method, body, code] of [
      ["GetSandbox", missing, "5"],
      ["UpdateConfig", invalid, "7"],
      ["UpdateConfig", empty, "3"],
      ["GetSandbox", notUtf8, "3"],
      ["GetSandbox", truncated, "3"],
    ] as const) {
      const [a, b] = await both(method, body);
      expect(a.trailers["grpc-status"], `${method} ${JSON.stringify(a.trailers)}`).toBe(code);
      expect(a).toEqual(b);
      expect(lastLean).toEqual({ answered: 1, handedOver: 0 });
    }
  });

  it("refuses a call without credentials exactly as connect does", async () => {
    const [a, b] = await both("GetSandbox", getDev, { authorization: "Bearer wrong-token-0123456789" });
    expect(a.trailers["grpc-status"] ?? a.headers["grpc-status"]).toBe("16");
    expect(a).toEqual(b);
  });

  it("leaves what is not one plain envelope to connect, which answers as it always did", async () => {
    // Handed over once read (1), or left unread (0).
    const cases: [string, Buffer | Buffer[], 0 | 1, http2.OutgoingHttpHeaders?][] = [
      ["two envelopes", Buffer.concat([health, health]), 1],
      ["an empty body", Buffer.alloc(0), 1],
      ["half an envelope header", health.subarray(0, 3), 1],
      ["an envelope cut short", getDev.subarray(0, getDev.length - 1), 1],
      ["a compressed flag without an encoding", envelope(Buffer.from([]), 1), 1],
      ["a gzip body", envelope(gzipSync(getDev.subarray(5)), 1), 0, { "grpc-encoding": "gzip" }],
      ["an unknown encoding", getDev, 0, { "grpc-encoding": "snappy" }],
      ["an invalid timeout", getDev, 0, { "grpc-timeout": "soon" }],
      ["JSON", Buffer.from(envelope(Buffer.from('{"name":"dev"}'))), 0, { "content-type": "application/grpc+json" }],
    ];
    for (const [what, body, handedOver, headers] of cases) {
      const [a, b] = await both(what === "two envelopes" ? "Health" : "GetSandbox", body, headers);
      expect(a, what).toEqual(b);
      // A gzip body is a valid call (connect's to read); every other one is refused.
      if (what === "a gzip body") expect(a.trailers["grpc-status"]).toBe("0");
      else expect(a.trailers["grpc-status"] ?? a.headers["grpc-status"], what).not.toBe("0");
      expect(lastLean, what).toEqual({ answered: 0, handedOver });
    }
  });

  it("refuses an envelope larger than the read bound from its header, as connect does", async () => {
    const head = Buffer.alloc(5);
    head.writeUInt32BE(64 * 1024 * 1024, 1);
    const [a, b] = await both("GetSandbox", [head, Buffer.alloc(1024)]);
    expect(a.trailers["grpc-status"]).toBe("8");
    expect(a).toEqual(b);
    expect(lastLean).toEqual({ answered: 0, handedOver: 1 });
  });

  it("bounds a call without credentials (Health) to 64 KiB, and answers one within it, as connect does", async () => {
    // Health takes no fields: an unknown bytes field (15) of n bytes is a valid request.
    const padded = (n: number) => envelope(Buffer.concat([Buffer.from([0x7a, 0x80 | (n & 0x7f), 0x80 | ((n >>> 7) & 0x7f), n >>> 14]), Buffer.alloc(n, 0x61)]));
    for (const [n, code, lean] of [
      [60 * 1024, "0", { answered: 1, handedOver: 0 }],
      [100 * 1024, "8", { answered: 0, handedOver: 1 }],
    ] as const) {
      const [a, b] = await both("Health", padded(n), { authorization: "" });
      expect(a.trailers["grpc-status"], `${n}`).toBe(code);
      expect(a).toEqual(b);
      expect(lastLean).toEqual(lean);
    }
  });

  it("reads a body that arrives a byte at a time", async () => {
    const bytes = [...getDev].map((b) => Buffer.from([b]));
    const [a, b] = await both("GetSandbox", bytes);
    expect(a.trailers["grpc-status"]).toBe("0");
    expect(a).toEqual(b);
    expect(lastLean).toEqual({ answered: 1, handedOver: 0 });
  });

  it("commits a waited update and answers it as connect answers one, field for field but the operation's own", async () => {
    const update = (key: string) =>
      envelope(toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", policy: policy({ x: `${key}.example.com` }), idempotencyKey: key, workspaceScope: SCOPE })));
    const a = await post(fast.url, "UpdateConfig", update("lean-1"));
    const b = await post(slow.url, "UpdateConfig", update("connect-1"));
    expect(a.trailers).toEqual(b.trailers);
    expect(a.headers).toEqual(b.headers);
    expect(a.trailers["grpc-status"]).toBe("0");
    // The same key again on the lean path: the same operation, not a second revision.
    const again = await post(fast.url, "UpdateConfig", update("lean-1"));
    const first = fromBinary(UpdateConfigResponseSchema, a.body.subarray(5));
    const retried = fromBinary(UpdateConfigResponseSchema, again.body.subarray(5));
    expect(first.operation?.operationId).toMatch(/.+/);
    expect(retried.operation?.operationId).toBe(first.operation?.operationId);
    expect(retried.version).toBe(first.version);
  });

  it("aborts the handler's signal when the client goes away, and the gateway keeps serving", async () => {
    const session = http2.connect(fast.url);
    const waited = envelope(
      toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", policy: policy({ y: "gone.example.com" }), waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, workspaceScope: SCOPE })),
    );
    const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/UpdateConfig", "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${TOKEN}` });
    req.on("error", () => {});
    req.end(waited);
    // No supervisor: the wait holds until the client resets the stream.
    await expect.poll(() => gateway.deps.waiters.active, { timeout: 5_000 }).toBeGreaterThan(0);
    const before = gateway.deps.waiters.active;
    req.close(http2.constants.NGHTTP2_CANCEL);
    await expect.poll(() => gateway.deps.waiters.active, { timeout: 5_000 }).toBeLessThan(before);
    session.close();
    const [a, b] = await both("Health", health);
    expect(a).toEqual(b);
  });
});
