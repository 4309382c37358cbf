// What each sandbox had before a rollout changed it, read right before its wave's first commit:
// the policy revision it enforced (else its desired one), or its own value of the rolled-out
// setting. A rollback returns it there. Reads run with bounded concurrency.

import { toJson } from "@bufbuild/protobuf";
import type { ConfigClient } from "../client.js";
import type { SandboxConfig } from "../sandbox-config.js";
import { SettingValueSchema } from "../gen/openshell/sandbox/v1/sandbox_pb.js";
import { toSettingValue } from "../convert/setting-value.js";
import { toSdkError } from "../errors.js";
import type { RolloutChange, SandboxBefore } from "./state.js";

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

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

/** Reads the before-state of every sandbox of `sandboxes`; an Error for those that could not be read. */
export function captureBefore(
  client: ConfigClient,
  sandboxes: readonly string[],
  change: RolloutChange,
  opts: { readonly workspace: string | undefined; readonly concurrency: number; readonly signal: AbortSignal | undefined },
): Promise<(SandboxBefore | Error)[]> {
  return mapLimit(sandboxes, opts.concurrency, async (sandbox) => {
    try {
      const cfg = await client.getConfig({ sandbox, ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
      return beforeOf(cfg, change);
    } catch (err) {
      return toSdkError(err);
    }
  });
}
