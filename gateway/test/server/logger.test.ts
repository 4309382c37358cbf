// The logger never writes secrets: tokens, authorization headers, setting values, secrets.

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";

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
});
