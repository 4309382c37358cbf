// Small pieces: the outgoing message queue, reconnect backoff, log redaction and the TCP probe.

import { createServer } from "node:net";
import { create } from "@bufbuild/protobuf";
import { SupervisorMiddlewareServiceSchema } from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import { backoffDelay, sleep } from "../src/backoff.js";
import { isPermanentRejection } from "../src/connection.js";
import { createLogger, redact } from "../src/log.js";
import { parseHostPort, probeMiddlewareServices } from "../src/probe.js";
import { AsyncQueue } from "../src/queue.js";

describe("AsyncQueue", () => {
  it("delivers pushed items in order to a waiting consumer and ends after close", async () => {
    const q = new AsyncQueue<number>();
    const pending = q.next();
    q.push(1);
    q.push(2);
    q.close();
    expect(q.push(3)).toBe(false);
    expect(await pending).toEqual({ done: false, value: 1 });
    expect(await q.next()).toEqual({ done: false, value: 2 });
    expect(await q.next()).toEqual({ done: true, value: undefined });
  });

  it("implements throw() and return() by discarding what is queued, and hands out one iterator", async () => {
    const q = new AsyncQueue<string>();
    expect(q[Symbol.asyncIterator]()).toBe(q);
    q.push("a");
    const waiting = new AsyncQueue<string>();
    const p = waiting.next();
    expect(await q.throw(new Error("call aborted"))).toEqual({ done: true, value: undefined });
    expect(await q.next()).toEqual({ done: true, value: undefined });
    await waiting.return();
    expect(await p).toEqual({ done: true, value: undefined });
  });
});

describe("backoff", () => {
  it("uses full jitter below a ceiling that doubles from 250 ms and is capped at 30 s", () => {
    expect(backoffDelay(0, {}, () => 0.999999)).toBe(249);
    expect(backoffDelay(3, {}, () => 0.5)).toBe(1000);
    expect(backoffDelay(7, {}, () => 0.999999)).toBe(29_999);
    expect(backoffDelay(50, {}, () => 0.999999)).toBe(29_999);
    expect(backoffDelay(5, {}, () => 0)).toBe(0);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(2);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(1000);
    }
  });

  it("sleeps until aborted", async () => {
    const ac = new AbortController();
    const t = Date.now();
    setTimeout(() => ac.abort(), 20);
    await sleep(10_000, ac.signal);
    expect(Date.now() - t).toBeLessThan(1_000);
  });
});

describe("session rejection", () => {
  it("is permanent for missing capabilities (FAILED_PRECONDITION or a capability reason), otherwise retried", () => {
    expect(isPermanentRejection("whatever", 9 /* FAILED_PRECONDITION */)).toBe(true);
    expect(isPermanentRejection("supervisor must set supports_config_apply", undefined)).toBe(true);
    expect(isPermanentRejection("missing capabilities", 14)).toBe(true);
    expect(isPermanentRejection("sandbox not found", 5)).toBe(false);
    expect(isPermanentRejection("a newer session replaced this one", undefined)).toBe(false);
  });
});

describe("logging", () => {
  it("writes JSON lines and masks secret-named fields at any depth", () => {
    const lines: string[] = [];
    const log = createLogger({ sink: (l) => lines.push(l), level: "info" }).child({ sandbox: "dev" });
    log.debug("hidden");
    log.info("provider environment processed", { names: ["A"], values: ["s3cret"], nested: { token: "t0k", value: "v4l", ok: 1 } });
    expect(lines).toHaveLength(1);
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({ level: "info", msg: "provider environment processed", sandbox: "dev", names: ["A"], values: "[REDACTED]", nested: { token: "[REDACTED]", value: "[REDACTED]", ok: 1 } });
    expect(lines[0]).not.toMatch(/s3cret|t0k|v4l/);
  });

  it("says which levels it writes, so hot paths can skip building fields", () => {
    const log = createLogger({ sink: () => {}, level: "warn" }).child({ sandbox: "dev" });
    expect([log.enabled("debug"), log.enabled("info"), log.enabled("warn"), log.enabled("error")]).toEqual([false, false, true, true]);
    expect(createLogger({ sink: () => {} }).enabled("info")).toBe(true);
  });

  it("renders errors and bigints", () => {
    const e = Object.assign(new Error("nope"), { code: "ENOENT" });
    expect(redact({ err: e, n: 5n })).toEqual({ err: { name: "Error", message: "nope", code: "ENOENT" }, n: "5" });
  });
});

describe("middleware probe", () => {
  it("parses host:port endpoints in their usual spellings, without userinfo", () => {
    expect(parseHostPort("authz.internal:9000")).toEqual({ host: "authz.internal", port: 9000 });
    expect(parseHostPort("http://user:pw@authz.internal:9000/x")).toEqual({ host: "authz.internal", port: 9000 });
    expect(parseHostPort("[::1]:50051")).toEqual({ host: "::1", port: 50051 });
    expect(parseHostPort("no-port")).toBeUndefined();
    expect(parseHostPort("host:70000")).toBeUndefined();
  });

  it("reports only the services that refuse or are malformed, within the timeout", async () => {
    const open = createServer((c) => c.destroy());
    await new Promise<void>((r) => open.listen(0, "127.0.0.1", r));
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const svc = (name: string, grpcEndpoint: string) => create(SupervisorMiddlewareServiceSchema, { name, grpcEndpoint });
    try {
      const started = Date.now();
      const bad = await probeMiddlewareServices(
        [
          svc("ok", `127.0.0.1:${(open.address() as { port: number }).port}`),
          svc("refused", `127.0.0.1:${closedPort}`),
          svc("garbage", "not an endpoint"),
        ],
        300,
      );
      expect(bad.map((b) => b.name)).toEqual(["refused", "garbage"]);
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      open.close();
    }
  });
});
