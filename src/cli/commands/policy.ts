// `policy set` (replace a sandbox's policy from a YAML or JSON file) and `policy get` (the current
// policy, its version and whether the sandbox loaded it).

import { create, toJson } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { stringify } from "yaml";
import { fromSettingValue } from "openshell-config";
import { OpenShell, PolicySource, PolicyStatus, SandboxPolicySchema, SettingScope, workspaceScope, type SandboxPolicyRevision } from "openshell-config/raw";
import type { Command } from "../args.js";
import { EXIT } from "../outcome.js";
import { readPolicyFile } from "../policy-file.js";
import { runUpdate } from "./update.js";
import { formatSettingValue } from "./settings.js";
import type { CommandContext } from "./context.js";

type PolicySet = Extract<Command, { name: "policy set" }>;
type PolicyGet = Extract<Command, { name: "policy get" }>;

export async function policySet(ctx: CommandContext, cmd: PolicySet): Promise<number> {
  // Read and validate before any network traffic.
  const policy = await readPolicyFile(cmd.file);
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
      ["policy version", String(res.policyVersion)],
      ["policy hash", res.policyHash || undefined],
    ],
    json: (res) => ({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? null, policyVersion: res.policyVersion, policyHash: res.policyHash }),
  });
}

const lower = (name: string | undefined) => (name ?? "unspecified").toLowerCase();
const date = (t: Timestamp | undefined) => (t === undefined ? undefined : timestampDate(t));

export async function policyGet(ctx: CommandContext, cmd: PolicyGet): Promise<number> {
  const raw = ctx.client.raw(OpenShell);
  const scope = workspaceScope(cmd.workspace);
  const cfg = await raw.getSandboxConfig({ name: cmd.sandbox, workspaceScope: scope }, { signal: ctx.signal });
  const global = cfg.policySource === PolicySource.GLOBAL;
  const version = global ? cfg.globalPolicyVersion : cfg.version;

  let revision: SandboxPolicyRevision | undefined;
  let activeVersion: number | undefined;
  if (version > 0) {
    try {
      const res = await raw.getSandboxPolicyStatus(
        global ? { global: true, version } : { sandbox: cmd.sandbox, version, workspaceScope: scope },
        { signal: ctx.signal },
      );
      revision = res.revision;
      activeVersion = res.activeVersion;
    } catch (err) {
      // The policy itself was readable; a missing status (e.g. no right to read the global one) is not fatal.
      const code = ConnectError.from(err).code;
      if (code !== Code.NotFound && code !== Code.PermissionDenied) throw err;
    }
  }
  const status = revision ? lower(PolicyStatus[revision.status]) : undefined;
  const source = lower(PolicySource[cfg.policySource]);
  const settings = Object.entries(cfg.settings).map(([key, s]) => ({ key, value: fromSettingValue(s.value), scope: lower(SettingScope[s.scope]) }));
  const policyJson = toJson(SandboxPolicySchema, cfg.policy ?? create(SandboxPolicySchema));

  const { out } = ctx;
  const statusText =
    status === undefined
      ? undefined
      : `${status}${revision?.loadError ? `: ${revision.loadError}` : ""}`;
  const activeText =
    activeVersion === undefined
      ? undefined
      : activeVersion === 0
        ? "none (the sandbox has not loaded any version yet)"
        : activeVersion === version
          ? `v${activeVersion}`
          : `v${activeVersion} (the sandbox still runs this version)`;
  out.fields([
    ["sandbox", cmd.sandbox],
    ["workspace", cfg.workspace || undefined],
    ["policy version", `v${version}${global ? " (global policy)" : ""}`],
    ["policy hash", cfg.policyHash || undefined],
    ["load status", statusText],
    ["active version", activeText],
    ["committed", date(revision?.createdTime)?.toISOString()],
    ["loaded", date(revision?.loadedTime)?.toISOString()],
    ["settings", settings.length === 0 ? undefined : settings.map((s) => `${s.key} = ${formatSettingValue(s.value)}${s.scope === "global" ? " (global)" : ""}`).join("\n")],
  ]);
  out.line();
  out.line(`# policy v${version} of sandbox ${cmd.sandbox}`);
  out.line(stringify(policyJson).trimEnd());
  out.json({
    sandbox: cmd.sandbox,
    workspace: cfg.workspace || null,
    version,
    policyHash: cfg.policyHash,
    source,
    status: status ?? null,
    loadError: revision?.loadError || null,
    activeVersion: activeVersion ?? null,
    createdAt: date(revision?.createdTime) ?? null,
    loadedAt: date(revision?.loadedTime) ?? null,
    settings: Object.fromEntries(settings.map((s) => [s.key, { value: s.value ?? null, scope: s.scope }])),
    policy: policyJson,
  });
  return EXIT.ok;
}
