// A loopback port for a server that starts a moment later (the local stack, and the tests that
// start gateways and supervisors as processes). It comes from below Linux's ephemeral range
// (32768–60999 by default): a port the kernel handed out for a listen on port 0 is in that range,
// and once closed, any outgoing connection on the machine (a PostgreSQL client, an HTTP call) may
// be given it as its local port before the server listens there. A CI run lost a test that way.

import { createServer } from "node:net";

/** The range drawn from: registered ports, below the ephemeral range, above most fixed services. */
const LOW = 20_000;
const HIGH = 32_000;

/** Ports this process has handed out: two picks in a row never give the same one. */
const given = new Set<number>();

/**
 * A loopback port nothing listens on now and not handed out before by this process, drawn at
 * random from 20000–31999 (any free port if 50 draws find none). `random` is Math.random but for
 * tests. Also the port to use for "nothing listens there": one the kernel picked and freed may be
 * another process's next listen(0).
 */
export async function freePort(random: () => number = Math.random): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOW + Math.floor(random() * (HIGH - LOW));
    if (given.has(port) || !(await listens(port))) continue;
    given.add(port);
    return port;
  }
  return anyFreePort();
}

/** True when 127.0.0.1:`port` could be listened on just now. */
function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** A port the kernel picks (from the ephemeral range). */
function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
