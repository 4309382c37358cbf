// Reading a SandboxPolicy from a YAML or JSON file. The file is the protobuf JSON mapping of
// SandboxPolicy (camelCase or snake_case field names, enum names as strings) written as YAML or
// JSON; it is validated by converting it with protobuf-es `fromJson`. Errors name the file, the
// line and column when known, and the path of the offending field. A file too large to hold a
// policy the gateway accepts is refused before it is parsed: parsing YAML takes about a second
// per megabyte, and the file may be anything (a FIFO, a device, a 15 MB mistake).

import { statSync } from "node:fs";
import { extname } from "node:path";
import { fromJson, type DescEnum, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { LineCounter, isMap, isSeq, parseDocument, type Document, type Node as YamlNode } from "yaml";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";
import { readBounded } from "./bounded-file.js";
import { jsonDuplicateKey, yamlDuplicateKey, type DuplicateKey } from "./duplicate-keys.js";
import { editDistance } from "./suggest.js";

const MiB = 1024 * 1024;

/**
 * The largest policy the gateway accepts, in bytes of its binary encoding: every commit must leave
 * a sandbox's bootstrap message within the 3 MiB a supervisor takes (gateway/src/operations/
 * snapshot-cap.ts, DEFAULT_MAX_SNAPSHOT_BYTES; fixed in gateway/src/gateway.ts), which is tighter
 * than the 4 MiB request limit. Neither the SDK nor the gateway exports it to the command line.
 */
export const MAX_POLICY_BYTES = 3 * MiB;

/**
 * The largest policy file read. The text is larger than the encoding: measured on rule-heavy
 * policies, the YAML `policy get` prints is 2.2 times the encoding and indented JSON (jq's, or
 * JSON.stringify(…, null, 2)) 3.9 times, so 4 times the gateway's limit still reads back any policy
 * it holds, while a file that could never be accepted is refused at once instead of after minutes.
 */
export const MAX_POLICY_FILE_BYTES = 4 * MAX_POLICY_BYTES;

/** A policy file that cannot be read or is not a valid SandboxPolicy. */
export class PolicyFileError extends Error {
  override readonly name = "PolicyFileError";
  constructor(
    message: string,
    /** The offending field's path, e.g. `networkPolicies.github.endpoints[0].ports[1]`, when known. */
    readonly field?: string,
  ) {
    super(message);
  }
}

type Path = readonly (string | number)[];

const mib = (bytes: number) => `${Number((bytes / MiB).toFixed(1))} MiB`;

function tooLarge(name: string, bytes: number): PolicyFileError {
  return new PolicyFileError(
    `policy file ${name} is too large: ${mib(bytes)} (${bytes} bytes); a policy file may be at most ${mib(MAX_POLICY_FILE_BYTES)} ` +
      `(${MAX_POLICY_FILE_BYTES} bytes), and the gateway accepts a policy of at most ${mib(MAX_POLICY_BYTES)} encoded`,
  );
}

/** Reads and validates a policy file. Throws PolicyFileError. */
export async function readPolicyFile(path: string): Promise<SandboxPolicy> {
  // The size first, from stat (which does not open a FIFO), so that the error can give it.
  let size: number | undefined;
  try {
    const st = statSync(path);
    if (st.isFile()) size = st.size;
  } catch {
    // readBounded says why.
  }
  if (size !== undefined && size > MAX_POLICY_FILE_BYTES) throw tooLarge(path, size);
  const read = readBounded(path, MAX_POLICY_FILE_BYTES);
  if ("missing" in read) throw new PolicyFileError(`cannot read policy file ${path}: no such file`);
  if ("problem" in read) throw new PolicyFileError(`cannot read policy file ${path}: ${read.problem}`);
  return parsePolicy(read.text, path);
}

/** Parses policy text; `name` is the file name used in errors (and `.json` selects strict JSON). */
export function parsePolicy(text: string, name: string): SandboxPolicy {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_POLICY_FILE_BYTES) throw tooLarge(name, bytes);
  // Without the library's quadratic duplicate-key check; yamlDuplicateKey does it linearly.
  const lines = new LineCounter();
  let parsed: Document | undefined;
  const yamlDoc = () => (parsed ??= parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false }));
  let value: unknown;
  if (extname(name).toLowerCase() === ".json") {
    // Strict JSON. The YAML reading of the same text, much slower, is made only to locate a field
    // for an error message.
    try {
      value = text.trim() === "" ? null : JSON.parse(text);
    } catch (err) {
      throw new PolicyFileError(`${name}${jsonErrorPosition(err as Error, text)}: not valid JSON: ${jsonErrorMessage(err as Error)}`);
    }
    const duplicate = jsonDuplicateKey(text);
    if (duplicate) throw duplicateError(name, duplicate, (offset) => textPosition(text, offset));
  } else {
    const doc = yamlDoc();
    const syntax = doc.errors[0];
    if (syntax !== undefined) {
      const pos = lines.linePos(syntax.pos[0]);
      const message = syntax.code === "MULTIPLE_DOCS" ? "holds several YAML documents; put one policy in a file" : syntax.message.split("\n")[0]!;
      throw new PolicyFileError(`${name}:${pos.line}:${pos.col}: not valid YAML: ${message}`);
    }
    const duplicate = yamlDuplicateKey(doc);
    if (duplicate) throw duplicateError(name, duplicate, (offset) => lines.linePos(offset));
    value = doc.toJS({ maxAliasCount: 100 });
  }
  if (value === null || value === undefined) throw new PolicyFileError(`${name}: the file is empty; expected a SandboxPolicy`);
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new PolicyFileError(`${name}: expected a mapping of SandboxPolicy fields (version, filesystem, networkPolicies, …) at the top level`);
  }
  try {
    return fromJson(SandboxPolicySchema, value as JsonValue);
  } catch (err) {
    const found = locate(SandboxPolicySchema, value, []) ?? { path: [], message: cleanMessage((err as Error).message), unknownKey: false };
    const field = formatPath(found.path);
    const pos = position(yamlDoc(), lines, found.path, found.unknownKey);
    throw new PolicyFileError(`${name}${pos}: ${field === "" ? "" : `${field}: `}${found.message}`, field === "" ? undefined : field);
  }
}

