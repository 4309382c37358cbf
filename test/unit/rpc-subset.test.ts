import { describe, expect, it } from "vitest";
import { createRouterTransport } from "@connectrpc/connect";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import { ConfigRpc } from "../../src/rpc.js";
import { createConfigClient } from "../../src/index.js";
import { createFakeGateway } from "../support/fake-gateway.js";

describe("the SDK's subset of the OpenShell service", () => {
  it("describes each method exactly as the generated service does", () => {
    expect(ConfigRpc.typeName).toBe(OpenShell.typeName);
    expect(ConfigRpc.methods.length).toBeGreaterThan(0);
    for (const m of ConfigRpc.methods) {
      const real = OpenShell.methods.find((r) => r.name === m.name);
      expect(real, `OpenShell has no method ${m.name}`).toBeDefined();
      expect(m.localName).toBe(real!.localName);
      expect(m.methodKind).toBe(real!.methodKind);
      expect(m.input.typeName).toBe(real!.input.typeName);
      expect(m.output.typeName).toBe(real!.output.typeName);
      expect(m.idempotency).toBe(real!.idempotency);
      expect(m.parent).toBe(ConfigRpc);
      expect(ConfigRpc.method[m.localName as keyof typeof ConfigRpc.method]).toBe(m);
    }
  });

  it("lets raw() reach methods outside the subset, with the client's token", async () => {
    const gw = createFakeGateway();
    gw.addSandbox("dev");
    let seen: string | null = null;
    const transport = createRouterTransport((router) =>
      router.service(OpenShell, {
        async health(_req, ctx) {
          seen = ctx.requestHeader.get("authorization");
          return { version: "test" };
        },
      }),
    );
    const client = createConfigClient({ transport, token: async () => "t0k" });
    const res = await client.raw(OpenShell).health({});
    expect(res.version).toBe("test");
    expect(seen).toBe("Bearer t0k");
  });
});
