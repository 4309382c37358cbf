// `sandbox list [--selector k=v]`: the sandboxes of a workspace (or all), every page, each with
// its desired policy version, what it enforces and the drift, from the list itself (our gateway's
// extension fields; no request per sandbox).

import { timestampDate } from "@bufbuild/protobuf/wkt";
import { allWorkspacesScope, OpenShell, SandboxPhase, workspaceScope, type Sandbox } from "openshell-config/raw";
import type { Command } from "../args.js";
import { enforcedCell, enforcementJson, listedEnforcement } from "../enforcement.js";
import { EXIT } from "../outcome.js";
import type { CommandContext } from "./context.js";

type SandboxList = Extract<Command, { name: "sandbox list" }>;

const phaseName = (sb: Sandbox) => (SandboxPhase[sb.status?.phase ?? SandboxPhase.UNSPECIFIED] ?? "unknown").toLowerCase();

export async function sandboxList(ctx: CommandContext, cmd: SandboxList): Promise<number> {
  const raw = ctx.client.raw(OpenShell);
  // Named (`default` unless --workspace) or all: the upstream gateway requires one of the two.
  const scope = cmd.allWorkspaces ? allWorkspacesScope() : workspaceScope(cmd.workspace);
  const sandboxes: Sandbox[] = [];
  let pageToken = "";
  do {
    const page = await raw.listSandboxes({ labelSelector: cmd.selector ?? "", workspaceScope: scope, pageToken }, { signal: ctx.signal });
    sandboxes.push(...page.sandboxes);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");

  const listed = sandboxes.map(listedEnforcement);
  const rows = sandboxes.map((sb, i) => {
    const m = sb.metadata;
    const { desiredVersion, enforced, drift } = listed[i]!;
    return {
      name: m?.name ?? "",
      workspace: m?.workspace || "default",
      id: m?.id ?? "",
      phase: phaseName(sb),
      // The enforced sandbox policy version (current_policy_version), 0 when none.
      policyVersion: sb.status?.currentPolicyVersion ?? 0,
      desiredPolicyVersion: desiredVersion ?? null,
      enforced: enforcementJson(enforced),
      // null: the gateway does not say enough to tell.
      drift: drift ?? null,
      labels: { ...m?.labels },
      createdAt: m?.createdTime ? timestampDate(m.createdTime) : null,
    };
  });
  const { out } = ctx;
  if (rows.length === 0) {
    out.line(cmd.selector ? `no sandboxes match ${cmd.selector}` : "no sandboxes");
  } else {
    out.table(
      ["NAME", "WORKSPACE", "PHASE", "DESIRED", "ENFORCED", "DRIFT", "LABELS"],
      rows.map((r, i) => [
        r.name,
        r.workspace,
        r.phase,
        r.desiredPolicyVersion === null ? "?" : r.desiredPolicyVersion > 0 ? `v${r.desiredPolicyVersion}` : "-",
        enforcedCell(listed[i]!.enforced),
        r.drift === null ? "unknown" : r.drift.join(",") || "-",
        Object.entries(r.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(",") || "-",
      ]),
    );
  }
  out.json({ sandboxes: rows });
  return EXIT.ok;
}