type LinePos = { readonly line: number; readonly col: number };

/** `file:line:col: mapping.path: duplicate key "k" (first at line L, column C)`; the field is the key's path. */
function duplicateError(name: string, dup: DuplicateKey, at: (offset: number) => LinePos): PolicyFileError {
  const here = at(dup.offset);
  const first = at(dup.firstOffset);
  const within = formatPath(dup.path);
  return new PolicyFileError(
    `${name}:${here.line}:${here.col}: ${within === "" ? "" : `${within}: `}duplicate key ${JSON.stringify(dup.key)} (first at line ${first.line}, column ${first.col})`,
    formatPath([...dup.path, dup.key]),
  );
}

interface Found {
  readonly path: Path;
  readonly message: string;
  /** True when the last path element is a key that names no field. */
  readonly unknownKey: boolean;
}

const decodes = (desc: DescMessage, json: unknown): string | undefined => {
  try {
    fromJson(desc, json as JsonValue);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

// Well-known types (Struct, Duration) have their own JSON forms: report at the field, not inside.
const descend = (field: DescField): DescMessage | undefined => {
  const m = field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") || (field.fieldKind === "map" && field.mapKind === "message") ? field.message : undefined;
  return m === undefined || m.typeName.startsWith("google.protobuf.") ? undefined : m;
};

/** Finds the innermost field of `json` that does not decode as `desc`. */
function locate(desc: DescMessage, json: unknown, path: Path): Found | undefined {
  if (!isObject(json)) return undefined;
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    if (field === undefined) {
      return { path: [...path, key], message: unknownFieldMessage(desc, key), unknownKey: true };
    }
    const error = decodes(desc, { [key]: value });
    if (error === undefined) continue;
    const here = [...path, key];
    const inner = descend(field);
    if (field.fieldKind === "message" && inner && isObject(value)) {
      return locate(inner, value, here) ?? { path: here, message: cleanMessage(error), unknownKey: false };
    }
    if (field.fieldKind === "list" && Array.isArray(value)) {
      for (const [i, item] of value.entries()) {
        if (inner && isObject(item)) {
          const found = decodes(inner, item) !== undefined ? locate(inner, item, [...here, i]) : undefined;
          if (found) return found;
        }
        const itemError = decodes(desc, { [key]: [item] });
        if (itemError !== undefined) return { path: [...here, i], message: valueMessage(field, item, itemError), unknownKey: false };
      }
    }
    if (field.fieldKind === "map" && isObject(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (inner && isObject(v)) {
          const found = decodes(inner, v) !== undefined ? locate(inner, v, [...here, k]) : undefined;
          if (found) return found;
        }
        const entryError = decodes(desc, { [key]: { [k]: v } });
        if (entryError !== undefined) return { path: [...here, k], message: valueMessage(field, v, entryError), unknownKey: false };
      }
    }
    return { path: here, message: valueMessage(field, value, error), unknownKey: false };
  }
  return undefined;
}

function unknownFieldMessage(desc: DescMessage, key: string): string {
  const names = desc.fields.map((f) => f.jsonName);
  const distance = (n: string) => editDistance(n.toLowerCase(), key.toLowerCase());
  const near = names.find((n) => n.toLowerCase() === key.replace(/[_-]/g, "").toLowerCase()) ?? names.filter((n) => distance(n) <= 2).sort((a, b) => distance(a) - distance(b))[0];
  return `unknown field "${key}" in ${desc.name}${near ? ` (did you mean "${near}"?)` : ""}; expected one of ${names.join(", ")}`;
}

function enumOf(field: DescField): DescEnum | undefined {
  if (field.fieldKind === "enum") return field.enum;
  if (field.fieldKind === "list" && field.listKind === "enum") return field.enum;
  if (field.fieldKind === "map" && field.mapKind === "enum") return field.enum;
  return undefined;
}

function valueMessage(field: DescField, value: unknown, error: string): string {
  const e = enumOf(field);
  if (e !== undefined && (typeof value === "string" || typeof value === "number")) {
    return `${JSON.stringify(value)} is not a ${e.name}; expected one of ${e.values.map((v) => v.name).join(", ")}`;
  }
  return cleanMessage(error);
}

// "cannot decode field a.b.C.d from JSON: list item #1: expected number (uint32), got "x""
//   → "expected number (uint32), got "x""
function cleanMessage(message: string): string {
  return message
    .replace(/^cannot decode (?:field|message|enum) \S+ from JSON: /, "")
    .replace(/^(?:list item #\d+|map key \S+|map value for key \S+): /, "");
}

function formatPath(path: Path): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(p)) out += out === "" ? p : `.${p}`;
    else out += `[${JSON.stringify(p)}]`;
  }
  return out;
}

