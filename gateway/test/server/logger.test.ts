// The logger never writes secrets: tokens, authorization headers, setting values, secrets.

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, lazyChild } from "../../src/observability/logger.js";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  return { lines, destination };
}

describe("logger", () => {
  it("redacts tokens, authorization headers, setting values and secrets given in log objects", () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination, level: "info" });
    const secrets = ["tok-AAAA-1111", "Bearer tok-BBBB-2222", "tok-CCCC-3333", "val-DDDD-4444", "val-EEEE-5555", "sec-FFFF-6666", "tok-GGGG-7777"];
    log.info({ token: secrets[0], authorization: secrets[1] }, "top level");
    log.info({ principal: { name: "alice", token: secrets[2] } }, "nested token");
    log.info({ value: secrets[3], values: [secrets[4]] }, "setting values");
    log.warn({ provider: { name: "github", secret: secrets[5] } }, "provider");
    log.error({ req: { headers: { authorization: `Bearer ${secrets[6]}` } } }, "request");
    const out = lines.join("");
    expect(lines).toHaveLength(5);
    for (const secret of secrets) expect(out).not.toContain(secret);
    expect(out).toContain('"name":"alice"');
    expect(out).toContain("[redacted]");
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: "info", msg: "nested token", principal: { name: "alice", token: "[redacted]" } });
  });

  it("writes one JSON object per line and honours the level", () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination, level: "warn" });
    log.info("hidden");
    log.warn({ sandbox: "dev" }, "shown");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "warn", msg: "shown", sandbox: "dev", name: "openshell-gateway" });
  });

  it("makes a lazy child only when a line passes the level, and writes its bindings on every line", () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination, level: "warn" });
    let made = 0;
    const child = log.child.bind(log);
    log.child = ((...args: Parameters<typeof log.child>) => (made++, child(...args))) as typeof log.child;
    const session = lazyChild(log, { sandbox: "dev", session: "s-1", token: "tok-HHHH-8888" });
    session.info({ outcome: "APPLIED" }, "bootstrapped");
    session.debug({}, "hidden");
    expect(made).toBe(0);
    expect(lines).toHaveLength(0);
    session.warn({ updateId: "u-1" }, "not acknowledged");
    session.error({ bytes: 5 }, "too large");
    expect(made).toBe(1);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { level: "warn", msg: "not acknowledged", sandbox: "dev", session: "s-1", updateId: "u-1", token: "[redacted]" },
      { level: "error", msg: "too large", sandbox: "dev", session: "s-1", bytes: 5 },
    ]);
    expect(lines.join("")).not.toContain("tok-HHHH-8888");
  });
});
