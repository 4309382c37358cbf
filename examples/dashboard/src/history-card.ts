// The policy history card: the selected sandbox's policy revisions (newest first, with their load
// status and when they were committed) and the diff between any two of them, as a unified diff of
// their canonical YAML: the same code and text as the command line's `policy diff`
// (shared/unified-diff.ts, shared/policy-yaml.ts). A revision's policy is read by version
// (GetSandboxPolicyStatus), once per revision: a revision never changes.

import { PolicyStatus, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { policyYaml } from "../../../shared/policy-yaml.js";
import { unifiedDiff } from "../../../shared/unified-diff.js";
import { h } from "./dom.js";
import { explain } from "./explain.js";
import type { Raw } from "./session.js";
import { timeEl } from "./status.js";

/** Revisions listed at most (the newest). */
const LISTED = 50;
/** Policies of revisions kept, per page (bounded: a revision is a few kB to 4 MiB). */
const KEPT_POLICIES = 20;

const STATUS: Readonly<Record<number, string>> = {
  [PolicyStatus.PENDING]: "pending",
  [PolicyStatus.LOADED]: "loaded",
  [PolicyStatus.FAILED]: "failed",
  [PolicyStatus.SUPERSEDED]: "superseded",
};

export interface HistoryCard {
  readonly element: HTMLElement;
  show(sandbox: string): void;
}

export function createHistoryCard({ raw, gateway, signal }: { readonly raw: Raw; readonly gateway: string; readonly signal: AbortSignal }): HistoryCard {
  let sandbox: string | undefined;
  const policies = new Map<string, SandboxPolicy | undefined>();
  const title = h("h2", {}, "Policy history");
  const list = h("ol", { class: "revisions", "data-testid": "revisions" });
  const from = h("select", { id: "diff-from", "aria-label": "from revision" });
  const to = h("select", { id: "diff-to", "aria-label": "to revision" });
  const diffOut = h("pre", { class: "diff", "data-testid": "revision-diff" });
  const note = h("p", { class: "muted small", "data-testid": "diff-note" });
  const element = h(
    "section",
    { class: "card", "data-testid": "history-card" },
    h("div", { class: "card-head" }, title),
    list,
    h("form", { class: "inline-form history-form", onsubmit: (ev: Event) => (ev.preventDefault(), void diff()) }, h("label", {}, "from ", from), h("label", {}, "to ", to), h("button", { type: "submit", id: "diff-show" }, "Show diff")),
    note,
    diffOut,
  );

  async function show(name: string): Promise<void> {
    sandbox = name;
    title.textContent = `Policy history of ${name}`;
    diffOut.replaceChildren();
    note.textContent = "";
    try {
      const page = await raw.listSandboxPolicies({ sandbox: name, workspaceScope: workspaceScope(), pageSize: LISTED }, { signal });
      if (sandbox !== name) return;
      const revs = page.revisions;
      list.replaceChildren(
        ...revs.map((r) =>
          h(
            "li",
            { "data-version": r.version, "data-status": STATUS[r.status] ?? "unspecified" },
            h("span", { class: "mono" }, `v${r.version}`),
            " ",
            h("span", { class: `rev-status ${STATUS[r.status] ?? ""}` }, STATUS[r.status] ?? "unspecified"),
            " ",
            r.createdTime ? timeEl(timestampDate(r.createdTime)) : "",
          ),
        ),
      );
      const options = () => revs.map((r) => h("option", { value: r.version }, `v${r.version}`));
      from.replaceChildren(...options());
      to.replaceChildren(...options());
      // The latest change by default: the revision before the newest, to the newest.
      to.value = String(revs[0]?.version ?? "");
      from.value = String(revs[1]?.version ?? revs[0]?.version ?? "");
      if (revs.length < 2) note.textContent = "One revision only: nothing to compare yet.";
    } catch (err) {
      if (sandbox === name) note.textContent = explain(err, gateway);
    }
  }

  async function policyOf(name: string, version: number): Promise<SandboxPolicy | undefined> {
    const key = `${name}\u0000${version}`;
    if (!policies.has(key)) {
      const res = await raw.getSandboxPolicyStatus({ sandbox: name, version, workspaceScope: workspaceScope() }, { signal });
      if (policies.size >= KEPT_POLICIES) policies.delete(policies.keys().next().value!);
      policies.set(key, res.revision?.policy);
    }
    return policies.get(key);
  }

  async function diff(): Promise<void> {
    const name = sandbox;
    const a = Number(from.value);
    const b = Number(to.value);
    if (name === undefined || !a || !b) return;
    note.textContent = "reading…";
    try {
      const [pa, pb] = await Promise.all([policyOf(name, a), policyOf(name, b)]);
      if (sandbox !== name) return;
      const text = unifiedDiff(policyYaml(pa), policyYaml(pb), { from: `${name} v${a}`, to: `${name} v${b}` });
      note.textContent = text === "" ? `v${a} and v${b} are the same policy.` : "";
      diffOut.replaceChildren(
        ...text
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => h("span", { class: /^(---|\+\+\+) /.test(l) ? "hdr" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "ctx" }, `${l}\n`)),
      );
    } catch (err) {
      if (sandbox === name) note.textContent = explain(err, gateway);
    }
  }

  return { element, show: (name) => void show(name) };
}
