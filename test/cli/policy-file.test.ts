// Policy files for `policy set` (cli/policy-file.ts): YAML or JSON in the protobuf JSON
// mapping of SandboxPolicy, validated by protobuf-es fromJson; errors name the file, the line and
// column, and the field.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NetworkTlsMode } from "../../src/raw.js";
import { MAX_POLICY_FILE_BYTES, parsePolicy, PolicyFileError, readPolicyFile } from "../../cli/policy-file.js";

const dir = mkdtempSync(join(tmpdir(), "openshell-cli-policy-"));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function policyError(text: string, name = "policy.yaml"): PolicyFileError {
  try {
    parsePolicy(text, name);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyFileError);
    return err as PolicyFileError;
  }
  throw new Error("expected a PolicyFileError");
}

const YAML = `# the web sandbox's policy
version: 1
filesystem:
  include_workdir: true          # snake_case works too
  readOnly: [/usr]
networkPolicies:
  github:
    name: github
    endpoints:
      - host: api.github.com
        ports: [443]
        tls: NETWORK_TLS_MODE_SKIP
    binaries:
      - path: /usr/bin/git
networkMiddlewares:
  audit:
    name: audit
    middleware: audit-log
    config: { grpc_endpoint: "127.0.0.1:9", retries: 3 }
`;

describe("reading policy files", () => {
  it("reads a YAML policy with camelCase or snake_case field names and enum names", async () => {
    const policy = await readPolicyFile(file("web.yaml", YAML));
    expect(policy.version).toBe(1);
    expect(policy.filesystem).toMatchObject({ includeWorkdir: true, readOnly: ["/usr"] });
    const endpoint = policy.networkPolicies.github!.endpoints[0]!;
    expect(endpoint).toMatchObject({ host: "api.github.com", ports: [443], tls: NetworkTlsMode.SKIP });
    expect(policy.networkMiddlewares.audit!.config).toEqual({ grpc_endpoint: "127.0.0.1:9", retries: 3 });
  });

  it("reads a JSON policy", async () => {
    const policy = await readPolicyFile(file("web.json", JSON.stringify({ version: 2, network_policies: { npm: { endpoints: [{ host: "registry.npmjs.org", ports: [443] }] } } })));
    expect(policy.version).toBe(2);
    expect(policy.networkPolicies.npm!.endpoints[0]!.host).toBe("registry.npmjs.org");
  });

  it("reports a file that cannot be read", async () => {
    await expect(readPolicyFile(join(dir, "missing.yaml"))).rejects.toThrow(/^cannot read policy file .*missing\.yaml: no such file$/);
    await expect(readPolicyFile(dir)).rejects.toThrow(/it is a directory/);
  });
});

describe("policy file errors", () => {
  it("names the file, line, column and path of an unknown field, and suggests the right name", () => {
    const err = policyError(YAML.replace("        ports: [443]", "        prots: [443]"));
    expect(err.message).toMatch(/^policy\.yaml:11:9: networkPolicies\.github\.endpoints\[0\]\.prots: unknown field "prots" in NetworkEndpoint \(did you mean "ports"\?\)/);
    expect(err.field).toBe("networkPolicies.github.endpoints[0].prots");
  });

  it("names the exact list item whose value has the wrong type", () => {
    const err = policyError(YAML.replace("ports: [443]", 'ports: [443, "https"]'));
    expect(err.message).toBe('policy.yaml:11:22: networkPolicies.github.endpoints[0].ports[1]: expected number (uint32), got "https"');
  });

  it("lists the allowed names of an enum", () => {
    const err = policyError(YAML.replace("NETWORK_TLS_MODE_SKIP", "SKIPPY"));
    expect(err.message).toMatch(/^policy\.yaml:12:14: networkPolicies\.github\.endpoints\[0\]\.tls: "SKIPPY" is not a NetworkTlsMode; expected one of NETWORK_TLS_MODE_UNSPECIFIED, NETWORK_TLS_MODE_SKIP/);
  });

  it("rejects a value out of range and a scalar where an object belongs", () => {
    expect(policyError("version: -1\n").message).toBe("policy.yaml:1:10: version: expected number (uint32): -1 out of range");
    expect(policyError("filesystem: /tmp\n").message).toMatch(/^policy\.yaml:1:13: filesystem: /);
    expect(policyError("networkPolicies:\n  a:\n    endpoints: web\n").message).toMatch(/^policy\.yaml:3:16: networkPolicies\.a\.endpoints: expected Array/);
  });

  it("quotes map keys that are not identifiers in the field path", () => {
    const err = policyError('networkPolicies:\n  "my rule":\n    binaries: [{ path: /bin/sh, extra: 2 }]\n');
    expect(err.field).toBe('networkPolicies["my rule"].binaries[0].extra');
  });

  it("reports YAML syntax errors with their position", () => {
    expect(policyError("version: 1\nnetworkPolicies: [\n").message).toMatch(/^policy\.yaml:\d+:\d+: not valid YAML: \S/);
    expect(policyError("version: 1\nfoo: bar: baz\n").message).toBe("policy.yaml:2:6: not valid YAML: Nested mappings are not allowed in compact mappings");
    expect(policyError("version: 1\nversion: 2\n").message).toMatch(/^policy\.yaml:2:1: not valid YAML: Map keys must be unique/);
    expect(policyError("version: 1\n---\nversion: 2\n").message).toMatch(/holds several YAML documents/);
  });

  it("reports JSON syntax errors in a .json file", () => {
    expect(policyError('{ "version": 1, }', "policy.json").message).toMatch(/^policy\.json(:1:\d+)?: not valid JSON: /);
    expect(policyError("version: 1", "policy.json").message).toMatch(/^policy\.json(:1:\d+)?: not valid JSON: /);
  });

  it("rejects an empty file and a document that is not a mapping", () => {
    expect(policyError("").message).toBe("policy.yaml: the file is empty; expected a SandboxPolicy");
    expect(policyError("# nothing\n").message).toBe("policy.yaml: the file is empty; expected a SandboxPolicy");
    expect(policyError("- version: 1\n").message).toMatch(/^policy\.yaml: expected a mapping of SandboxPolicy fields/);
  });
});

