// An operation is committed already associated with the exact snapshot revision its supervisor
// will acknowledge, so the delivery needs no write to re-target it. If the commit's revision and
// the snapshot's ever drifted apart, updates would still complete (association re-targets), only
// slower: this test is what notices.

import { fromBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigSnapshotRevisionSchema } from "openshell-config/raw";
import { buildSnapshot } from "../../src/model/snapshot.js";
import { sandboxRevision, sameRevision } from "../../src/delivery/revisions.js";
import { globalPolicyVersion } from "../../src/rpc/sandbox-config.js";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy, sandboxRecord } from "../rpc/fixtures.js";

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function expectTargetsSnapshot(gw: TestGateway, operationId: string) {
  const op = (await gw.store.operation(operationId))!;
  const sb = (await sandboxRecord(gw, "dev"))!;
  const snap = await buildSnapshot(gw.store, sb, await globalPolicyVersion({ store: gw.store }));
  expect(op.target).toBeDefined();
  expect(sameRevision(fromBinary(ConfigSnapshotRevisionSchema, op.target!), sandboxRevision(snap))).toBe(true);
}

describe("commit-time association", () => {
  for (const backend of ["sqlite", "postgres"] as const) {
    it(`policy and setting updates are committed targeting their snapshot's exact revision, with global settings and a global policy (${backend})`, async () => {
      gw = await startTestGateway(backend);
      await createSandbox(gw, "dev");
      const sdk = gw.sdk();
      const p = await sdk.updatePolicy({ sandbox: "dev", policy: policy({ a: "a.example.com" }) });
      await expectTargetsSnapshot(gw, p.operation!.operationId);
      const s = await sdk.updateSettings({ sandbox: "dev", key: "log_level", value: "debug" });
      await expectTargetsSnapshot(gw, s.operation!.operationId);

      await gw.raw("platform").updateConfig({ global: true, settingKey: "telemetry", settingValue: { value: { case: "boolValue", value: false } } });
      const s2 = await sdk.updateSettings({ sandbox: "dev", key: "log_level", value: "info" });
      await expectTargetsSnapshot(gw, s2.operation!.operationId);

      await gw.raw("platform").updateConfig({ global: true, policy: policy({ g: "global.example.com" }) });
      const p2 = await sdk.updatePolicy({ sandbox: "dev", policy: policy({ b: "b.example.com" }) });
      await expectTargetsSnapshot(gw, p2.operation!.operationId);
    });
  }
});
