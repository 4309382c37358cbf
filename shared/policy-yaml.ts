// A SandboxPolicy as the YAML people read and diff: the protobuf JSON mapping (field names in
// camelCase, defaults left out), fields in their declared order and the entries of every map
// (network rules by name, …) sorted by key, so that two equal policies print the same text
// whatever order their files or the gateway gave. Shared by the command line (`policy get`,
// `policy diff`) and the dashboard (the diff of two policy revisions).

import { create, toJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { stringify } from "yaml";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";

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
