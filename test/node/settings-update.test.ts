import { describe, expect, it } from "vitest";
import { InvalidArgumentError, fromSettingValue, type SettingInput } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, setup } from "./helpers.js";

describe("updateSettings", () => {
  const values: [string, SettingInput, string, unknown][] = [
    ["a string", "debug", "stringValue", "debug"],
    ["a boolean", false, "boolValue", false],
    ["a safe integer number", 42, "intValue", 42n],
    ["a negative number", -7, "intValue", -7n],
    ["a bigint beyond 2^53", 2n ** 62n, "intValue", 2n ** 62n],
    ["bytes", new Uint8Array([0, 1, 254, 255]), "bytesValue", new Uint8Array([0, 1, 254, 255])],
  ];
  for (const [name, value, wireCase, wireValue] of values) {
    it(`an upsert of ${name} reaches the gateway as ${wireCase} with the exact value`, async () => {
      const { gw, client } = setup();
      const res = await client.updateSettings({ sandbox: "dev", key: "some_key", value });
      const req = gw.requests[0]!;
      expect(req.settingKey).toBe("some_key");
      expect(req.deleteSetting).toBe(false);
      expect(req.policy).toBeUndefined();
      expect(req.settingValue?.value.case).toBe(wireCase);
      expect(req.settingValue?.value.value).toEqual(wireValue);
      expect(fromSettingValue(req.settingValue)).toEqual(wireValue);
      expect(res.settingsRevision).toBe(1n);
      expect(typeof res.settingsRevision).toBe("bigint");
      expect(res.deleted).toBe(false);
      expect(res.handle.dimension).toBe("settings");
      expect(res.handle.policyVersion).toBeUndefined();
      expect(gw.commits).toEqual([{ sandbox: "dev", dimension: "settings", revision: "1" }]);
    });
  }

  it("a delete sends delete_setting without a value and reports deleted", async () => {
    const { gw, client } = setup();
    const res = await client.updateSettings({ sandbox: "dev", key: "log_level", delete: true });
    const req = gw.requests[0]!;
    expect(req.settingKey).toBe("log_level");
    expect(req.deleteSetting).toBe(true);
    expect(req.settingValue).toBeUndefined();
    expect(res.deleted).toBe(true);
    expect(res.settingsRevision).toBe(1n);
  });

  it("successive setting changes advance the settings revision as a bigint in the result and the target", async () => {
    const { client } = setup({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED }) });
    const first = await client.updateSettings({ sandbox: "dev", key: "a", value: "1", wait: true });
    const second = await client.updateSettings({ sandbox: "dev", key: "b", value: 2n, wait: true });
    expect(first.settingsRevision).toBe(1n);
    expect(second.settingsRevision).toBe(2n);
    expect(second.completion.state).toBe("applied");
    expect(second.completion.target).toMatchObject({ kind: "sandbox-config", settingsRevision: 2n, policyVersion: 1 });
  });

  it("a waited settings update is superseded by a newer settings update but not by a policy update", async () => {
    const { gw, client } = setup();
    const first = await client.updateSettings({ sandbox: "dev", key: "a", value: "1" });
    const waiting = client.awaitCompletion(first.handle, { timeoutMs: 2_000 });
    await client.updatePolicy({ sandbox: "dev", policy: { version: 1 } });
    expect((await client.getOperation(first.handle)).state).toBe("pending");
    await client.updateSettings({ sandbox: "dev", key: "a", value: "2" });
    expect((await waiting).state).toBe("superseded");
    expect(gw.commits.map((c) => c.dimension)).toEqual(["settings", "policy", "settings"]);
  });

  const invalid: [string, SettingInput | undefined, string][] = [
    ["a fractional number", 1.5, "value"],
    ["NaN", Number.NaN, "value"],
    ["a number beyond 2^53", 2 ** 60, "value"],
    ["a bigint beyond int64", 2n ** 63n, "value"],
  ];
  for (const [name, value, field] of invalid) {
    it(`${name} is rejected with InvalidArgumentError on ${field} before anything is sent`, async () => {
      const { gw, client } = setup();
      const err = await rejectionOf(client.updateSettings({ sandbox: "dev", key: "k", value: value! }));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe(field);
      expect(gw.calls.updateConfig).toBeUndefined();
    });
  }

  it("a value of an unsupported type, or a value together with delete, is rejected before anything is sent", async () => {
    const { gw, client } = setup();
    const objectValue = client.updateSettings({ sandbox: "dev", key: "k", value: { a: 1 } as unknown as string });
    await expect(objectValue).rejects.toMatchObject({ code: "invalid-argument", field: "value" });
    const both = client.updateSettings({ sandbox: "dev", key: "k", value: "x", delete: true } as never);
    await expect(both).rejects.toMatchObject({ code: "invalid-argument", field: "value" });
    const missingKey = client.updateSettings({ sandbox: "dev", key: "", value: "x" });
    await expect(missingKey).rejects.toMatchObject({ code: "invalid-argument", field: "key" });
    const missingSandbox = client.updateSettings({ sandbox: "", key: "k", value: "x" });
    await expect(missingSandbox).rejects.toMatchObject({ code: "invalid-argument", field: "sandbox" });
    expect(gw.calls.updateConfig).toBeUndefined();
  });
});
