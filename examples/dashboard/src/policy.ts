// The policy editor's model: text in YAML or JSON ⇄ SandboxPolicy. The text is the protobuf JSON
// mapping of SandboxPolicy (camelCase or snake_case field names, enum names as strings), checked
// with protobuf-es `fromJson` before anything is sent. Errors name the line and column when known
// and the path of the offending field, e.g. `networkPolicies.github.endpoints[0].ports[1]`.

import { fromJson, toJson, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { LineCounter, isMap, isSeq, parseDocument, stringify, type Node as YamlNode } from "yaml";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";

export type PolicyFormat = "yaml" | "json";

export type ParsedPolicy =
  | { readonly ok: true; readonly policy: SandboxPolicy }
  | {
      readonly ok: false;
      /** One line: `line 8, column 22: networkPolicies.github.endpoints[0].ports[1]: expected number (uint32), got "https"`. */
      readonly message: string;
      /** The offending field's path, when known. */
      readonly field?: string;
    };

type Path = readonly (string | number)[];

/** The policy as editor text (defaults omitted, as protobuf JSON does). */
export function formatPolicy(policy: SandboxPolicy | undefined, format: PolicyFormat): string {
  const json = policy === undefined ? {} : toJson(SandboxPolicySchema, policy);
  return format === "json" ? `${JSON.stringify(json, null, 2)}\n` : stringify(json, { lineWidth: 0 });
}

/** Parses and validates editor text. Never throws. */
export function parsePolicy(text: string, format: PolicyFormat): ParsedPolicy {
  const lines = new LineCounter();
  // Also parsed as YAML for JSON text (JSON is YAML): that locates fields for error messages.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  let value: unknown;
  if (format === "json") {
    try {
      value = text.trim() === "" ? null : JSON.parse(text);
    } catch (err) {
      return { ok: false, message: jsonError(err as Error, text) };
    }
  } else {
    const syntax = doc.errors[0];
    if (syntax !== undefined) {
      const { line, col } = lines.linePos(syntax.pos[0]);
      return { ok: false, message: `line ${line}, column ${col}: not valid YAML: ${syntax.message.split("\n")[0]}` };
    }
    value = doc.toJS({ maxAliasCount: 100 });
  }
  if (value === null || value === undefined) return { ok: false, message: "the policy is empty; expected a SandboxPolicy" };
  if (!isObject(value)) return { ok: false, message: "expected a mapping of SandboxPolicy fields (version, filesystem, networkPolicies, …)" };
  try {
    return { ok: true, policy: fromJson(SandboxPolicySchema, value as JsonValue) };
  } catch (err) {
    const found = locate(SandboxPolicySchema, value, []) ?? { path: [], message: clean((err as Error).message), key: false };
    const field = formatPath(found.path);
    const at = position(doc.contents, lines, found.path, found.key);
    return { ok: false, message: `${at}${field === "" ? "" : `${field}: `}${found.message}`, ...(field === "" ? {} : { field }) };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const decodeError = (desc: DescMessage, json: unknown): string | undefined => {
  try {
    fromJson(desc, json as JsonValue);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};

// Message fields to descend into; well-known types (Struct, Duration) have their own JSON forms.
const inner = (f: DescField): DescMessage | undefined => {
  const m = f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") || (f.fieldKind === "map" && f.mapKind === "message") ? f.message : undefined;
  return m === undefined || m.typeName.startsWith("google.protobuf.") ? undefined : m;
};

interface Found {
  readonly path: Path;
  readonly message: string;
  /** The last path element is a key that names no field. */
  readonly key: boolean;
}

/** The innermost field of `json` that does not decode as `desc`. */
function locate(desc: DescMessage, json: unknown, path: Path): Found | undefined {
  if (!isObject(json)) return undefined;
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    if (field === undefined) {
      return { path: [...path, key], message: `unknown field "${key}" in ${desc.name}; expected one of ${desc.fields.map((f) => f.jsonName).join(", ")}`, key: true };
    }
    const error = decodeError(desc, { [key]: value });
    if (error === undefined) continue;
    const here = [...path, key];
    const sub = inner(field);
    const item = (p: Path, v: unknown, wrapped: unknown): Found | undefined => {
      if (sub && isObject(v) && decodeError(sub, v) !== undefined) return locate(sub, v, p);
      const e = decodeError(desc, wrapped);
      return e === undefined ? undefined : { path: p, message: valueMessage(field, v, e), key: false };
    };
    if (field.fieldKind === "message" && sub && isObject(value)) return locate(sub, value, here) ?? { path: here, message: clean(error), key: false };
    if (field.fieldKind === "list" && Array.isArray(value)) {
      for (const [i, v] of value.entries()) {
        const found = item([...here, i], v, { [key]: [v] });
        if (found) return found;
      }
    }
    if (field.fieldKind === "map" && isObject(value)) {
      for (const [k, v] of Object.entries(value)) {
        const found = item([...here, k], v, { [key]: { [k]: v } });
        if (found) return found;
      }
    }
    return { path: here, message: valueMessage(field, value, error), key: false };
  }
  return undefined;
}

function valueMessage(field: DescField, value: unknown, error: string): string {
  const e = field.fieldKind === "enum" ? field.enum : field.fieldKind === "list" && field.listKind === "enum" ? field.enum : undefined;
  if (e !== undefined && (typeof value === "string" || typeof value === "number")) {
    return `${JSON.stringify(value)} is not a ${e.name}; expected one of ${e.values.map((v) => v.name).join(", ")}`;
  }
  return clean(error);
}

// "cannot decode field a.b.C.d from JSON: list item #1: expected number (uint32), got "x"" → "expected number (uint32), got "x""
const clean = (message: string): string =>
  message.replace(/^cannot decode (?:field|message|enum) \S+ from JSON: /, "").replace(/^(?:list item #\d+|map key \S+|map value for key \S+): /, "");

function formatPath(path: Path): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(p)) out += out === "" ? p : `.${p}`;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out;
}

/** `line L, column C: ` of the path's node (its key when `key`), or "" when it cannot be found. */
function position(root: unknown, lines: LineCounter, path: Path, key: boolean): string {
  let node = root;
  let at: YamlNode | undefined;
  for (const [i, p] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((it) => String((it.key as { value?: unknown } | null)?.value ?? it.key) === String(p));
      if (!pair) return "";
      at = (i === path.length - 1 && key ? pair.key : (pair.value ?? pair.key)) as YamlNode | undefined;
      node = pair.value;
    } else if (isSeq(node) && typeof p === "number") {
      at = node.items[p] as YamlNode | undefined;
      node = at;
    } else return "";
  }
  const offset = at?.range?.[0];
  if (offset === undefined) return "";
  const { line, col } = lines.linePos(offset);
  return `line ${line}, column ${col}: `;
}

// "Expected ',' or '}' after property value in JSON at position 42 (line 3 column 5)" → "line 3, column 5: not valid JSON: Expected ',' or '}' after property value"
function jsonError(err: Error, text: string): string {
  const first = err.message.split("\n")[0]!;
  const m = /at position (\d+)/.exec(first);
  const message = first.replace(/\s*\(line \d+ column \d+\)/, "").replace(/ in JSON at position \d+/, "");
  if (!m) return `not valid JSON: ${message}`;
  const before = text.slice(0, Number(m[1]));
  return `line ${before.split("\n").length}, column ${before.length - before.lastIndexOf("\n")}: not valid JSON: ${message}`;
}
