// What `policy diff` and `policy set --dry-run` compare and print (cli/diff.ts, cli/policy-yaml.ts)
// and what `policy merge --file` reads (cli/merge-ops.ts): a unified diff as `diff -u` prints it,
// policies in one canonical YAML whatever order their maps came in, the static fields a change
// touches, and merge files checked entry by entry.

import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { SandboxPolicySchema } from "openshell-config/raw";
import { diffLines, unifiedDiff } from "../../cli/diff.js";
import { policyYaml, staticChanges } from "../../cli/policy-yaml.js";
import { describeMergeOperation, parseMergeOperations } from "../../cli/merge-ops.js";
import { PolicyFileError } from "../../cli/policy-file.js";

const lines = (n: number, f: (i: number) => string = (i) => `line ${i}`) => Array.from({ length: n }, (_, i) => f(i + 1)).join("\n") + "\n";

describe("unified diff", () => {
  it("is empty for equal texts", () => {
    expect(unifiedDiff("a\nb\n", "a\nb\n", { from: "x", to: "y" })).toBe("");
  });

  it("prints headers, then hunks with 3 lines of context and diff -u's line ranges", () => {
    const before = lines(12);
    const after = before.replace("line 3\n", "line three\n").replace("line 12\n", "line 12\nline 13\n");
    expect(unifiedDiff(before, after, { from: "desired", to: "file.yaml" })).toBe(
      [
        "--- desired",
        "+++ file.yaml",
        "@@ -1,6 +1,6 @@",
        " line 1",
        " line 2",
        "-line 3",
        "+line three",
        " line 4",
        " line 5",
        " line 6",
        "@@ -10,3 +10,4 @@",
        " line 10",
        " line 11",
        " line 12",
        "+line 13",
        "",
      ].join("\n"),
    );
  });

  it("joins changes whose context would overlap into one hunk, removals before additions", () => {
    const before = lines(8);
    const after = before.replace("line 2\n", "two\n").replace("line 6\n", "six\n");
    const d = unifiedDiff(before, after, { from: "a", to: "b" });
    expect(d.split("\n").filter((l) => l.startsWith("@@"))).toEqual(["@@ -1,8 +1,8 @@"]);
    expect(diffLines(["a", "b"], ["c", "d"]).map((e) => `${e.op}${e.line}`)).toEqual(["-a", "-b", "+c", "+d"]);
  });
});

describe("policies as canonical YAML", () => {
  const policy = (order: string[]) =>
    create(SandboxPolicySchema, {
      version: 1,
      networkPolicies: Object.fromEntries(order.map((n) => [n, { name: n, endpoints: [{ host: `${n}.example.com`, ports: [443] }] }])),
    });

  it("prints two policies that differ only in the order of their rules the same", () => {
    expect(policyYaml(policy(["b", "a"]))).toBe(policyYaml(policy(["a", "b"])));
    expect(policyYaml(policy(["b", "a"])).indexOf("  a:")).toBeLessThan(policyYaml(policy(["b", "a"])).indexOf("  b:"));
    expect(policyYaml(undefined)).toBe("{}\n");
  });

  it("names the static fields a new policy changes", () => {
    const current = create(SandboxPolicySchema, { filesystem: { readOnly: ["/usr"] }, networkPolicies: {} });
    expect(staticChanges(current, create(SandboxPolicySchema, { filesystem: { readOnly: ["/usr"] }, networkPolicies: { x: { name: "x" } } }))).toEqual([]);
    expect(staticChanges(current, create(SandboxPolicySchema, { filesystem: { readOnly: ["/"] }, process: { runAsUser: "nobody" } }))).toEqual(["filesystem", "process"]);
  });
});

describe("merge files", () => {
  it("read a YAML list or { mergeOperations: [...] } of PolicyMergeOperation", () => {
    const ops = parseMergeOperations("- removeRule: { ruleName: legacy }\n- add_rule: { rule_name: npm, rule: { name: npm, endpoints: [{ host: registry.npmjs.org, ports: [443] }] } }\n", "ops.yaml");
    expect(ops.map(describeMergeOperation)).toEqual(["remove rule legacy", "add rule npm (registry.npmjs.org:443)"]);
    expect(parseMergeOperations('{"mergeOperations": [{"removeBinary": {"ruleName": "git", "binaryPath": "/usr/bin/git"}}]}', "ops.json").map(describeMergeOperation)).toEqual([
      "remove binary /usr/bin/git from rule git",
    ]);
  });

  it.each([
    ["", /expected a list of merge operations/],
    ["- {}\n", /operation 1: names no operation/],
    ["- removeRule: { ruleName: a }\n- explode: {}\n", /operation 2: /],
    ["- [unclosed\n", /not valid YAML or JSON/],
  ])("reject %j, naming the entry", (text, message) => {
    expect(() => parseMergeOperations(text, "ops.yaml")).toThrow(PolicyFileError);
    expect(() => parseMergeOperations(text, "ops.yaml")).toThrow(message);
  });
});
