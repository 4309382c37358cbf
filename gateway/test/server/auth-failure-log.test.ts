// The failed-authentication log: every failure counted, at most N lines per window, then one line
// saying how many were left out; never the credential.

import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createAuthFailureLog } from "../../src/http/auth-failure-log.js";
import { createLogger } from "../../src/observability/logger.js";

let lines: Record<string, unknown>[];
const sink = () =>
  new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });

beforeEach(() => {
  lines = [];
  vi.useFakeTimers();
});
afterEach(() => vi.useRealTimers());

describe("the failed-authentication log", () => {
  it("logs the first 20 failures of a minute, then one line counting the rest when the minute is over", async () => {
    const registry = new Registry();
    const log = createAuthFailureLog({ logger: createLogger({ level: "info", destination: sink() }), registry });
    for (let i = 0; i < 500; i++) log.record({ peer: `10.0.0.${i % 250}:4000`, path: "/openshell.v1.OpenShell/UpdateConfig", reason: "invalid bearer token" });
    expect(lines).toHaveLength(20);
    expect(lines[0]).toMatchObject({ level: "warn", msg: "authentication failed", peer: "10.0.0.0:4000", reason: "invalid bearer token" });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(lines).toHaveLength(21);
    expect(lines[20]).toMatchObject({ level: "warn", suppressed: 480, msg: "480 more failed authentications were not logged (at most 20 lines per 60 s)" });
    expect(await registry.getSingleMetricAsString("openshell_gateway_authentication_failures_total")).toMatch(/ 500$/m);
    // A new window logs again.
    log.record({ peer: "10.0.0.1:4000", path: "/metrics", reason: "missing bearer token" });
    expect(lines).toHaveLength(22);
    log.close();
  });

  it("says nothing more when nothing was left out", async () => {
    const log = createAuthFailureLog({ logger: createLogger({ level: "info", destination: sink() }), perWindow: 3, windowMs: 1_000 });
    for (let i = 0; i < 3; i++) log.record({ peer: undefined, path: "/x", reason: "missing bearer token" });
    await vi.advanceTimersByTimeAsync(5_000);
    log.close();
    expect(lines).toHaveLength(3);
  });
});