describe("large files and duplicate keys (issue 30, item 2)", () => {
  /** A policy of `rules` network rules, as YAML, padded to about `bytes` when given. */
  const bigPolicy = (rules: number) => {
    const lines = ["version: 1", "networkPolicies:"];
    for (let i = 0; i < rules; i++) lines.push(`  r${i}:`, `    name: r${i}`, "    endpoints:", `      - host: h${i}.example.com`, "        ports: [443]");
    return `${lines.join("\n")}\n`;
  };

  it("parses a file just under the 4 MiB cap, duplicate check included (a linear one; the library's was quadratic)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "osc-policy-big-"));
    try {
      let rules = 1000;
      while (Buffer.byteLength(bigPolicy(rules * 2)) < MAX_POLICY_FILE_BYTES) rules *= 2;
      // Grow to just under the cap.
      while (Buffer.byteLength(bigPolicy(rules + 1000)) < MAX_POLICY_FILE_BYTES) rules += 1000;
      const path = join(dir, "big.yaml");
      writeFileSync(path, bigPolicy(rules));
      const policy = await readPolicyFile(path);
      expect(Object.keys(policy.networkPolicies)).toHaveLength(rules);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("refuses a file over the cap by its size, before parsing it (the text would not even be YAML)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "osc-policy-big-"));
    try {
      const path = join(dir, "huge.yaml");
      writeFileSync(path, `{{{ not yaml ${"x".repeat(MAX_POLICY_FILE_BYTES)}`);
      const err = (await readPolicyFile(path).catch((e: unknown) => e)) as PolicyFileError;
      expect(err).toBeInstanceOf(PolicyFileError);
      expect(err.message).toBe(`cannot read policy file ${path}: it is larger than 4 MiB (${MAX_POLICY_FILE_BYTES + 13} bytes), the gateway's cap on a request`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds a repeated key at any depth, naming it and its second occurrence's line and column, in YAML and JSON", () => {
    expect(policyError("version: 1\nnetworkPolicies:\n  a:\n    name: a\n  b:\n    name: b\n  a:\n    name: again\n").message).toBe(
      'policy.yaml:7:3: not valid YAML: Map keys must be unique; "a" appears twice',
    );
    expect(policyError("networkPolicies:\n  a:\n    name: a\n    name: b\n").message).toBe('policy.yaml:4:5: not valid YAML: Map keys must be unique; "name" appears twice');
    expect(policyError('{\n  "version": 1,\n  "version": 2\n}\n', "policy.json").message).toBe('policy.json:3:3: not valid JSON: Map keys must be unique; "version" appears twice');
    // Equal names in different mappings are not duplicates.
    expect(() => parsePolicy("networkPolicies:\n  a:\n    name: x\n  b:\n    name: x\n", "policy.yaml")).not.toThrow();
  });
});
