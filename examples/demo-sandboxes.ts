// The sandboxes `npm run gateway` and `npm run dashboard` keep running: dev, staging and prod, each
// labelled env=<name> and created with DEMO_POLICY. A sandbox's static policy fields (filesystem,
// landlock, process, network middlewares) are fixed when it is created; only its network rules
// change later. The README's example policy.yaml therefore repeats DEMO_POLICY's static fields
// exactly and changes only network rules (test/readme/readme-cli.test.ts runs it against these
// sandboxes).

import { create, equals } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { OpenShell, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";

export const DEMO_SANDBOXES = ["dev", "staging", "prod"] as const;

/** The policy each demo sandbox is created with (version 1). */
export const DEMO_POLICY: SandboxPolicy = create(SandboxPolicySchema, {
  version: 1,
  filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
  networkPolicies: {
    github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] },
  },
});

/** The fields of a policy that a sandbox-scoped update may not change. */
function staticFields(p: SandboxPolicy | undefined): SandboxPolicy {
  return create(SandboxPolicySchema, {
    filesystem: p?.filesystem,
    landlock: p?.landlock,
    process: p?.process,
    networkMiddlewares: p?.networkMiddlewares ?? {},
  });
}

/**
 * Creates the demo sandboxes that do not exist yet. Returns a warning for each existing one whose
 * static fields differ from DEMO_POLICY's (made by an older version of this script): the
 * README's policy.yaml would be refused for it.
 */
export async function ensureDemoSandboxes(raw: Client<typeof OpenShell>, stateDir: string): Promise<string[]> {
  const warnings: string[] = [];
  for (const name of DEMO_SANDBOXES) {
    let existing;
    try {
      existing = (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox;
    } catch (err) {
      if (ConnectError.from(err).code !== Code.NotFound) throw err;
    }
    if (existing === undefined) {
      await raw.createSandbox({ name, labels: { env: name }, spec: { policy: DEMO_POLICY }, workspaceScope: workspaceScope() });
    } else if (!equals(SandboxPolicySchema, staticFields(existing.spec?.policy), staticFields(DEMO_POLICY))) {
      warnings.push(
        `sandbox ${name} was created (by an older version of this script) with other static fields than the README's policy.yaml; ` +
          `to recreate it, stop, remove ${stateDir} and start again`,
      );
    }
  }
  return warnings;
}
