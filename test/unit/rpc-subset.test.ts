import { describe, expect, it } from "vitest";
import { createRouterTransport } from "@connectrpc/connect";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import { ConfigRpc } from "../../src/rpc.js";
import { ListSandboxesRpc } from "../../src/rollout/select.js";
import { RolloutRecordRpc } from "../../src/rollout/record-rpc.js";
import { createConfigClient } from "../../src/index.js";
import { createFakeGateway } from "../support/fake-gateway.js";

describe("the SDK's subset of the OpenShell service", () => {
  it.each([
    ["the SDK's", ConfigRpc],
    ["the rollout module's", ListSandboxesRpc],
    ["the shared rollout record's", RolloutRecordRpc],
  ] as const)("describes each method of %s subset exactly as the generated service does", (_name, subset) => {
    expect(subset.typeName).toBe(OpenShell.typeName);
    expect(subset.methods.length).toBeGreaterThan(0);
    for (const m of subset.methods) {
      const real = OpenShell.methods.find((r) => r.name === m.name);
      expect(real, `OpenShell has no method ${m.name}`).toBeDefined();
      expect(m.localName).toBe(real!.localName);
      expect(m.methodKind).toBe(real!.methodKind);
      expect(m.input.typeName).toBe(real!.input.typeName);
      expect(m.output.typeName).toBe(real!.output.typeName);
      expect(m.idempotency).toBe(real!.idempotency);
      expect(m.parent).toBe(subset);
      expect((subset.method as Record<string, unknown>)[m.localName]).toBe(m);
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
