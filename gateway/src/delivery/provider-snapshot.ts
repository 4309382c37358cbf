// The provider environment a sandbox receives: the values of every attached provider, secret
// ones included. This snapshot travels only on the supervisor's own stream and is never logged.

import { create } from "@bufbuild/protobuf";
import {
  ProviderEnvironmentSnapshotSchema,
  ProviderEnvironmentValueClassification,
  ProviderReadinessReason,
  StaticCredentialBindingSchema,
  type ProviderEnvironmentSnapshot,
  type ProviderEnvironmentValue,
  type SandboxPolicy,
  type StaticCredentialBinding,
  type StaticCredentialEndpointBinding,
} from "openshell-config/raw";
import type { SandboxRecord, Store } from "../store/store.js";

/** The parts of the sandbox snapshot the provider snapshot is derived from. */
export interface ProviderSnapshotBasis {
  /** The effective policy; its endpoints' `credential_binding` bind provider credentials. */
  readonly policy?: SandboxPolicy | undefined;
  readonly policyHash: string;
}

/** An empty endpoint path binds the whole endpoint: the "any path" glob. */
const ANY_PATH = "/**";

/**
 * The endpoints of `policy` bound to `provider` (`credential_binding.provider`), one per host,
 * port and path, in rule-name order. `ports` takes precedence over the legacy `port`.
 */
export function boundEndpoints(policy: SandboxPolicy | undefined, provider: string): StaticCredentialEndpointBinding[] {
  const out: StaticCredentialEndpointBinding[] = [];
  const seen = new Set<string>();
  for (const ruleName of Object.keys(policy?.networkPolicies ?? {}).sort()) {
    for (const ep of policy!.networkPolicies[ruleName]!.endpoints) {
      if (ep.credentialBinding?.provider !== provider) continue;
      const path = ep.path === "" ? ANY_PATH : ep.path;
      for (const port of ep.ports.length > 0 ? ep.ports : [ep.port]) {
        const key = `${ep.host}\0${port}\0${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({ $typeName: "openshell.v1.StaticCredentialEndpointBinding", host: ep.host, port, path });
      }
    }
  }
  return out;
}

/**
 * Readiness reasons this gateway sends (upstream meanings, `ProviderReadinessReason`):
 * - UNSPECIFIED: the snapshot is the complete environment, including a sandbox without
 *   providers. Upstream supervisors install a snapshot only when its reason is UNSPECIFIED,
 *   CREDENTIALS_WITHHELD or CREDENTIAL_EXPIRED, so UNSPECIFIED is "ready to install".
 * - CREDENTIALS_WITHHELD: an attached provider could not be read, so its values are left out;
 *   the snapshot is still installable (fail closed for that provider's credentials).
 * The WAITING_FOR_* and *_FAILED reasons describe what a supervisor has or has not installed;
 * they belong to readiness tracking, not to a snapshot the gateway builds from its own store,
 * and UNSUPPORTED_SUPERVISOR does not arise: every streamed supervisor receives the bindings.
 */
export async function buildProviderSnapshot(
  store: Pick<Store, "providerByName">,
  sb: SandboxRecord,
  basis: ProviderSnapshotBasis,
): Promise<ProviderEnvironmentSnapshot> {
  const values: ProviderEnvironmentValue[] = [];
  let readinessReason = ProviderReadinessReason.UNSPECIFIED;
  for (const name of sb.providers) {
    const provider = await store.providerByName(sb.workspace, name);
    if (!provider) {
      readinessReason = ProviderReadinessReason.CREDENTIALS_WITHHELD;
      continue;
    }
    const endpoints = boundEndpoints(basis.policy, name);
    for (const v of provider.values) {
      // A credential the policy binds to endpoints is a static credential; any other one is a
      // plain secret, and config values are not secret.
      let classification = v.secret ? ProviderEnvironmentValueClassification.UNSPECIFIED : ProviderEnvironmentValueClassification.NON_SECRET;
      let binding: StaticCredentialBinding | undefined;
      if (v.secret && endpoints.length > 0) {
        classification = ProviderEnvironmentValueClassification.STATIC_CREDENTIAL;
        binding = create(StaticCredentialBindingSchema, {
          endpoints,
          credentialIdentity: `${name}:${v.name}`,
          // No workload identity here, so no workload credential handle.
          workloadCredentialHandle: "",
        });
      }
      values.push({
        $typeName: "openshell.v1.ProviderEnvironmentValue",
        name: v.name,
        value: v.value,
        classification,
        staticCredentialBinding: binding,
        expirationTime: undefined,
      });
    }
  }
  return create(ProviderEnvironmentSnapshotSchema, {
    providerEnvRevision: sb.providerEnvRevision,
    values,
    // The provider model holds static values only (credentials and config); it has no profile
    // credentials that are refreshed or granted at run time, so dynamic_credentials stays empty.
    dynamicCredentials: {},
    policyHash: basis.policyHash,
    readinessReason,
  });
}
