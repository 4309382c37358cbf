// What each sandbox had before a rollout changed it, read right before its wave's first commit:
// the policy revision it enforced (else its desired one), or its own value of the rolled-out
// setting. A rollback returns it there. For a policy change to a large wave, one paged
// ListSandboxes answers for every sandbox whose status carries the gateway's enforcement record
// (our extension fields); the rest, and settings changes, read each sandbox's configuration with
// bounded concurrency.

import { toJson } from "@bufbuild/protobuf";
import type { SandboxStatus } from "../gen/openshell/v1/sandboxes_pb.js";
import { fromPolicyEnforcement } from "../enforcement.js";
import { listSandboxStatuses } from "./select.js";
import { mapLimit } from "./map-limit.js";
import type { ConfigClient } from "../client.js";
import type { SandboxConfig } from "../sandbox-config.js";
import { SettingValueSchema } from "../gen/openshell/sandbox/v1/sandbox_pb.js";
import { toSettingValue } from "../convert/setting-value.js";
import { toSdkError } from "../errors.js";
import type { RolloutChange, SandboxBefore } from "./state.js";

/** The setting key a settings change rolls out; undefined for a policy change. */
export function settingKeyOf(change: RolloutChange): string | undefined {
  return "key" in change && change.key !== undefined ? change.key : undefined;
}

/** What `cfg` says the sandbox had, for a rollout of `change`. */
export function beforeOf(cfg: SandboxConfig, change: RolloutChange): SandboxBefore {
  const key = settingKeyOf(change);
  if (key !== undefined) {
    const s = cfg.desired.settings[key];
    if (s?.scope !== "sandbox" || s.value === undefined) return {};
    return { settingValue: toJson(SettingValueSchema, toSettingValue(s.value)) };
  }
  const e = cfg.enforced;
  if (e.state === "enforcing" && e.policySource !== "global" && e.policyVersion > 0) return { policyVersion: e.policyVersion };
  return cfg.desired.policyVersion > 0 ? { policyVersion: cfg.desired.policyVersion } : {};
}

/** What a sandbox's status says it had, for a policy rollout; undefined when the status lacks the enforcement record. */
export function beforeOfStatus(status: SandboxStatus | undefined): SandboxBefore | undefined {
  if (status?.policyEnforcement === undefined) return undefined;
  const e = fromPolicyEnforcement(status.policyEnforcement);
  if (e.state === "enforcing" && e.policySource !== "global" && e.policyVersion > 0) return { policyVersion: e.policyVersion };
  return status.desiredPolicyVersion > 0 ? { policyVersion: status.desiredPolicyVersion } : {};
}

// Below this many sandboxes a wave reads each one (a canary of one should not list the fleet).
const LIST_FROM = 16;

/** Reads the before-state of every sandbox of `sandboxes`; an Error for those that could not be read. */
export async function captureBefore(
  client: ConfigClient,
  sandboxes: readonly string[],
  change: RolloutChange,
  opts: {
    readonly workspace: string | undefined;
    readonly labelSelector?: string | undefined;
    readonly concurrency: number;
    readonly signal: AbortSignal | undefined;
  },
): Promise<(SandboxBefore | Error)[]> {
  let listed: (SandboxBefore | undefined)[] = [];
  if (settingKeyOf(change) === undefined && sandboxes.length >= LIST_FROM) {
    try {
      const statuses = await listSandboxStatuses(client, opts.labelSelector, opts.workspace, opts.signal);
      listed = sandboxes.map((s) => beforeOfStatus(statuses.get(s)));
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      // The listing is only a shortcut: read each sandbox instead.
    }
  }
  return mapLimit(sandboxes, opts.concurrency, async (sandbox, i) => {
    const known = listed[i];
    if (known !== undefined) return known;
    try {
      const cfg = await client.getConfig({ sandbox, ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
      return beforeOf(cfg, change);
    } catch (err) {
      return toSdkError(err);
    }
  });
}
