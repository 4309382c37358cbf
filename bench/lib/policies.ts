// The policies every benchmark sends: small, valid, and different per tag, so each update is a
// real change (a new revision) rather than an unchanged one.

import { create } from "@bufbuild/protobuf";
import type { SandboxPolicyInput } from "openshell-config";
import { SandboxPolicySchema } from "openshell-config/raw";

/** A valid policy whose content depends on `tag`; `protocol: "ftp"` makes the supervisor reject it. */
export function policyFor(tag: string, protocol = ""): SandboxPolicyInput {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
    networkPolicies: {
      github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] },
      bench: { name: "bench", endpoints: [{ host: `${tag}.example.com`, ports: [443], protocol }], binaries: [{ path: "/usr/bin/curl" }] },
    },
  });
}
