// `policy history --sandbox S`: the sandbox's policy revisions, newest first (ListSandboxPolicies,
// pages of up to 1000, stopping at --limit), each with its load status, and which one the sandbox
// enforces (GetSandboxPolicyStatus: our gateway's enforcement record, else upstream's
// active_version).

import { fromPolicyEnforcement } from "openshell-config";
import { OpenShell, PolicyStatus, workspaceScope, type SandboxPolicyRevision } from "openshell-config/raw";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Command } from "../types.js";
import { EXIT } from "../outcome.js";
import { formatAge, formatTime, formatVersion, shortHash } from "../format.js";
import type { CommandContext } from "./context.js";

type PolicyHistory = Extract<Command, { name: "policy history" }>;

const STATUS: Readonly<Record<number, string>> = {
  [PolicyStatus.PENDING]: "pending",
  [PolicyStatus.LOADED]: "loaded",
  [PolicyStatus.FAILED]: "failed",
  [PolicyStatus.SUPERSEDED]: "superseded",
};

export async function policyHistory(ctx: CommandContext, cmd: PolicyHistory): Promise<number> {
  const raw = ctx.client.raw(OpenShell);
  const scope = workspaceScope(cmd.workspace);
  const wanted = cmd.limit === 0 ? Infinity : cmd.limit;
  const revisions: SandboxPolicyRevision[] = [];
  let pageToken = "";
  let more = false;
  const status = raw.getSandboxPolicyStatus({ sandbox: cmd.sandbox, version: 0, workspaceScope: scope }, { signal: ctx.signal }).catch(() => undefined);
  do {
    const pageSize = Math.min(1000, wanted - revisions.length);
    const page = await raw.listSandboxPolicies({ sandbox: cmd.sandbox, workspaceScope: scope, pageSize, pageToken }, { signal: ctx.signal });
    revisions.push(...page.revisions.slice(0, wanted - revisions.length));
    pageToken = page.nextPageToken;
    more = pageToken !== "";
  } while (more && revisions.length < wanted);

  // The sandbox policy version in force, 0 when none (failing closed, a local or global policy, not reported).
  const s = await status;
  const e = s?.enforcement ? fromPolicyEnforcement(s.enforcement) : undefined;
  const enforcedVersion = e === undefined ? (s?.activeVersion ?? 0) : e.state === "enforcing" && e.policySource !== "global" ? e.policyVersion : 0;

  const rows = revisions.map((r) => ({
    version: r.version,
    status: STATUS[r.status] ?? "unspecified",
    enforced: r.version === enforcedVersion,
    policyHash: r.policyHash,
    createdAt: r.createdTime ? timestampDate(r.createdTime) : null,
    loadedAt: r.loadedTime ? timestampDate(r.loadedTime) : null,
    loadError: r.loadError || null,
  }));
  const { out } = ctx;
  // Lines that are not the answer go to stderr, as kubectl's "No resources found".
  if (rows.length === 0) out.note(`sandbox ${cmd.sandbox} has no policy revisions`);
  else if (out.wide) {
    out.table(
      ["VERSION", "STATUS", "HASH", "CREATED", "LOADED", "ERROR"],
      rows.map((r) => [formatVersion(r.version), statusCell(r), r.policyHash || "-", formatTime(r.createdAt ?? undefined), formatTime(r.loadedAt ?? undefined), r.loadError ?? ""]),
    );
  } else {
    // AGE (since created) instead of two full timestamps: a row fits 80 columns; -o wide has them.
    out.table(
      ["VERSION", "STATUS", "HASH", "AGE", "ERROR"],
      rows.map((r) => [formatVersion(r.version), statusCell(r), shortHash(r.policyHash), formatAge(r.createdAt ?? undefined), r.loadError ?? ""]),
    );
  }
  if (more) out.note(`… older revisions not shown (--limit ${cmd.limit}; --limit 0 lists all)`);
  out.json({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? "default", enforcedVersion: enforcedVersion || null, revisions: rows, more });
  return EXIT.ok;
}

function statusCell(r: { readonly status: string; readonly enforced: boolean }): string {
  return `${r.status}${r.enforced ? " (enforced)" : ""}`;
}
