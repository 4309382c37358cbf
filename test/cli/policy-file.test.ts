// Policy files for `policy set` (cli/policy-file.ts): YAML or JSON in the protobuf JSON
// mapping of SandboxPolicy, validated by protobuf-es fromJson; errors name the file, the line and
// column, and the field.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { NetworkTlsMode } from "../../src/raw.js";
import { MAX_POLICY_BYTES, MAX_POLICY_FILE_BYTES, parsePolicy, PolicyFileError, readPolicyFile } from "../../cli/policy-file.js";
import { rulesWithin } from "../support/policy-text.js";

const dir = mkdtempSync(join(tmpdir(), "openshell-cli-policy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
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

describe("large policy files (issue 30, item 2)", () => {
  /** A policy text of as many network rules as fit in `bytes`, and their number. */
  const within = rulesWithin;
  const yamlRule = (i: number) => `  r${i}:\n    name: r${i}\n    endpoints:\n      - host: h${i}.example.com\n        ports: [443]\n`;
  // As jq or JSON.stringify(policy, null, 2) print it.
  const jsonRule = (i: number) =>
    `    "r${i}": {\n      "name": "r${i}",\n      "endpoints": [\n        {\n          "host": "h${i}.example.com",\n          "ports": [\n            443\n          ]\n        }\n      ]\n    }`;

  it("caps a policy file at 12 MiB, four times the 3 MiB a policy may take at the gateway once encoded", () => {
    expect(MAX_POLICY_BYTES).toBe(3 * 1024 * 1024);
    expect(MAX_POLICY_FILE_BYTES).toBe(4 * MAX_POLICY_BYTES);
  });

  it("parses a 4 MiB YAML file of tens of thousands of rules", async () => {
    const { text, rules } = within(4 * 1024 * 1024, "version: 1\nnetworkPolicies:\n", yamlRule, "", "");
    const policy = await readPolicyFile(file("4mib.yaml", text));
    expect(Object.keys(policy.networkPolicies)).toHaveLength(rules);
    expect(policy.networkPolicies[`r${rules - 1}`]!.endpoints[0]!.host).toBe(`h${rules - 1}.example.com`);
  }, 120_000);

  it("parses an indented JSON file just under the cap", async () => {
    const { text, rules } = within(MAX_POLICY_FILE_BYTES, '{\n  "version": 1,\n  "networkPolicies": {\n', jsonRule, ",\n", "\n  }\n}\n");
    const path = file("under-cap.json", text);
    expect(statSync(path).size).toBeGreaterThan(MAX_POLICY_FILE_BYTES - 200);
    const policy = await readPolicyFile(path);
    expect(Object.keys(policy.networkPolicies)).toHaveLength(rules);
  }, 120_000);

  it("refuses a file over the cap by its size, naming the file, its size and the cap, without parsing it", async () => {
    // Not YAML at all: parsed, it would be refused with a syntax error instead.
    const path = file("huge.yaml", `{{{ [ "${"x".repeat(MAX_POLICY_FILE_BYTES)}`);
    const bytes = MAX_POLICY_FILE_BYTES + 7;
    const expected = `policy file ${path} is too large: 12 MiB (${bytes} bytes); a policy file may be at most 12 MiB (${MAX_POLICY_FILE_BYTES} bytes), and the gateway accepts a policy of at most 3 MiB encoded`;
    await expect(readPolicyFile(path)).rejects.toThrow(expected);
    expect(() => parsePolicy(readFileSync(path, "utf8"), path)).toThrow(expected);
  });

  it("refuses a FIFO and a device without waiting for them", async () => {
    const fifo = join(dir, "policy.fifo");
    execFileSync("mkfifo", [fifo]);
    await expect(readPolicyFile(fifo)).rejects.toThrow(`cannot read policy file ${fifo}: it is not a regular file`);
    await expect(readPolicyFile("/dev/zero")).rejects.toThrow("cannot read policy file /dev/zero: it is not a regular file");
  });
});

describe("duplicate keys", () => {
  it("names a repeated top-level key at its second occurrence's line and column, and the first", () => {
    const err = policyError("version: 1\nfilesystem: {}\nversion: 2\n");
    expect(err.message).toBe('policy.yaml:3:1: duplicate key "version" (first at line 1, column 1)');
    expect(err.field).toBe("version");
  });

  it("names a repeated key at any depth with the path of its mapping", () => {
    const yaml = "version: 1\nnetworkPolicies:\n  a:\n    name: a\n  b:\n    name: b\n    endpoints:\n      - host: x\n        ports: [1]\n        host: y\n";
    const err = policyError(yaml);
    expect(err.message).toBe('policy.yaml:10:9: networkPolicies.b.endpoints[0]: duplicate key "host" (first at line 8, column 9)');
    expect(err.field).toBe("networkPolicies.b.endpoints[0].host");
    expect(policyError(`${yaml.slice(0, yaml.indexOf("  b:"))}  a:\n    name: again\n`).message).toBe('policy.yaml:5:3: networkPolicies: duplicate key "a" (first at line 3, column 3)');
    // In flow style too, and the first duplicate in the text is the one named.
    expect(policyError('networkPolicies: { a: { name: x, name: y } }\nversion: 1\nversion: 2\n').message).toBe('policy.yaml:1:34: networkPolicies.a: duplicate key "name" (first at line 1, column 25)');
  });

  it("counts keys that name the same property as the same key", () => {
    expect(policyError('networkPolicies:\n  1: {}\n  "1": {}\n').message).toBe('policy.yaml:3:3: networkPolicies: duplicate key "1" (first at line 2, column 3)');
  });

  it("finds repeated keys in JSON files, which JSON.parse would silently keep the last of", () => {
    expect(policyError('{\n  "version": 1,\n  "version": 2\n}\n', "policy.json").message).toBe('policy.json:3:3: duplicate key "version" (first at line 2, column 3)');
    const nested = '{"networkPolicies": {"a": {"endpoints": [{"host": "x"}, {"host": "y", "ports": [1], "host": "z"}]}}}';
    const err = policyError(nested, "policy.json");
    expect(err.message).toBe('policy.json:1:85: networkPolicies.a.endpoints[1]: duplicate key "host" (first at line 1, column 58)');
    expect(err.field).toBe("networkPolicies.a.endpoints[1].host");
    // An escaped key is the same key; a quote or a backslash inside a string does not confuse the scan.
    expect(policyError('{"version": 1, "v\\u0065rsion": 2}', "policy.json").message).toMatch(/^policy\.json:1:16: duplicate key "version"/);
    expect(parsePolicy('{"networkPolicies": {"a\\"b": {"name": "{\\\\"}, "a\\\\": {"name": "\\"}"}}}', "policy.json").networkPolicies['a"b']!.name).toBe("{\\");
  });

  it("leaves alone equal keys in different mappings", () => {
    expect(() => parsePolicy("networkPolicies:\n  a:\n    name: x\n  b:\n    name: x\n", "policy.yaml")).not.toThrow();
    expect(() => parsePolicy('{"networkPolicies": {"a": {"name": "x"}, "b": {"name": "x"}}}', "policy.json")).not.toThrow();
  });
});
