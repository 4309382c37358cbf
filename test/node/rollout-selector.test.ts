// A rollout's labelSelector in kubectl's syntax (the parser the command line and the dashboard
// share): set forms select what they say, the gateway is sent only the part it evaluates, an
// equality-only selector is left to the gateway as before, and the state keeps the canonical text.

import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createRouterTransport } from "@connectrpc/connect";
import { createConfigClient } from "../../src/index.js";
import { rollout } from "../../src/rollout.js";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import { ConfigUpdateOperationSchema, ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { FAST, samplePolicy } from "./helpers.js";

/** A gateway with dev, staging and prod (labelled env=<name>, prod also legacy=yes) that ignores label selectors, as some do. */
function fleetGateway() {
  const listed: string[] = [];
  const committed: string[] = [];
  const sandboxes: { metadata: { name: string; labels: Record<string, string> } }[] = [
    { metadata: { name: "dev", labels: { env: "dev", team: "a" } } },
    { metadata: { name: "staging", labels: { env: "staging", team: "a" } } },
    { metadata: { name: "prod", labels: { env: "prod", team: "a", legacy: "yes" } } },
  ];
  const applied = (n: number) => create(ConfigUpdateOperationSchema, { operationId: `op-${n}`, state: State.APPLIED, outcome: Outcome.APPLIED });
  const transport = createRouterTransport((router) =>
    router.service(OpenShell, {
      async listSandboxes(req) {
        listed.push(req.labelSelector);
        return { sandboxes };
      },
      async updateConfig(req) {
        committed.push(req.sandbox);
        return { version: 2, policyHash: "sha256:2", operation: applied(committed.length) };
      },
    }),
  );
  return { client: createConfigClient({ ...FAST, transport }), listed, committed };
}

describe("a rollout's kubectl label selector", () => {
  it("rolls out to the sandboxes `env in (dev,staging)` matches, and only to them", async () => {
    const gw = fleetGateway();
    const result = await rollout(gw.client, { labelSelector: "env in ( dev , staging )", policy: samplePolicy() });
    expect(result.sandboxes.map((s) => s.sandbox)).toEqual(["dev", "staging"]);
    expect(gw.committed.sort()).toEqual(["dev", "staging"]);
    // The gateway evaluates only k=v: it is sent nothing it cannot read.
    expect(gw.listed).toEqual([""]);
    expect(result.state.labelSelector).toBe("env in (dev,staging)");
  });

  it("sends the equality part to the gateway and checks the rest on what it lists", async () => {
    const gw = fleetGateway();
    const result = await rollout(gw.client, { labelSelector: "team=a,!legacy,env!=staging", policy: samplePolicy() });
    expect(result.sandboxes.map((s) => s.sandbox)).toEqual(["dev"]);
    expect(gw.listed).toEqual(["team=a"]);
  });

  it("leaves an equality-only selector to the gateway, as before set forms existed", async () => {
    const gw = fleetGateway();
    const result = await rollout(gw.client, { labelSelector: "team = a", policy: samplePolicy() });
    expect(gw.listed).toEqual(["team=a"]);
    expect(result.sandboxes.map((s) => s.sandbox)).toEqual(["dev", "prod", "staging"]);
  });

  it("refuses a malformed selector before anything is listed or sent, naming labelSelector and what is wrong", () => {
    const gw = fleetGateway();
    expect(() => rollout(gw.client, { labelSelector: "env in (dev", policy: samplePolicy() })).toThrow('labelSelector "env in (dev": "env in (" is not closed by ")"');
    expect(gw.listed).toEqual([]);
    expect(gw.committed).toEqual([]);
  });
});
