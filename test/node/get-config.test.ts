// getConfig against in-memory gateways: the desired configuration next to what the sandbox
// enforces, from our gateway's enforcement record or from upstream's bare active_version, and the
// drift between the two.

import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createConfigClient, NotFoundError } from "../../src/index.js";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome,
  GetSandboxPolicyStatusResponseSchema,
  PolicyEnforcementSchema,
  PolicyEnforcementState,
  PolicyStatus,
  type GetSandboxPolicyStatusRequest,
  type GetSandboxPolicyStatusResponse,
} from "../../src/gen/openshell/v1/config_pb.js";
import {
  GetSandboxConfigResponseSchema,
  PolicySource,
  SettingScope,
  type GetSandboxConfigRequest,
} from "../../src/gen/openshell/sandbox/v1/sandbox_pb.js";

const observed = new Date("2026-12-01T09:30:00Z");

/** The desired side: policy v3 with two settings of different types. */
function desired(version = 3) {
  return create(GetSandboxConfigResponseSchema, {
    version,
    policyHash: `sha256:v${version}`,
    policySource: PolicySource.SANDBOX,
    configRevision: 77n,
    settingsRevision: 4n,
    settings: {
      log_level: { value: { value: { case: "stringValue", value: "debug" } }, scope: SettingScope.SANDBOX },
      max_procs: { value: { value: { case: "intValue", value: 64n } }, scope: SettingScope.GLOBAL },
    },
  });
}

function status(latest: PolicyStatus, over: { activeVersion?: number; enforcement?: MessageInitShape<typeof PolicyEnforcementSchema> } = {}) {
  return create(GetSandboxPolicyStatusResponseSchema, {
    revision: { version: 3, policyHash: "sha256:v3", status: latest, loadError: latest === PolicyStatus.FAILED ? 'protocol "ftp" is not supported' : "" },
    ...over,
  });
}

function clientOf(answer: { config?: () => ReturnType<typeof desired>; status: () => GetSandboxPolicyStatusResponse }) {
  const seen: { config: GetSandboxConfigRequest[]; status: GetSandboxPolicyStatusRequest[] } = { config: [], status: [] };
  const transport = createRouterTransport(({ service }) => {
    service(OpenShell, {
      getSandboxConfig(req) {
        seen.config.push(req);
        if (req.name !== "dev") throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
        return (answer.config ?? desired)();
      },
      getSandboxPolicyStatus(req) {
        seen.status.push(req);
        return answer.status();
      },
    });
  });
  return { client: createConfigClient({ transport, retry: { retries: 0 } }), seen };
}

