// examples/free-port.ts: ports for servers that start a moment later come from below the kernel's
// ephemeral range, so an outgoing connection cannot be handed one in the meantime.

import { createServer } from "node:net";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { freePort } from "../../examples/free-port.js";

describe("freePort", () => {
  it("gives a port below the ephemeral range that can be listened on", async () => {
    const [ephemeralLow] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(Math.min(32_000, ephemeralLow!));
    }
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(ports[0], "127.0.0.1", resolve);
    });
    await new Promise((resolve) => srv.close(resolve));
  });

  it("passes over a port that is taken, and falls back to any free port when every draw is taken", async () => {
    const held = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => held.listen(port, "127.0.0.1", resolve));
    try {
      // The first draw is the held port, the second the one after it.
      const at = (p: number) => (p - 20_000 + 0.5) / 12_000;
      const draws = [at(port), at(port + 1)];
      expect(await freePort(() => draws.shift()!)).toBe(port + 1);
      // Every draw the held port: the kernel's choice, which is free and not the held one.
      const fallback = await freePort(() => at(port));
      expect(fallback).not.toBe(port);
      expect(fallback).toBeGreaterThan(0);
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
  });
});
