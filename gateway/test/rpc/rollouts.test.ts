// The shared rollout record, read and written through the gateway: creating, reading by view,
// listing (filters, paging, all workspaces), who may do what, and the validation of every field.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import {
  allWorkspacesScope,
  type CreateRolloutRequestSchema,
  type UpdateRolloutRequestSchema,
  RolloutRecordPhase as Phase,
  RolloutView,
  UpdateConfigRequestSchema,
  workspaceScope,
} from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { rpcError } from "./fixtures.js";
import { createRequest, DRIVER, stateJson, updateRequest } from "./rollouts-fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

const codeOf = async (call: Promise<unknown>) => Code[(await rpcError(call)).code];

describe("create and get", () => {
  it("a created rollout starts at version 1, held by its driver, with the gateway's change hash", async () => {
    const before = Date.now();
    const req = createRequest("r-create", { leaseTtlMs: 20_000 });
    const { rollout } = await gw.raw("admin").createRollout(req);
    expect(rollout?.resourceVersion).toBe(1n);
    expect(rollout?.createdBy).toBe("alice");
    expect(rollout?.workspace).toBe("default");
    expect(rollout?.approvals).toEqual([]);
    expect(rollout?.lease?.holder).toBe(DRIVER);
    expect(rollout?.lease?.principal).toBe("alice");
    const expire = Number(rollout!.lease!.expireTime!.seconds) * 1000;
    expect(expire).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 19_000);
    expect(expire).toBeLessThanOrEqual(Date.now() + 21_000);
    const hash = createHash("sha256").update(toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, req.rollout!.request!))).digest("hex");
    expect(rollout?.changeHash).toBe(hash);
    expect(rollout?.summary?.wavesTotal).toBe(3);
  });

  it("a second create of the same id is ALREADY_EXISTS, naming the rollout", async () => {
    await gw.raw("admin").createRollout(createRequest("r-twice"));
    const err = await rpcError(gw.raw("admin").createRollout(createRequest("r-twice")));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe('rollout "r-twice" already exists');
  });

  it("the same id in another workspace is another rollout", async () => {
    await gw.raw("admin").createRollout(createRequest("r-ws"));
    const { rollout } = await gw.raw("admin").createRollout(createRequest("r-ws", { workspace: "team-a" }));
    expect(rollout?.workspace).toBe("team-a");
  });

  it("GetRollout's FULL view has the request and the state; SUMMARY and the default leave them out", async () => {
    const req = createRequest("r-views");
    await gw.raw("admin").createRollout(req);
    const full = (await gw.raw("user").getRollout({ id: "r-views", workspaceScope: workspaceScope(), view: RolloutView.FULL })).rollout!;
    expect(full.stateJson).toBe(req.rollout!.stateJson);
    expect(full.request?.annotations).toEqual({ rollout: "r-views" });
    expect(full.request?.policy?.networkPolicies).toHaveProperty("rviews");
    for (const view of [RolloutView.SUMMARY, RolloutView.UNSPECIFIED]) {
      const r = (await gw.raw("user").getRollout({ id: "r-views", workspaceScope: workspaceScope(), view })).rollout!;
      expect(r.stateJson).toBe("");
      expect(r.request).toBeUndefined();
      expect(r.summary?.phase).toBe(Phase.RUNNING);
    }
  });

  it("an unknown rollout is NOT_FOUND, naming it", async () => {
    const err = await rpcError(gw.raw("user").getRollout({ id: "r-none", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe('rollout "r-none" not found');
  });
});

describe("lists", () => {
  let lg: TestGateway;
  beforeAll(async () => {
    lg = await startTestGateway();
    const admin = lg.raw("admin");
    const phases = [Phase.RUNNING, Phase.PAUSED, Phase.DONE, Phase.RUNNING, Phase.ROLLING_BACK];
    for (const [i, phase] of phases.entries()) {
      await admin.createRollout(createRequest(`l-${i}`, { summary: { phase }, labelSelector: i % 2 === 0 ? "env=dev" : "env=prod" }));
      await new Promise((r) => setTimeout(r, 3)); // distinct creation times
    }
    await admin.createRollout(createRequest("l-team-a", { workspace: "team-a" }));
    await lg.raw("otherAdmin").createRollout(createRequest("l-team-b", { workspace: "team-b" }));
  });
  afterAll(() => lg.close());

  const ids = (res: { rollouts: { id: string }[] }) => res.rollouts.map((r) => r.id);

  it("a workspace's list is newest first, in summary view", async () => {
    const res = await lg.raw("user").listRollouts({ workspaceScope: workspaceScope() });
    expect(ids(res)).toEqual(["l-4", "l-3", "l-2", "l-1", "l-0"]);
    expect(res.rollouts.every((r) => r.stateJson === "" && r.request === undefined)).toBe(true);
    expect(res.nextPageToken).toBe("");
  });

  it("phases and the exact label selector filter the list", async () => {
    const user = lg.raw("user");
    expect(ids(await user.listRollouts({ workspaceScope: workspaceScope(), phases: [Phase.RUNNING] }))).toEqual(["l-3", "l-0"]);
    expect(ids(await user.listRollouts({ workspaceScope: workspaceScope(), phases: [Phase.PAUSED, Phase.DONE] }))).toEqual(["l-2", "l-1"]);
    expect(ids(await user.listRollouts({ workspaceScope: workspaceScope(), labelSelector: "env=prod" }))).toEqual(["l-3", "l-1"]);
    expect(ids(await user.listRollouts({ workspaceScope: workspaceScope(), labelSelector: "env=pro" }))).toEqual([]);
  });

  it("pages follow each other without repeats until the token is empty", async () => {
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const res = await lg.raw("user").listRollouts({ workspaceScope: workspaceScope(), pageSize: 2, pageToken });
      expect(res.rollouts.length).toBeLessThanOrEqual(2);
      seen.push(...ids(res));
      pageToken = res.nextPageToken;
      pages++;
    } while (pageToken !== "" && pages < 10);
    expect(seen).toEqual(["l-4", "l-3", "l-2", "l-1", "l-0"]);
  });

  it("a bad page token and a negative page size are INVALID_ARGUMENT naming the field", async () => {
    const bad = await rpcError(lg.raw("user").listRollouts({ workspaceScope: workspaceScope(), pageToken: "garbage!" }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).toBe("page_token is not valid");
    const neg = await rpcError(lg.raw("user").listRollouts({ workspaceScope: workspaceScope(), pageSize: -1 }));
    expect(neg.code).toBe(Code.InvalidArgument);
    expect(neg.rawMessage).toContain("page_size");
  });

  it("all workspaces means the caller's: alice sees default and team-a, carol only team-b, root everything", async () => {
    const all = { workspaceScope: allWorkspacesScope() };
    expect(ids(await lg.raw("admin").listRollouts(all)).sort()).toEqual(["l-0", "l-1", "l-2", "l-3", "l-4", "l-team-a"]);
    expect(ids(await lg.raw("otherAdmin").listRollouts(all))).toEqual(["l-team-b"]);
    expect(ids(await lg.raw("platform").listRollouts(all))).toHaveLength(7);
  });

  it("a user of another workspace gets NOT_FOUND for its rollouts and list", async () => {
    const carol = lg.raw("otherAdmin");
    const get = await rpcError(carol.getRollout({ id: "l-0", workspaceScope: workspaceScope() }));
    expect(get.code).toBe(Code.NotFound);
    expect(get.rawMessage).toBe('rollout "l-0" not found');
    expect(await codeOf(carol.listRollouts({ workspaceScope: workspaceScope() }))).toBe("NotFound");
    // The same answer as for a rollout that does not exist: nothing leaks.
    expect((await rpcError(carol.getRollout({ id: "l-none", workspaceScope: workspaceScope() }))).rawMessage).toBe('rollout "l-none" not found');
  });
});

describe("who may act", () => {
  beforeAll(async () => {
    await gw.raw("admin").createRollout(createRequest("r-roles", { summary: { phase: Phase.PAUSED, awaitingApproval: true, wavesTotal: 2 } }));
  });

  it("a user can read and list but not create, update or approve (PERMISSION_DENIED, nothing changed)", async () => {
    const bob = gw.raw("user");
    expect((await bob.getRollout({ id: "r-roles", workspaceScope: workspaceScope() })).rollout?.id).toBe("r-roles");
    expect((await bob.listRollouts({ workspaceScope: workspaceScope() })).rollouts.map((r) => r.id)).toContain("r-roles");
    expect(await codeOf(bob.createRollout(createRequest("r-bob")))).toBe("PermissionDenied");
    expect(await codeOf(bob.updateRollout(updateRequest("r-roles", 1n, { phase: Phase.RUNNING }, { driver: "bob" })))).toBe("PermissionDenied");
    expect(await codeOf(bob.approveRollout({ id: "r-roles", wave: 0, workspaceScope: workspaceScope() }))).toBe("PermissionDenied");
    const after = (await bob.getRollout({ id: "r-roles", workspaceScope: workspaceScope() })).rollout!;
    expect(after.resourceVersion).toBe(1n);
    expect(after.approvals).toEqual([]);
    expect(await codeOf(bob.getRollout({ id: "r-bob", workspaceScope: workspaceScope() }))).toBe("NotFound");
  });

  it("an admin of another workspace cannot update or approve: NOT_FOUND", async () => {
    const carol = gw.raw("otherAdmin");
    expect(await codeOf(carol.updateRollout(updateRequest("r-roles", 1n, undefined, { driver: "carol" })))).toBe("NotFound");
    expect(await codeOf(carol.approveRollout({ id: "r-roles", wave: 0, workspaceScope: workspaceScope() }))).toBe("NotFound");
    expect(await codeOf(carol.createRollout(createRequest("r-carol")))).toBe("NotFound");
  });

  it("a supervisor token is refused every rollout RPC", async () => {
    const sup = gw.raw("supervisor");
    const calls = [
      sup.getRollout({ id: "r-roles", workspaceScope: workspaceScope() }),
      sup.listRollouts({ workspaceScope: workspaceScope() }),
      sup.createRollout(createRequest("r-sup")),
      sup.updateRollout(updateRequest("r-roles", 1n, undefined)),
      sup.approveRollout({ id: "r-roles", wave: 0, workspaceScope: workspaceScope() }),
    ];
    for (const call of calls) expect(await codeOf(call)).toBe("PermissionDenied");
    const watch = sup.watchRollouts({ id: "r-roles", workspaceScope: workspaceScope() });
    expect(await codeOf((async () => { for await (const _ of watch) break; })())).toBe("PermissionDenied");
  });
});

describe("validation", () => {
  const invalid = async (call: Promise<unknown>, field: string) => {
    const err = await rpcError(call);
    expect(Code[err.code], err.rawMessage).toBe("InvalidArgument");
    expect(err.rawMessage).toContain(field);
    return err.rawMessage;
  };
  const admin = () => gw.raw("admin");
  /** A valid create request with some of its rollout's fields replaced (possibly by invalid values). */
  const withRollout = (id: string, patch: Record<string, unknown>) => {
    const req = createRequest(id);
    const rollout = { ...req.rollout, ...patch } as NonNullable<typeof req.rollout>;
    // A state that agrees with the (replaced) summary and id, unless the patch gives its own.
    const state = "stateJson" in patch ? {} : { stateJson: stateJson(rollout.id!, rollout.summary) };
    return { ...req, rollout: { ...rollout, ...state } } as MessageInitShape<typeof CreateRolloutRequestSchema>;
  };

  it("ids must be 1-128 of letters, digits and . _ : - starting with a letter or digit", async () => {
    await invalid(admin().createRollout(withRollout("", {})), "rollout.id is required");
    await invalid(admin().createRollout(withRollout("-x", { id: "-x", stateJson: stateJson("-x") })), "rollout.id");
    await invalid(admin().createRollout(withRollout("a/b", { id: "a/b", stateJson: stateJson("a/b") })), "rollout.id");
    const long = "a".repeat(129);
    await invalid(admin().createRollout(withRollout(long, {})), "rollout.id");
    const ok = `r.v-1:2_${"a".repeat(120)}`;
    expect((await admin().createRollout(createRequest(ok))).rollout?.id).toBe(ok);
    await invalid(gw.raw("user").getRollout({ id: "no spaces", workspaceScope: workspaceScope() }), "id");
  });

  it("the driver is required, at most 200 characters, without control characters", async () => {
    await invalid(admin().createRollout({ ...createRequest("v-driver"), driver: "" }), "driver is required");
    await invalid(admin().createRollout({ ...createRequest("v-driver"), driver: "x".repeat(201) }), "driver");
    await invalid(admin().createRollout({ ...createRequest("v-driver"), driver: "cli\nother" }), "driver must not contain control characters");
    await invalid(admin().updateRollout({ ...updateRequest("v-driver", 1n, undefined), driver: "" }), "driver is required");
  });

  it("lease_ttl_ms is 0 or from 1000 to 300000", async () => {
    await invalid(admin().createRollout({ ...createRequest("v-ttl"), leaseTtlMs: 999 }), "lease_ttl_ms");
    await invalid(admin().createRollout({ ...createRequest("v-ttl"), leaseTtlMs: 300_001 }), "lease_ttl_ms");
    await invalid(admin().createRollout({ ...createRequest("v-ttl"), leaseTtlMs: -5 }), "lease_ttl_ms");
  });

  it("label_selector and change_summary have length limits", async () => {
    await invalid(admin().createRollout(withRollout("v-len", { labelSelector: "a".repeat(1025) })), "rollout.label_selector");
    await invalid(admin().createRollout(withRollout("v-len", { changeSummary: "a".repeat(201) })), "rollout.change_summary");
    await invalid(gw.raw("user").listRollouts({ workspaceScope: workspaceScope(), labelSelector: "a".repeat(1025) }), "label_selector");
  });

  it("the state must be a rollout@2 object of this id, without the request, in the summary's phase", async () => {
    const id = "v-state";
    await invalid(admin().createRollout(withRollout(id, { stateJson: "" })), "rollout.state_json is required");
    await invalid(admin().createRollout(withRollout(id, { stateJson: "{not json" })), "rollout.state_json is not JSON");
    await invalid(admin().createRollout(withRollout(id, { stateJson: "[1]" })), "rollout.state_json must be a JSON object");
    await invalid(admin().createRollout(withRollout(id, { stateJson: stateJson(id, undefined, { kind: "openshell-config/rollout@1" }) })), "kind");
    await invalid(admin().createRollout(withRollout(id, { stateJson: stateJson("other") })), "id must be");
    await invalid(admin().createRollout(withRollout(id, { stateJson: stateJson(id, undefined, { request: {} }) })), "must not hold \"request\"");
    await invalid(admin().createRollout(withRollout(id, { stateJson: stateJson(id, { phase: Phase.PAUSED }) })), "does not match rollout.summary.phase");
    await invalid(admin().createRollout(withRollout(id, { summary: undefined })), "rollout.summary is required");
    await invalid(admin().createRollout(withRollout(id, { summary: { phase: Phase.UNSPECIFIED } })), "rollout.summary.phase");
    expect(await codeOf(gw.raw("user").getRollout({ id, workspaceScope: workspaceScope() }))).toBe("NotFound");
  });

  it("text other operators' terminals print holds no control characters: change_summary, label_selector, gate_failure", async () => {
    const esc = "policy \u001b]0;pwned\u0007";
    await invalid(admin().createRollout(withRollout("v-ctl", { changeSummary: esc })), "rollout.change_summary must not contain control characters");
    await invalid(admin().createRollout(withRollout("v-ctl", { labelSelector: "env=dev\nowner=x" })), "rollout.label_selector must not contain control characters");
    const summary = { phase: Phase.RUNNING, wavesTotal: 3, gateFailure: "wave 1: \u001b[2J" };
    await invalid(admin().createRollout(withRollout("v-ctl", { summary })), "rollout.summary.gate_failure must not contain control characters");
    expect(await codeOf(gw.raw("user").getRollout({ id: "v-ctl", workspaceScope: workspaceScope() }))).toBe("NotFound");
  });

  it("a summary's counts are not negative, its waves done within at most 1000 waves, its gate failure at most 1024 characters", async () => {
    const id = "v-summary";
    const base = { phase: Phase.RUNNING, wavesTotal: 3 };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, sent: -1 }, "rollout.summary.sent must not be negative; got -1"],
      [{ ...base, wavesDone: 4 }, "rollout.summary.waves_done (4) must not exceed waves_total (3)"],
      [{ ...base, wavesTotal: 1001 }, "rollout.summary.waves_total is 1001; a rollout has at most 1000 waves"],
      [{ ...base, gateFailure: "x".repeat(1025) }, "rollout.summary.gate_failure has 1025 characters; at most 1024 are allowed"],
      [{ ...base, result: 99 }, "rollout.summary.result 99 is not a RolloutRecordResult"],
      [{ ...base, awaitingApproval: true }, "rollout.summary.awaiting_approval needs phase PAUSED"],
    ];
    for (const [summary, message] of cases) {
      expect(await invalid(admin().createRollout(withRollout(id, { summary })), message)).toBe(message);
    }
    const edge = { ...base, wavesTotal: 1000, wavesDone: 1000, gateFailure: "x".repeat(1024) };
    expect((await admin().createRollout(withRollout(id, { summary: edge }))).rollout?.summary?.wavesTotal).toBe(1000);
  });

  it("a state of 8 MiB is kept and read back whole; one byte more is RESOURCE_EXHAUSTED naming the field, and nothing is created", async () => {
    const sized = (id: string, bytes: number) => {
      const summary = createRequest(id).rollout!.summary;
      const empty = stateJson(id, summary, { pad: "" });
      return stateJson(id, summary, { pad: "x".repeat(bytes - empty.length) });
    };
    const MiB = 1024 * 1024;
    const gwBig = await startTestGateway("sqlite", { limits: { maxMessageBytes: 16 * MiB } });
    try {
      const big = gwBig.raw("admin");
      await big.createRollout(withRollout("v-8mib", { stateJson: sized("v-8mib", 8 * MiB) }));
      const full = (await big.getRollout({ id: "v-8mib", workspaceScope: workspaceScope(), view: RolloutView.FULL })).rollout!;
      expect(full.stateJson.length).toBe(8 * MiB);
      const err = await rpcError(big.createRollout(withRollout("v-over", { stateJson: sized("v-over", 8 * MiB + 1) })));
      expect([Code[err.code], err.rawMessage]).toEqual(["ResourceExhausted", `rollout.state_json is ${8 * MiB + 1} bytes; at most ${8 * MiB} (8 MiB) are allowed`]);
      expect(await codeOf(big.getRollout({ id: "v-over", workspaceScope: workspaceScope() }))).toBe("NotFound");
    } finally {
      await gwBig.close();
    }
    // At the default 4 MiB message limit the request limit refuses a larger state first.
    const err = await rpcError(admin().createRollout(withRollout("v-4mib", { stateJson: sized("v-4mib", 4 * MiB) })));
    expect(Code[err.code]).toBe("ResourceExhausted");
    expect(err.rawMessage).toMatch(/^request message is \d+ bytes; the gateway accepts at most 4194304 bytes$/);
    expect(await codeOf(gw.raw("user").getRollout({ id: "v-4mib", workspaceScope: workspaceScope() }))).toBe("NotFound");
  });

  it("the request template names no sandbox nor key and holds exactly one change", async () => {
    const base = createRequest("v-req").rollout!.request!;
    await invalid(admin().createRollout(withRollout("v-req", { request: undefined })), "rollout.request is required");
    await invalid(admin().createRollout(withRollout("v-req", { request: { ...base, sandbox: "dev" } })), "rollout.request.sandbox");
    await invalid(admin().createRollout(withRollout("v-req", { request: { ...base, idempotencyKey: "k" } })), "rollout.request.idempotency_key");
    await invalid(admin().createRollout(withRollout("v-req", { request: { annotations: { a: "b" } } })), "exactly one of policy, merge_operations and setting_key");
    await invalid(admin().createRollout(withRollout("v-req", { request: { ...base, settingKey: "log_level" } })), "exactly one of");
    const setting = await admin().createRollout(withRollout("v-req-setting", { id: "v-req-setting", request: { settingKey: "log_level", settingValue: { value: { case: "stringValue", value: "debug" } } } }));
    expect(setting.rollout?.changeHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("the summary says what the state says: its waves, the wave it is at, and whether it waits for an approval", async () => {
    const id = "v-agree";
    const summary = { phase: Phase.PAUSED, wavesTotal: 3, wavesDone: 1, awaitingApproval: true };
    const cases: [string, string][] = [
      [stateJson(id, { ...summary, wavesTotal: 4 }), "rollout.summary.waves_total is 3 but rollout.state_json has 4 waves"],
      [stateJson(id, { ...summary, wavesDone: 2 }), "rollout.summary.waves_done is 1 but rollout.state_json is at wave 2"],
      [stateJson(id, { ...summary, awaitingApproval: false }), 'rollout.summary.awaiting_approval is true but rollout.state_json does not wait for an approval (phase "paused" without pausedUntil)'],
    ];
    for (const [state, message] of cases) {
      expect(await invalid(admin().createRollout(withRollout(id, { summary, stateJson: state })), message)).toBe(message);
    }
    await admin().createRollout(withRollout(id, { summary }));
    // An update that names wave 1 in its summary while its state moved on to wave 2 changes nothing.
    const lying = { ...updateRequest(id, 1n, summary), stateJson: stateJson(id, { ...summary, wavesDone: 2 }) };
    const lie = await rpcError(admin().updateRollout(lying));
    expect([Code[lie.code], lie.rawMessage]).toEqual(["InvalidArgument", "summary.waves_done is 1 but state_json is at wave 2"]);
    expect((await gw.raw("user").getRollout({ id, workspaceScope: workspaceScope() })).rollout?.resourceVersion).toBe(1n);
  });

  it("an update needs its expected version, and a summary exactly when it has a state", async () => {
    await admin().createRollout(createRequest("v-upd"));
    await invalid(admin().updateRollout(updateRequest("v-upd", 0n, undefined)), "expected_resource_version is required");
    await invalid(admin().updateRollout({ ...updateRequest("v-upd", 1n, undefined), stateJson: stateJson("v-upd") }), "summary is required with state_json");
    const summaryOnly = { ...updateRequest("v-upd", 1n, undefined), summary: { phase: Phase.RUNNING } } as MessageInitShape<typeof UpdateRolloutRequestSchema>;
    await invalid(admin().updateRollout(summaryOnly), "summary is taken only with state_json");
    await invalid(admin().approveRollout({ id: "v-upd", wave: -1, workspaceScope: workspaceScope() }), "wave");
    await invalid(gw.raw("user").listRollouts({ workspaceScope: workspaceScope(), phases: [Phase.UNSPECIFIED] }), "phases[0]");
    await invalid(gw.raw("user").getRollout({ id: "v-upd", workspaceScope: workspaceScope(), view: 9 as RolloutView }), "view");
    await invalid(gw.raw("user").getRollout({ id: "v-upd" }), "workspace_scope is required");
    expect((await gw.raw("user").getRollout({ id: "v-upd", workspaceScope: workspaceScope() })).rollout?.resourceVersion).toBe(1n);
  });
});

describe("a gateway that does not track operations", () => {
  it("answers every rollout RPC UNIMPLEMENTED, as before the extension", async () => {
    const untracked = await startTestGateway("sqlite", { trackOperations: false });
    try {
      const admin = untracked.raw("admin");
      expect(await codeOf(admin.createRollout(createRequest("u-1")))).toBe("Unimplemented");
      expect(await codeOf(admin.getRollout({ id: "u-1", workspaceScope: workspaceScope() }))).toBe("Unimplemented");
      expect(await codeOf(admin.listRollouts({ workspaceScope: workspaceScope() }))).toBe("Unimplemented");
      expect(await codeOf(admin.approveRollout({ id: "u-1", wave: 0, workspaceScope: workspaceScope() }))).toBe("Unimplemented");
    } finally {
      await untracked.close();
    }
  });
});
