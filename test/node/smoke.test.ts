import { describe, expect, it } from "vitest";
import { createRouterTransport } from "@connectrpc/connect";
import { createConfigClient } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway, samplePolicy } from "../support/fake-gateway.js";

describe("smoke", () => {
  it("a waited policy update returns the applied completion", async () => {
    const gw = createFakeGateway({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }) });
    gw.addSandbox("dev");
    const client = createConfigClient({ transport: createRouterTransport(gw.routes) });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });
    expect(res.completion.state).toBe("applied");
    expect(res.policyVersion).toBe(2);
    expect(res.completion.completedAt).toBeInstanceOf(Date);
  });
});
