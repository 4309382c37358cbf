// examples/free-port.ts: ports for servers that start a moment later come from below the kernel's
// ephemeral range, so an outgoing connection cannot be handed one in the meantime.

import { createServer, type Server } from "node:net";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { freePort } from "../../examples/free-port.js";

function listen(port: number): Promise<Server> {
  const srv = createServer();
  return new Promise((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(port, "127.0.0.1", () => resolve(srv));
  });
}
const close = (srv: Server) => new Promise((resolve) => srv.close(resolve));
/** The value of Math.random() that draws `port`. */
const draws = (port: number) => (port - 20_000 + 0.5) / 12_000;

describe("freePort", () => {
  it("gives distinct ports below the ephemeral range that can be listened on", async () => {
    const [ephemeralLow] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    const ports: number[] = [];
    for (let i = 0; i < 20; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(Math.min(32_000, ephemeralLow!));
    }
    await close(await listen(ports[0]!));
  });

  it("passes over a port that is taken, and one it gave before", async () => {
    const held = await listen(await freePort());
    const heldPort = (held.address() as { port: number }).port;
    try {
      // Draws: the held port, then the one given a moment ago, then whatever is free.
      const before = await freePort();
      const sequence = [draws(heldPort), draws(before)];
      const next = await freePort(() => sequence.shift() ?? Math.random());
      expect(sequence).toEqual([]);
      expect(next).not.toBe(heldPort);
      expect(next).not.toBe(before);
    } finally {
      await close(held);
    }
  });

  it("falls back to a port the kernel picks when every draw is taken", async () => {
    const held = await listen(await freePort());
    const heldPort = (held.address() as { port: number }).port;
    try {
      const fallback = await freePort(() => draws(heldPort));
      expect(fallback).not.toBe(heldPort);
      await close(await listen(fallback));
    } finally {
      await close(held);
    }
  });
});
