// `policy diff --sandbox S --file F` and `policy set --dry-run`: the sandbox's desired policy (the
// effective one, from getConfig) against a policy file, as a unified diff of their canonical YAML,
// before anything is sent. `policy diff` exits 0 when they are equal and 1 when they differ (as
// diff does); the dry run exits 0 unless the file changes a static field, which the gateway would
// refuse (exit 1 with the reason; policy diff only warns).

import { OpenShell, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import type { Command } from "../types.js";
import { unifiedDiff } from "../diff.js";
import { EXIT } from "../outcome.js";
import { readPolicyFile } from "../policy-file.js";
import { policyYaml, staticChanges } from "../policy-yaml.js";
import type { CommandContext } from "./context.js";

type PolicyDiff = Extract<Command, { name: "policy diff" }>;
type PolicySet = Extract<Command, { name: "policy set" }>;

interface Compared {
  readonly workspace: string;
  readonly version: number;
  readonly source: string;
  readonly diff: string;
  readonly added: number;
  readonly removed: number;
  readonly staticFields: string[];
}

async function compare(ctx: CommandContext, cmd: PolicyDiff | PolicySet, policy: SandboxPolicy): Promise<Compared> {
  const cfg = await ctx.client.getConfig({ sandbox: cmd.sandbox, workspace: cmd.workspace, signal: ctx.signal });
  const global = cfg.desired.policySource === "global";
  const version = global ? cfg.desired.globalPolicyVersion : cfg.desired.policyVersion;
  const from = `sandbox ${cmd.sandbox}: desired policy v${version}${global ? " (global)" : ""}`;
  const diff = unifiedDiff(policyYaml(cfg.desired.policy), policyYaml(policy), { from, to: cmd.file });
  const body = diff.split("\n").slice(2);
  return {
    workspace: cfg.workspace ?? "default",
    version,
    source: cfg.desired.policySource,
    diff,
    added: body.filter((l) => l.startsWith("+")).length,
    removed: body.filter((l) => l.startsWith("-")).length,
    staticFields: staticChanges(cfg.desired.policy, policy),
  };
}

function report(ctx: CommandContext, cmd: PolicyDiff | PolicySet, c: Compared, extra: Record<string, unknown>): void {
  if (c.diff !== "") ctx.out.line(c.diff.trimEnd());
  // A dry run says it as its error (policyDryRun); a diff warns.
  if (c.staticFields.length > 0 && extra["dryRun"] !== true) {
    ctx.out.warn(`${cmd.file} changes ${c.staticFields.join(", ")}, fixed when the sandbox was created: the gateway refuses it (only networkPolicies may change)`);
  }
  ctx.out.json({
    sandbox: cmd.sandbox,
    workspace: c.workspace,
    file: cmd.file,
    desiredVersion: c.version,
    desiredSource: c.source,
    equal: c.diff === "",
    added: c.added,
    removed: c.removed,
    staticFieldsChanged: c.staticFields,
    diff: c.diff,
    ...extra,
  });
}

export async function policyDiff(ctx: CommandContext, cmd: PolicyDiff): Promise<number> {
  const policy = await readPolicyFile(cmd.file);
  const c = await compare(ctx, cmd, policy);
  report(ctx, cmd, c, {});
  return c.diff === "" ? EXIT.ok : EXIT.failed;
}

/** `policy set --dry-run`: the file is valid (read by the caller); show the diff, send nothing. */
export async function policyDryRun(ctx: CommandContext, cmd: PolicySet, policy: SandboxPolicy): Promise<number> {
  const c = await compare(ctx, cmd, policy);
  // What the gateway would refuse is known here: the dry run fails with its reason (exit 1) rather
  // than calling the file valid. The gateway checks static fields against the policy the sandbox
  // was created with; a sandbox's own desired policy has those same fields (they never change),
  // but a sandbox on a global policy is compared with the global one, so that check needs the
  // create-time policy itself (GetSandbox's spec). Unreadable: the file is still called valid,
  // and stderr says the check was not made.
  let staticFields: string[] | undefined = c.staticFields;
  if (c.source === "global") {
    const created = await ctx.client
      .raw(OpenShell)
      .getSandbox({ name: cmd.sandbox, workspaceScope: workspaceScope(cmd.workspace) }, { signal: ctx.signal })
      .then((r) => r.sandbox?.spec?.policy, () => undefined);
    staticFields = created === undefined ? undefined : staticChanges(created, policy);
  }
  const refused = staticFields !== undefined && staticFields.length > 0;
  report(ctx, cmd, c, { dryRun: true, sent: false, wouldBeRefused: refused, staticFieldsChecked: staticFields !== undefined, staticFieldsChanged: staticFields ?? [] });
  if (refused) {
    ctx.out.error(
      `dry run: the gateway would refuse ${cmd.file}: it changes ${staticFields!.join(", ")}, fixed when sandbox ${cmd.sandbox} was created (only networkPolicies may change); nothing was sent`,
    );
    return EXIT.failed;
  }
  if (staticFields === undefined) {
    ctx.out.warn(`dry run: static fields (filesystem, landlock, process, networkMiddlewares) were not checked: the policy sandbox ${cmd.sandbox} was created with could not be read`);
  }
  if (c.diff !== "") ctx.out.line();
  ctx.out.line(
    c.diff === ""
      ? `dry run: ${cmd.file} is valid and equal to the desired policy v${c.version}; nothing was sent`
      : `dry run: ${cmd.file} is valid (${c.added} ${c.added === 1 ? "line" : "lines"} added, ${c.removed} removed against v${c.version}); nothing was sent`,
  );
  return EXIT.ok;
}