describe("getConfig", () => {
  it("reports a sandbox failing closed from the gateway's record, with the time, the reason and the drift", async () => {
    const { client } = clientOf({
      status: () =>
        status(PolicyStatus.FAILED, {
          activeVersion: 0,
          enforcement: create(PolicyEnforcementSchema, {
            state: PolicyEnforcementState.FAILED_CLOSED,
            reportedPolicyVersion: 3,
            outcome: ConfigApplyOutcome.FAILED_CLOSED,
            reason: 'protocol "ftp" is not supported',
            observedTime: timestampFromDate(observed),
          }),
        }),
    });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.enforced).toEqual({
      state: "failed-closed",
      source: "gateway-record",
      reportedPolicyVersion: 3,
      outcome: "failed-closed",
      reason: 'protocol "ftp" is not supported',
      observedAt: observed,
    });
    expect(cfg.drift).toEqual(["failed-closed", "last-update-failed"]);
    expect(cfg.latestRevision).toMatchObject({ version: 3, status: "failed", loadError: 'protocol "ftp" is not supported' });
    expect(cfg.pending).toBe(false);
  });

  it("keeps each desired setting's type and scope", async () => {
    const { client } = clientOf({ status: () => status(PolicyStatus.LOADED) });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.desired).toMatchObject({ policyVersion: 3, policyHash: "sha256:v3", policySource: "sandbox", configRevision: 77n, settingsRevision: 4n });
    expect(cfg.desired.settings).toEqual({ log_level: { value: "debug", scope: "sandbox" }, max_procs: { value: 64n, scope: "global" } });
  });

  it("a sandbox that keeps the last known good after a rejected update is enforcing the older revision and behind", async () => {
    const { client } = clientOf({
      status: () =>
        status(PolicyStatus.FAILED, {
          activeVersion: 2,
          enforcement: create(PolicyEnforcementSchema, {
            state: PolicyEnforcementState.ENFORCING,
            policyVersion: 2,
            policyHash: "sha256:v2",
            policySource: PolicySource.SANDBOX,
            configRevision: 55n,
            settingsRevision: 4n,
            reportedPolicyVersion: 3,
            outcome: ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD,
            reason: "invalid",
            observedTime: timestampFromDate(observed),
          }),
        }),
    });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.enforced).toMatchObject({ state: "enforcing", policyVersion: 2, policyHash: "sha256:v2", degraded: false, outcome: "failed-retained-last-known-good" });
    expect(cfg.drift).toEqual(["behind", "last-update-failed"]);
  });

  it("a sandbox running exactly the desired revision has no drift, and a degraded apply says degraded", async () => {
    const { client } = clientOf({
      status: () =>
        status(PolicyStatus.LOADED, {
          activeVersion: 3,
          enforcement: create(PolicyEnforcementSchema, {
            state: PolicyEnforcementState.ENFORCING,
            policyVersion: 3,
            policyHash: "sha256:v3",
            policySource: PolicySource.SANDBOX,
            configRevision: 77n,
            reportedPolicyVersion: 3,
            outcome: ConfigApplyOutcome.DEGRADED,
            reason: "middleware 'audit' is unreachable",
          }),
        }),
    });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.enforced).toMatchObject({ state: "enforcing", policyVersion: 3, degraded: true, reason: "middleware 'audit' is unreachable" });
    expect(cfg.drift).toEqual([]);
  });

  it("a settings-only change not yet enforced is behind by its configuration fingerprint", async () => {
    const { client } = clientOf({
      status: () =>
        status(PolicyStatus.LOADED, {
          activeVersion: 3,
          enforcement: create(PolicyEnforcementSchema, { state: PolicyEnforcementState.ENFORCING, policyVersion: 3, policySource: PolicySource.SANDBOX, configRevision: 70n }),
        }),
    });
    expect((await client.getConfig({ sandbox: "dev" })).drift).toEqual(["behind"]);
  });

  it("against a gateway without the enforcement record, it falls back to upstream's active_version", async () => {
    const { client } = clientOf({ status: () => status(PolicyStatus.PENDING, { activeVersion: 2 }) });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.enforced).toEqual({
      state: "enforcing",
      source: "active-version",
      policyVersion: 2,
      policyHash: undefined,
      policySource: "sandbox",
      settingsRevision: undefined,
      configRevision: undefined,
      degraded: false,
      reportedPolicyVersion: 0,
      outcome: "unspecified",
      reason: undefined,
      observedAt: undefined,
    });
    expect(cfg.drift).toEqual(["behind"]);
    expect(cfg.pending).toBe(true);
  });

  it("with nothing reported yet the enforced state is unknown and the drift says unreported", async () => {
    const { client } = clientOf({ status: () => status(PolicyStatus.PENDING, { activeVersion: 0 }) });
    const cfg = await client.getConfig({ sandbox: "dev" });
    expect(cfg.enforced.state).toBe("unknown");
    expect(cfg.drift).toEqual(["unreported"]);
  });

  it("sends the upstream workspace scope on both reads, default when none is named", async () => {
    const { client, seen } = clientOf({ status: () => status(PolicyStatus.LOADED, { activeVersion: 3 }) });
    await client.getConfig({ sandbox: "dev" });
    await client.getConfig({ sandbox: "dev", workspace: "team-a" });
    const scopes = [...seen.config, ...seen.status].map((r) => r.workspaceScope?.selection);
    expect(scopes).toEqual([
      { case: "workspace", value: "default" },
      { case: "workspace", value: "team-a" },
      { case: "workspace", value: "default" },
      { case: "workspace", value: "team-a" },
    ]);
    expect(seen.status.map((r) => r.version)).toEqual([0, 0]);
  });

  it("an unknown sandbox is a NotFoundError", async () => {
    const { client } = clientOf({ status: () => status(PolicyStatus.LOADED) });
    await expect(client.getConfig({ sandbox: "nope" })).rejects.toBeInstanceOf(NotFoundError);
  });
});
