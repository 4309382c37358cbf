// `sandbox list [--selector k=v]`: the sandboxes of a workspace (or all), every page.

import { timestampDate } from "@bufbuild/protobuf/wkt";
import { allWorkspacesScope, OpenShell, SandboxPhase, workspaceScope, type Sandbox } from "openshell-config/raw";
import type { Command } from "../args.js";
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

  const rows = sandboxes.map((sb) => {
    const m = sb.metadata;
    return {
      name: m?.name ?? "",
      workspace: m?.workspace || "default",
      id: m?.id ?? "",
      phase: phaseName(sb),
      policyVersion: sb.status?.currentPolicyVersion ?? 0,
      labels: { ...m?.labels },
      createdAt: m?.createdTime ? timestampDate(m.createdTime) : null,
    };
  });
  const { out } = ctx;
  if (rows.length === 0) {
    out.line(cmd.selector ? `no sandboxes match ${cmd.selector}` : "no sandboxes");
  } else {
    out.table(
      ["NAME", "WORKSPACE", "PHASE", "POLICY", "LABELS"],
      rows.map((r) => [
        r.name,
        r.workspace,
        r.phase,
        r.policyVersion > 0 ? `v${r.policyVersion}` : "-",
        Object.entries(r.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(",") || "-",
      ]),
    );
  }
  out.json({ sandboxes: rows });
  return EXIT.ok;
}
