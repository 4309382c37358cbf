// More than 100 concurrent calls on one HTTP/2 connection: the server's stream limit must not
// make the 101st call wait for a free slot.

import { afterEach, describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { countingProxy, openShell, SLEEP_HEADER, startTestServer, type TestServer } from "./harness.js";

let t: TestServer | undefined;
let proxy: Awaited<ReturnType<typeof countingProxy>> | undefined;
afterEach(async () => {
  await proxy?.close();
  await t?.server.close({ graceMs: 500 });
  t = proxy = undefined;
});

describe("HTTP/2 multiplexing", () => {
  for (const protocol of ["grpc", "connect"] as const) {
    it(`runs 150 slow ${protocol} calls at the same time on a single HTTP/2 connection`, async () => {
      t = await startTestServer();
      proxy = await countingProxy(t.server.port);
      const client = openShell(createNodeTransport({ baseUrl: proxy.url, protocol, httpVersion: "2" }));
      const calls = Array.from({ length: 150 }, () => client.getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "500" } }));
      const results = await Promise.all(calls);
      expect(results.every((r) => r.settingsRevision === 500n)).toBe(true);
      // All 150 were inside the handler together: none waited for a stream slot.
      expect(t.probe.maxInFlight).toBe(150);
      expect(proxy.connections()).toBe(1);
    });
  }
});
