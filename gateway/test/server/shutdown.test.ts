// Graceful shutdown: in-flight calls finish, new connections are refused, the gateway's shutdown
// hook runs, and calls that outlive the grace period are ended.

import * as net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { openShell, sdkTransports, SLEEP_HEADER, startTestServer, type TestServer } from "./harness.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 200 });
  t = undefined;
});

function connectRaw(port: number): Promise<"connected" | "refused"> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", () => resolve("refused"));
  });
}

async function until(predicate: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error("condition not reached");
    await sleep(5);
  }
}

describe("graceful shutdown", () => {
  it("lets in-flight calls on every protocol finish, runs onShutdown, then refuses new connections", async () => {
    const events: string[] = [];
    t = await startTestServer({
      onShutdown: async () => {
        events.push("onShutdown");
      },
    });
    const { server, probe } = t;
    const transports = sdkTransports(server.url);
    const calls = Object.entries(transports).map(([name, transport]) =>
      openShell(transport)
        .getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "400" } })
        .then((res) => {
          events.push(`done ${name}`);
          return res.settingsRevision;
        }),
    );
    await until(() => probe.inFlight === calls.length);
    const closed = server.close({ graceMs: 5_000 }).then(() => events.push("closed"));

    await sleep(50);
    expect(events).toEqual(["onShutdown"]);
    expect(await connectRaw(server.port)).toBe("refused");

    expect(await Promise.all(calls)).toEqual(calls.map(() => 400n));
    await closed;
    expect(events.at(-1)).toBe("closed");
    expect(probe.aborted).toBe(0);

    const after = await openShell(createNodeTransport({ baseUrl: server.url, protocol: "grpc" }))
      .health({})
      .catch((err: unknown) => ConnectError.from(err));
    expect(after).toBeInstanceOf(ConnectError);
    expect((after as ConnectError).code).toBe(Code.Unavailable);
  });

  it("tells a busy HTTP/1.1 connection to close after its response", async () => {
    t = await startTestServer();
    const { server, probe } = t;
    const h1 = openShell(createNodeTransport({ baseUrl: server.url, protocol: "connect", httpVersion: "1.1" }));
    let connection: string | null = null;
    const slow = h1.getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "300" }, onHeader: (h) => (connection = h.get("connection")) });
    await until(() => probe.inFlight === 1);
    const closed = server.close({ graceMs: 5_000 });
    expect((await slow).settingsRevision).toBe(300n);
    expect(connection).toBe("close");
    await closed;
  });

  it("ends calls still running when the grace period is over, with UNAVAILABLE", async () => {
    let hookRan = false;
    t = await startTestServer({
      onShutdown: async () => {
        hookRan = true;
      },
    });
    const { server, probe } = t;
    const call = openShell(createNodeTransport({ baseUrl: server.url, protocol: "grpc" }))
      .getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "30000" } })
      .catch((err: unknown) => ConnectError.from(err));
    await until(() => probe.inFlight === 1);
    const started = Date.now();
    await server.close({ graceMs: 300 });
    const elapsed = Date.now() - started;
    expect(hookRan).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2_000);
    const result = await call;
    expect(result).toBeInstanceOf(ConnectError);
    expect((result as ConnectError).code).toBe(Code.Unavailable);
    expect(probe.aborted).toBe(1);
  });

  it("closes idle keep-alive connections at once instead of waiting for the grace period", async () => {
    t = await startTestServer();
    const { server } = t;
    for (const transport of Object.values(sdkTransports(server.url))) await openShell(transport).health({});
    const started = Date.now();
    await server.close({ graceMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("is idempotent: a second close waits for the same shutdown", async () => {
    let hooks = 0;
    t = await startTestServer({
      onShutdown: async () => {
        hooks++;
      },
    });
    await Promise.all([t.server.close(), t.server.close()]);
    await t.server.close();
    expect(hooks).toBe(1);
  });
});
