// What `policy diff` and `policy set --dry-run` compare (cli/policy-yaml.ts) and what `policy
// merge --file` reads (cli/merge-ops.ts): the static fields a change touches, and merge files
// checked entry by entry. The diff and the canonical YAML they print are shared with the
// dashboard: test/unit/shared-diff.test.ts.

import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { SandboxPolicySchema } from "openshell-config/raw";
import { staticChanges } from "../../cli/policy-yaml.js";
import { describeMergeOperation, parseMergeOperations } from "../../cli/merge-ops.js";
import { PolicyFileError } from "../../cli/policy-file.js";

describe("policies' static fields", () => {
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
