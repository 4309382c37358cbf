// tls.insecureSkipVerify: the gateway's certificate is not checked at all, the process is warned
// once however many transports ask for it, and a verifying transport never rides on an
// unverified connection. The warning is once per process, so this file is the only one that
// turns verification off.

import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "../../examples/tls/pki.js";
import { createConfigClient, TlsError } from "../../src/index.js";
import { createNodeTransport, INSECURE_WARNING_CODE } from "../../src/transport/node.js";
import { FAST, rejectionOf, samplePolicy } from "./helpers.js";
import { startTlsGateway, type TlsGateway } from "./tls-servers.js";

let pki: TestPki;
const servers: TlsGateway[] = [];

beforeAll(async () => {
  pki = await createTestPki();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function gateway(server: TestPki["server"]): Promise<TlsGateway> {
  const s = await startTlsGateway({ server });
  servers.push(s);
  return s;
}

describe("insecureSkipVerify", () => {
  it("reaches gateways whose CA it was not given and whose certificate names another host, and warns the process once for both transports", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => {
      if ((w as { code?: string }).code === INSECURE_WARNING_CODE) warnings.push(w);
    };
    process.on("warning", onWarning);
    try {
      const unknownCa = await gateway(pki.otherServer);
      const wrongName = await gateway(pki.wrongNameServer);
      for (const s of [unknownCa, wrongName]) {
        const c = createConfigClient({ ...FAST, transport: createNodeTransport({ baseUrl: s.url, tls: { insecureSkipVerify: true } }) });
        await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
        expect(s.gateway.commits).toHaveLength(1);
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.name).toBe("SecurityWarning");
      expect(warnings[0]!.message).toBe(
        `TLS certificate verification is off for ${new URL(unknownCa.url).host} (tls.insecureSkipVerify): anyone on the network path can impersonate the gateway and read what is sent to it`,
      );
    } finally {
      process.off("warning", onWarning);
    }
  });

  it.each(["2", "1.1"] as const)("a verifying transport to the same gateway opens its own connection and refuses it (HTTP/%s)", async (httpVersion) => {
    const s = await gateway(pki.otherServer);
    const options = { baseUrl: s.url, protocol: "connect", httpVersion } as const;
    const insecure = createConfigClient({ ...FAST, transport: createNodeTransport({ ...options, tls: { insecureSkipVerify: true } }) });
    await insecure.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const strict = createConfigClient({ ...FAST, transport: createNodeTransport({ ...options, tls: { ca: pki.ca.cert } }) });
    const err = await rejectionOf(strict.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("unknown-ca");
    expect(s.connections()).toBe(2);
  });

  it("false verifies as usual", async () => {
    const s = await gateway(pki.otherServer);
    const c = createConfigClient({ ...FAST, transport: createNodeTransport({ baseUrl: s.url, tls: { insecureSkipVerify: false } }) });
    const err = await rejectionOf(c.getOperation({ operationId: "op-1" }));
    expect((err as TlsError).reason).toBe("unknown-ca");
  });
});
