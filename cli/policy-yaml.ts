// A SandboxPolicy as the YAML the command line shows and diffs (shared/policy-yaml.ts, which the
// dashboard's revision diff uses too), and which static fields two policies differ in.

import type { JsonValue } from "@bufbuild/protobuf";
import type { SandboxPolicy } from "openshell-config/raw";
import { policyJson } from "../shared/policy-yaml.js";

export { policyJson, policyYaml } from "../shared/policy-yaml.js";

/** Fields fixed when a sandbox is created; the gateway refuses a policy that changes them. */
export const STATIC_FIELDS = ["filesystem", "landlock", "process", "networkMiddlewares"] as const;

/** The static fields in which `next` differs from `current`. */
export function staticChanges(current: SandboxPolicy | undefined, next: SandboxPolicy): string[] {
  const a = policyJson(current) as Record<string, JsonValue>;
  const b = policyJson(next) as Record<string, JsonValue>;
  return STATIC_FIELDS.filter((f) => JSON.stringify(a[f] ?? null) !== JSON.stringify(b[f] ?? null));
}
