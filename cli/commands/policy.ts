// `policy set` (replace a sandbox's policy from a YAML or JSON file; --dry-run: check it and show
// the diff, send nothing), `policy merge` (the SDK's merge operations, from flags or a file) and
// `policy get` (the desired policy and its load status, what the sandbox enforces, and the drift
// between them). `policy diff` and `policy history` are in policy-diff.ts and policy-history.ts.

import type { PolicyMergeOperationInput } from "openshell-config";
import { DEFAULT_WORKSPACE } from "openshell-config/raw";
import type { Command } from "../types.js";
import { enforcedText, enforcementJson } from "../enforcement.js";
import { EXIT } from "../outcome.js";
import { formatVersion, shortHash } from "../format.js";
import { describeMergeOperation, readMergeFile } from "../merge-ops.js";
import { readPolicyFile } from "../policy-file.js";
import { policyJson, policyYaml } from "../policy-yaml.js";
import { formatSettingValue, settingJson } from "../setting-format.js";
import { policyDryRun } from "./policy-diff.js";
import { runUpdate } from "./update.js";
import type { CommandContext } from "./context.js";

type PolicySet = Extract<Command, { name: "policy set" }>;
type PolicyGet = Extract<Command, { name: "policy get" }>;
type PolicyMerge = Extract<Command, { name: "policy merge" }>;

export async function policySet(ctx: CommandContext, cmd: PolicySet): Promise<number> {
  // Read and validate before any network traffic.
  const policy = await readPolicyFile(cmd.file);
  if (cmd.dryRun) return policyDryRun(ctx, cmd, policy);
  return runUpdate(ctx, {
    ...cmd,
    what: "policy",
    change: { policy },
    send: ({ idempotencyKey, signal, wait }) =>
      wait
        ? ctx.client.updatePolicy({ sandbox: cmd.sandbox, workspace: cmd.workspace, policy, idempotencyKey, signal, wait })
        : ctx.client.updatePolicy({ sandbox: cmd.sandbox, workspace: cmd.workspace, policy, idempotencyKey, signal }),
    subject: (res) => `policy v${res.policyVersion} of sandbox ${cmd.sandbox}`,
    rows: (res) => [
      ["sandbox", cmd.sandbox],
      ["workspace", cmd.workspace],
      ["policy version", formatVersion(res.policyVersion)],
      ["policy hash", res.policyHash ? shortHash(res.policyHash) : undefined],
    ],
    json: (res) => ({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? null, policyVersion: res.policyVersion, policyHash: res.policyHash }),
  });
}

export async function policyMerge(ctx: CommandContext, cmd: PolicyMerge): Promise<number> {
  const operations: PolicyMergeOperationInput[] = [...(cmd.file !== undefined ? await readMergeFile(cmd.file) : []), ...cmd.operations];
  const described = operations.map(describeMergeOperation);
  return runUpdate(ctx, {
    ...cmd,
    what: "policy",
    change: { mergeOperations: operations },
    send: ({ idempotencyKey, signal, wait }) => {
      const update = { sandbox: cmd.sandbox, workspace: cmd.workspace, mergeOperations: operations, idempotencyKey, signal };
      return wait ? ctx.client.updatePolicy({ ...update, wait }) : ctx.client.updatePolicy(update);
    },
    subject: (res) => `policy v${res.policyVersion} of sandbox ${cmd.sandbox}`,
    rows: (res) => [
      ["sandbox", cmd.sandbox],
      ["workspace", cmd.workspace],
      ["merged", described.join("\n")],
      ["policy version", formatVersion(res.policyVersion)],
      ["policy hash", res.policyHash ? shortHash(res.policyHash) : undefined],
    ],
    json: (res) => ({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? null, merged: described, policyVersion: res.policyVersion, policyHash: res.policyHash }),
  });
}

export async function policyGet(ctx: CommandContext, cmd: PolicyGet): Promise<number> {
  // Desired (policy, settings, the newest revision's load status) and enforced (the gateway's
  // record of the sandbox's latest result) side by side, with the drift between them.
  const cfg = await ctx.client.getConfig({ sandbox: cmd.sandbox, workspace: cmd.workspace, signal: ctx.signal });
  // The workspace the request named (the SDK names `default` when the caller names none).
  const workspace = cfg.workspace ?? DEFAULT_WORKSPACE;
  const { desired, latestRevision: latest, enforced, drift } = cfg;
  const global = desired.policySource === "global";
  const version = global ? desired.globalPolicyVersion : desired.policyVersion;
  // The newest revision's status describes the sandbox's own policy, not the global one.
  const revision = !global && latest?.version === version ? latest : undefined;
  const settings = Object.entries(desired.settings).sort(([a], [b]) => a.localeCompare(b));
  // What upstream's active_version says: the enforced sandbox policy version, 0 when none.
  const activeVersion = enforced.state === "enforcing" && enforced.policySource !== "global" ? enforced.policyVersion : 0;

  const { out } = ctx;
  const revisionNote =
    revision === undefined || revision.status === "loaded" || revision.status === "unspecified"
      ? ""
      : ` (${revision.status}${revision.loadError ? `: ${revision.loadError}` : ""})`;
  const pendingNote = cfg.pending && drift.length > 0 ? ` (v${version} is pending: this may resolve)` : "";
  out.fields([
    ["sandbox", cmd.sandbox],
    ["workspace", workspace],
    ["desired", `v${version}${global ? " (global policy)" : ""}${revisionNote}`],
    ["policy hash", desired.policyHash ? shortHash(desired.policyHash) : undefined],
    ["enforced", enforcedText(enforced, version, revision, drift)],
    ["drift", drift.length === 0 ? undefined : `${drift.join(", ")}${pendingNote}`],
    ["committed", revision?.createdAt?.toISOString()],
    ["loaded", revision?.loadedAt?.toISOString()],
    [
      "settings",
      settings.length === 0
        ? undefined
        : settings.map(([key, s]) => `${key} = ${formatSettingValue(s.value)} (${settingJson(s.value).type ?? "unset"}${s.scope === "global" ? ", global" : ""})`).join("\n"),
    ],
  ]);
  out.line();
  out.line(`# policy v${version} of sandbox ${cmd.sandbox} (desired)`);
  out.line(policyYaml(desired.policy).trimEnd());
  out.json({
    sandbox: cmd.sandbox,
    workspace,
    version,
    policyHash: desired.policyHash,
    source: desired.policySource,
    status: revision?.status ?? null,
    loadError: revision?.loadError ?? null,
    activeVersion,
    enforced: enforcementJson(enforced),
    drift,
    pending: cfg.pending,
    createdAt: revision?.createdAt ?? null,
    loadedAt: revision?.loadedAt ?? null,
    settings: Object.fromEntries(settings.map(([key, s]) => [key, { ...settingJson(s.value), scope: s.scope }])),
    policy: policyJson(desired.policy),
  });
  return EXIT.ok;
}
