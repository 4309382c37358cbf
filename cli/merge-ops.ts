// The merge operations of `policy merge` (PolicyMergeOperation in proto/openshell/v1/config.proto):
// built from flags (--add-rule NAME --host H --port P [--binary PATH], --remove-rule NAME,
// --remove-endpoint NAME --host H --port P, --remove-binary NAME --binary PATH), or read from a
// file holding a YAML or JSON list of them in the protobuf JSON form, e.g.
//   - addRule: { ruleName: npm, rule: { name: npm, endpoints: [{ host: registry.npmjs.org, ports: [443] }] } }
//   - removeRule: { ruleName: legacy }
// A file's operations apply first, then the flags': rules removed, endpoints, binaries, the rule added.

import { readFile } from "node:fs/promises";
import { create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { parseDocument } from "yaml";
import type { PolicyMergeOperationInput } from "openshell-config";
import { PolicyMergeOperationSchema } from "openshell-config/raw";
import { PolicyFileError } from "./policy-file.js";

/** The flags of `policy merge` that describe operations, as the command line gave them. */
export interface MergeFlags {
  readonly addRule?: string;
  readonly removeRule?: readonly string[];
  readonly removeEndpoint?: string;
  readonly removeBinary?: string;
  readonly host?: string;
  readonly port?: readonly string[];
  readonly binary?: readonly string[];
}

function port(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65_535) throw new Error(`--port must be a port number from 1 to 65535; got "${text}"`);
  return n;
}

/** The operations the flags describe (possibly none). Throws an Error with a message for the user. */
export function mergeOperationsFromFlags(f: MergeFlags): PolicyMergeOperationInput[] {
  const main = (["addRule", "removeEndpoint", "removeBinary"] as const).filter((k) => f[k] !== undefined);
  const flag = { addRule: "--add-rule", removeEndpoint: "--remove-endpoint", removeBinary: "--remove-binary" } as const;
  if (main.length > 1) throw new Error(`give one of ${main.map((k) => flag[k]).join(" and ")} per command (--host, --port and --binary belong to it)`);
  const which = main[0];
  const ports = (f.port ?? []).map(port);
  const binaries = f.binary ?? [];
  if (f.host !== undefined && which !== "addRule" && which !== "removeEndpoint") throw new Error("--host needs --add-rule or --remove-endpoint");
  if (ports.length > 0 && which !== "addRule" && which !== "removeEndpoint") throw new Error("--port needs --add-rule or --remove-endpoint");
  if (binaries.length > 0 && which !== "addRule" && which !== "removeBinary") throw new Error("--binary needs --add-rule or --remove-binary");
  for (const [k, v] of [["--add-rule", f.addRule], ["--remove-endpoint", f.removeEndpoint], ["--remove-binary", f.removeBinary], ["--host", f.host]] as const) {
    if (v !== undefined && v.trim() === "") throw new Error(`${k} must not be empty`);
  }
  const ops: PolicyMergeOperationInput[] = [];
  for (const ruleName of f.removeRule ?? []) {
    if (ruleName.trim() === "") throw new Error("--remove-rule must not be empty");
    ops.push({ operation: { case: "removeRule", value: { ruleName } } });
  }
  if (which === "removeEndpoint") {
    if (f.host === undefined || ports.length !== 1) throw new Error("--remove-endpoint needs --host and one --port");
    ops.push({ operation: { case: "removeEndpoint", value: { ruleName: f.removeEndpoint!, host: f.host, port: ports[0]! } } });
  }
  if (which === "removeBinary") {
    if (binaries.length !== 1) throw new Error("--remove-binary needs one --binary");
    ops.push({ operation: { case: "removeBinary", value: { ruleName: f.removeBinary!, binaryPath: binaries[0]! } } });
  }
  if (which === "addRule") {
    if (f.host === undefined || ports.length === 0) throw new Error("--add-rule needs --host and --port");
    const name = f.addRule!;
    ops.push({
      operation: {
        case: "addRule",
        value: { ruleName: name, rule: { name, endpoints: [{ host: f.host, ports }], binaries: binaries.map((path) => ({ path })) } },
      },
    });
  }
  return ops;
}

/** Reads a file of merge operations. Throws PolicyFileError naming the file and the entry. */
export async function readMergeFile(path: string): Promise<PolicyMergeOperationInput[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new PolicyFileError(`cannot read merge file ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
  return parseMergeOperations(text, path);
}

/** Parses merge operations: a list, or `{ mergeOperations: [...] }`. */
export function parseMergeOperations(text: string, name: string): PolicyMergeOperationInput[] {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors[0]) throw new PolicyFileError(`${name}: not valid YAML or JSON: ${doc.errors[0].message.split("\n")[0]}`);
  let value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const wrapped = (value as Record<string, unknown>).mergeOperations ?? (value as Record<string, unknown>).merge_operations;
    value = wrapped === undefined ? [value] : wrapped;
  }
  if (!Array.isArray(value) || value.length === 0) {
    throw new PolicyFileError(`${name}: expected a list of merge operations (addRule, removeRule, removeEndpoint, removeBinary, addAllowRules, addDenyRules)`);
  }
  return value.map((item, i) => {
    try {
      const op = fromJson(PolicyMergeOperationSchema, item as JsonValue);
      if (op.operation.case === undefined) throw new Error("names no operation");
      return op;
    } catch (err) {
      const why = (err as Error).message.replace(/^cannot decode message \S+ from JSON: /, "");
      throw new PolicyFileError(`${name}: operation ${i + 1}: ${why}`);
    }
  });
}

/** One line per operation, for people: `remove rule legacy`, `add rule npm (registry.npmjs.org:443)`. */
export function describeMergeOperation(op: PolicyMergeOperationInput): string {
  const json = toJson(PolicyMergeOperationSchema, create(PolicyMergeOperationSchema, op)) as Record<string, Record<string, unknown>>;
  const [kind, body] = Object.entries(json)[0] ?? ["unknown", {}];
  const rule = String(body.ruleName ?? "");
  switch (kind) {
    case "addRule": {
      const endpoints = ((body.rule as { endpoints?: { host?: string; ports?: number[]; port?: number }[] } | undefined)?.endpoints ?? [])
        .map((e) => `${e.host}:${(e.ports ?? (e.port ? [e.port] : [])).join(",")}`)
        .join(" ");
      return `add rule ${rule}${endpoints ? ` (${endpoints})` : ""}`;
    }
    case "removeRule":
      return `remove rule ${rule}`;
    case "removeEndpoint":
      return `remove endpoint ${body.host}:${body.port} from rule ${rule}`;
    case "removeBinary":
      return `remove binary ${body.binaryPath} from rule ${rule}`;
    case "addAllowRules":
    case "addDenyRules": {
      const target = (body.target ?? {}) as { ruleName?: string; host?: string };
      return `${kind === "addAllowRules" ? "add allow rules to" : "add deny rules to"} ${target.ruleName ?? ""}${target.host ? ` (${target.host})` : ""}`;
    }
    default:
      return kind;
  }
}