/** `:line:col` of the path's node (its key when `key`), or "" when it cannot be found. */
function position(doc: Document, lines: LineCounter, path: Path, key: boolean): string {
  if (path.length === 0) return "";
  let node: unknown = doc.contents;
  let at: YamlNode | undefined;
  for (const [i, p] of path.entries()) {
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((item) => String((item.key as { value?: unknown } | null)?.value ?? item.key) === String(p));
      if (!pair) return "";
      const k = pair.key as YamlNode | null;
      const v = pair.value as YamlNode | null;
      at = last && key ? (k ?? undefined) : (v ?? k ?? undefined);
      node = v;
    } else if (isSeq(node) && typeof p === "number") {
      const item = node.items[p] as YamlNode | undefined;
      if (!item) return "";
      at = item;
      node = item;
    } else {
      return "";
    }
  }
  const offset = at?.range?.[0];
  if (offset === undefined) return "";
  const { line, col } = lines.linePos(offset);
  return `:${line}:${col}`;
}

/** 1-based line and column of an offset in the text. */
function textPosition(text: string, offset: number): LinePos {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return { line, col: offset - (offset === 0 ? -1 : text.lastIndexOf("\n", offset - 1)) };
}

function jsonErrorPosition(err: Error, text: string): string {
  const m = /at position (\d+)/.exec(err.message);
  if (!m) return "";
  const { line, col } = textPosition(text, Number(m[1]));
  return `:${line}:${col}`;
}

function jsonErrorMessage(err: Error): string {
  return err.message.replace(/\s*\(line \d+ column \d+\)/, "").replace(/ in JSON at position \d+/, "").split("\n")[0]!;
}
