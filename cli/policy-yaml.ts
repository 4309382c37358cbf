// A SandboxPolicy as the YAML the command line shows and diffs: the protobuf JSON mapping (field
// names in camelCase, defaults left out), fields in their declared order and the entries of every
// map (network rules by name, …) sorted by key, so that two equal policies print the same text
// whatever order their files or the gateway gave. Also which static fields two policies differ in.

import { create, toJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { stringify } from "yaml";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";

/** Fields fixed when a sandbox is created; the gateway refuses a policy that changes them. */
export const STATIC_FIELDS = ["filesystem", "landlock", "process", "networkMiddlewares"] as const;

const isObject = (v: unknown): v is Record<string, JsonValue> => typeof v === "object" && v !== null && !Array.isArray(v);

function sortMaps(desc: DescMessage, json: JsonValue): JsonValue {
  if (!isObject(json)) return json;
  const out: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key);
    const inner = field === undefined ? undefined : field.fieldKind === "message" ? field.message : field.fieldKind === "list" && field.listKind === "message" ? field.message : field.fieldKind === "map" && field.mapKind === "message" ? field.message : undefined;
    const walk = (v: JsonValue) => (inner && !inner.typeName.startsWith("google.protobuf.") ? sortMaps(inner, v) : v);
    if (field?.fieldKind === "map" && isObject(value)) {
      out[key] = Object.fromEntries(Object.keys(value).sort().map((k) => [k, walk(value[k]!)]));
    } else if (Array.isArray(value)) {
      out[key] = value.map(walk);
    } else {
      out[key] = walk(value);
    }
  }
  return out;
}

/** The policy's canonical JSON (protobuf JSON, map entries sorted). */
export function policyJson(policy: SandboxPolicy | undefined): JsonValue {
  return sortMaps(SandboxPolicySchema, toJson(SandboxPolicySchema, policy ?? create(SandboxPolicySchema)));
}

/** The policy's canonical YAML. */
export function policyYaml(policy: SandboxPolicy | undefined): string {
  const json = policyJson(policy);
  return isObject(json) && Object.keys(json).length === 0 ? "{}\n" : stringify(json, { lineWidth: 0 });
}

/** The static fields in which `next` differs from `current`. */
export function staticChanges(current: SandboxPolicy | undefined, next: SandboxPolicy): string[] {
  const a = policyJson(current) as Record<string, JsonValue>;
  const b = policyJson(next) as Record<string, JsonValue>;
  return STATIC_FIELDS.filter((f) => JSON.stringify(a[f] ?? null) !== JSON.stringify(b[f] ?? null));
}
