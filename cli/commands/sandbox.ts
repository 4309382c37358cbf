// `sandbox list [--selector S] [--watch]`: the sandboxes of a workspace (or all) that a kubectl
// selector matches, every page, each with its desired policy version, what it enforces and the
// drift, from the list itself (our gateway's extension fields; no request per sandbox). With
// --watch it lists again every 2 s (a bounded rate: one ListSandboxes per 1000 sandboxes per
// round) and shows what changed: the table redrawn in place on a terminal; otherwise the rows that
// changed, appended (as kubectl get -w); -o json / -o yaml print the whole list again on a change.

import { timestampDate } from "@bufbuild/protobuf/wkt";
import { SandboxPhase, type Sandbox } from "openshell-config/raw";
import type { Command } from "../types.js";
import { enforcedCell, enforcementJson, listedEnforcement } from "../enforcement.js";
import { formatTable } from "../output.js";
import { EXIT } from "../outcome.js";
import { formatSelector } from "../selector.js";
import { listSandboxes } from "../sandbox-query.js";
import { formatAge, formatTime, formatVersion } from "../format.js";
import type { CommandContext } from "./context.js";

type SandboxList = Extract<Command, { name: "sandbox list" }>;

/** Between two listings of `--watch`. */
export const WATCH_INTERVAL_MS = 2_000;

// As kubectl: the WORKSPACE column only across workspaces (-A) or with -o wide, AGE before LABELS
// (the last column, cut to the terminal's width), and -o wide adds the id and the creation time,
// so that a row fits 80 columns. AGE is left out of what --watch compares: it changes at every
// listing.
function headersOf(wide: boolean, allWorkspaces: boolean): string[] {
  if (wide) return ["NAME", "WORKSPACE", "ID", "PHASE", "DESIRED", "ENFORCED", "DRIFT", "CREATED", "LABELS"];
  return ["NAME", ...(allWorkspaces ? ["WORKSPACE"] : []), "PHASE", "DESIRED", "ENFORCED", "DRIFT", "AGE", "LABELS"];
}

type View = ReturnType<typeof view>[number];

/** The cells of a row as shown: the compared row with AGE (or, wide, the id and creation time) put in. */
function cells(r: View, wide: boolean, allWorkspaces: boolean): string[] {
  const [name, workspace, phase, desired, enforced, drift, labels] = r.row as [string, string, string, string, string, string, string];
  if (wide) return [name, workspace, r.json.id || "-", phase, desired, enforced, drift, formatTime(r.json.createdAt ?? undefined), labels];
  return [name, ...(allWorkspaces ? [workspace] : []), phase, desired, enforced, drift, formatAge(r.json.createdAt ?? undefined), labels];
}

const phaseName = (sb: Sandbox) => (SandboxPhase[sb.status?.phase ?? SandboxPhase.UNSPECIFIED] ?? "unknown").toLowerCase();

function view(sandboxes: readonly Sandbox[]) {
  return sandboxes.map((sb) => {
    const m = sb.metadata;
    const { desiredVersion, enforced, drift } = listedEnforcement(sb);
    const json = {
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
    const row = [
      json.name,
      json.workspace,
      json.phase,
      json.desiredPolicyVersion === null ? "?" : formatVersion(json.desiredPolicyVersion),
      enforcedCell(enforced),
      json.drift === null ? "unknown" : json.drift.join(",") || "-",
      Object.entries(json.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(",") || "-",
    ];
    return { json, row };
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export async function sandboxList(ctx: CommandContext, cmd: SandboxList): Promise<number> {
  const { out } = ctx;
  const empty = cmd.selector ? `no sandboxes match ${formatSelector(cmd.selector)}` : "no sandboxes";
  const list = async () => view(await listSandboxes(ctx.client, cmd, ctx.signal));
  const rows = await list();
  const all = cmd.allWorkspaces === true;
  const headers = headersOf(out.wide, all);
  const table = (cellRows: readonly (readonly string[])[]) => formatTable(headers, cellRows, out.tableLayout());
  const lines = (rs: typeof rows) => (rs.length === 0 ? [empty] : table(rs.map((r) => cells(r, out.wide, all))));
  // On a terminal, --watch draws frames from the start.
  if (cmd.watch && out.live) out.frame(lines(rows));
  // No sandboxes is not an answer to print on stdout (kubectl's "No resources found" goes to stderr).
  else if (rows.length === 0) out.note(empty);
  else for (const l of lines(rows)) out.line(l);
  out.json({ sandboxes: rows.map((r) => r.json) });
  if (!cmd.watch) return EXIT.ok;

  // Rows as last shown, by workspace and name.
  const key = (r: { json: { workspace: string; name: string } }) => `${r.json.workspace}/${r.json.name}`;
  let shown = new Map(rows.map((r) => [key(r), r.row.join("\u0000")]));
  let lastJson = JSON.stringify(rows.map((r) => r.json));
  for (;;) {
    await sleep(WATCH_INTERVAL_MS, ctx.signal);
    if (ctx.signal.aborted) return EXIT.interrupted;
    let next;
    try {
      next = await list();
    } catch (err) {
      if (ctx.signal.aborted) return EXIT.interrupted;
      throw err;
    }
    const json = JSON.stringify(next.map((r) => r.json));
    const different = json !== lastJson;
    lastJson = json;
    if (different) out.json({ sandboxes: next.map((r) => r.json) });
    const now = new Map(next.map((r) => [key(r), r.row.join("\u0000")]));
    if (out.live) {
      if (different) out.frame(lines(next));
    } else {
      // Appended: the rows that are new or changed, and the sandboxes that are gone, in the
      // columns of the whole table.
      const gone = [...shown.keys()]
        .filter((k) => !now.has(k))
        .map((k) => headers.map((h) => (h === "NAME" ? k.slice(k.indexOf("/") + 1) : h === "WORKSPACE" ? k.slice(0, k.indexOf("/")) : h === "PHASE" ? "deleted" : "-")));
      const rowsShown = next.map((r) => cells(r, out.wide, all));
      const every = [...rowsShown, ...gone];
      const changed = new Set([...rowsShown.filter((_, i) => shown.get(key(next[i]!)) !== now.get(key(next[i]!))), ...gone]);
      formatTable(headers, every, { ...out.tableLayout(), headers: true })
        .slice(1)
        .forEach((l, i) => changed.has(every[i]!) && out.line(l));
    }
    shown = now;
  }
}
