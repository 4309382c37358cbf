// The unified diff and the canonical policy YAML the command line (`policy diff`, `policy set
// --dry-run`) and the dashboard (the diff of two policy revisions) share (shared/): a diff as
// `diff -u` prints it, and policies in one canonical YAML whatever order their maps came in.

import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { SandboxPolicySchema } from "openshell-config/raw";
import { diffLines, unifiedDiff } from "../../shared/unified-diff.js";
import { policyYaml } from "../../shared/policy-yaml.js";

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
});
