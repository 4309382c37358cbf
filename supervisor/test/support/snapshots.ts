// Builders of the snapshots a gateway delivers, for supervisor tests: sandbox config snapshots
// with a consistent revision tuple, provider environments, and small policies.

import { createHash } from "node:crypto";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  NetworkTlsMode,
  PolicySource,
  ProviderCredentialRefreshStrategy,
  ProviderCredentialTokenGrantType,
  ProviderEnvironmentSnapshotSchema,
  ProviderEnvironmentValueClassification,
  ProviderReadinessReason,
  SandboxConfigSnapshotSchema,
  SandboxPolicySchema,
  SupervisorMiddlewareServiceSchema,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigSnapshot,
  type SandboxPolicy,
} from "openshell-config/raw";

export interface EndpointInit {
  host: string;
  port?: number;
  protocol?: string;
  tls?: NetworkTlsMode;
  rules?: { method: string; path: string }[];
  denyRules?: { method: string; path: string }[];
}

/** A policy with one rule per entry of `rules` (rule name → endpoints). */
export function policy(rules: Record<string, EndpointInit[]> = { github: [{ host: "api.github.com", port: 443, protocol: "rest", rules: [{ method: "GET", path: "/**" }] }] }): SandboxPolicy {
  const networkPolicies: NonNullable<MessageInitShape<typeof SandboxPolicySchema>["networkPolicies"]> = {};
  for (const [name, eps] of Object.entries(rules)) {
    networkPolicies[name] = {
      name,
      endpoints: eps.map((e) => ({
        host: e.host,
        port: e.port ?? 443,
        protocol: e.protocol ?? "",
        tls: e.tls ?? NetworkTlsMode.UNSPECIFIED,
        rules: (e.rules ?? []).map((r) => ({ allow: { method: r.method, path: r.path } })),
        denyRules: (e.denyRules ?? []).map((r) => ({ method: r.method, path: r.path })),
      })),
      binaries: [{ path: "/usr/bin/curl" }],
    };
  }
  return create(SandboxPolicySchema, { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] }, networkPolicies });
}

/** An invalid policy: L7 rules on an L4 (tcp) endpoint. */
export function invalidPolicy(): SandboxPolicy {
  return policy({ db: [{ host: "db.internal", port: 5432, protocol: "tcp", rules: [{ method: "GET", path: "/" }] }] });
}

export interface SandboxSnapshotInit {
  version?: number;
  policy?: SandboxPolicy;
  settings?: Record<string, string>;
  settingsRevision?: bigint;
  providerEnvRevision?: bigint;
  mode?: string;
  services?: { name: string; endpoint: string }[];
  source?: PolicySource;
  globalPolicyVersion?: number;
  configurationError?: string;
  instanceId?: string;
}

export function sandboxSnapshot(init: SandboxSnapshotInit = {}): SandboxConfigSnapshot {
  const p = init.policy ?? policy();
  const policyHash = createHash("sha256").update(toBinary(SandboxPolicySchema, p)).digest("hex");
  const settings: SandboxConfigSnapshot["settings"] = {};
  for (const [k, v] of Object.entries(init.settings ?? {})) {
    settings[k] = { $typeName: "openshell.sandbox.v1.EffectiveSetting", value: { $typeName: "openshell.sandbox.v1.SettingValue", value: { case: "stringValue", value: v } }, scope: 1 };
  }
  const configRevision = createHash("sha256").update(policyHash).update(JSON.stringify(init.settings ?? {})).digest().readBigUInt64BE(0) & 0x7fff_ffff_ffff_ffffn;
  return create(SandboxConfigSnapshotSchema, {
    policy: p,
    version: init.version ?? 1,
    policyHash,
    settings,
    configRevision,
    policySource: init.source ?? PolicySource.SANDBOX,
    globalPolicyVersion: init.globalPolicyVersion ?? 0,
    providerEnvRevision: init.providerEnvRevision ?? 1n,
    supervisorMiddlewareServices: (init.services ?? []).map((s) => create(SupervisorMiddlewareServiceSchema, { name: s.name, grpcEndpoint: s.endpoint })),
    workspace: "default",
    policyValidationFailureMode: init.mode ?? "retain_last_valid",
    settingsRevision: init.settingsRevision ?? 1n,
    configurationError: init.configurationError ?? "",
    configurationInstanceId: init.instanceId ?? "",
  });
}

export function providerSnapshot(revision = 1n, values: Record<string, string> = {}): ProviderEnvironmentSnapshot {
  return create(ProviderEnvironmentSnapshotSchema, {
    providerEnvRevision: revision,
    values: Object.entries(values).map(([name, value]) => ({ name, value })),
    providerAttachmentEpoch: "epoch-1",
  });
}

/**
 * A provider environment in the full upstream shape (UPSTREAM.md §7): `secret` as a static
 * credential API_KEY bound to api.example.com, REGION as a non-secret value, and a dynamic
 * credential "github" described down to its refresh and token grant (no secret in it).
 */
export function boundProviderSnapshot(revision: bigint, secret: string, readinessReason = ProviderReadinessReason.UNSPECIFIED): ProviderEnvironmentSnapshot {
  return create(ProviderEnvironmentSnapshotSchema, {
    providerEnvRevision: revision,
    providerAttachmentEpoch: "epoch-1",
    policyHash: "policy-hash-1",
    readinessReason,
    values: [
      {
        name: "API_KEY",
        value: secret,
        classification: ProviderEnvironmentValueClassification.STATIC_CREDENTIAL,
        staticCredentialBinding: {
          endpoints: [{ host: "api.example.com", port: 443, path: "/v1/**" }],
          credentialIdentity: "llm:API_KEY",
          workloadCredentialHandle: "",
        },
      },
      { name: "REGION", value: "eu", classification: ProviderEnvironmentValueClassification.NON_SECRET },
    ],
    dynamicCredentials: {
      github: {
        name: "GitHub token",
        description: "installation token minted at run time",
        envVars: ["GITHUB_TOKEN"],
        required: true,
        authStyle: "bearer",
        headerName: "Authorization",
        refresh: {
          strategy: ProviderCredentialRefreshStrategy.OAUTH2_CLIENT_CREDENTIALS,
          tokenUrl: "https://auth.example.com/token",
          scopes: ["repo"],
          refreshBefore: { seconds: 300n },
          material: [{ name: "client_secret", description: "OAuth client secret", required: true, secret: true }],
        },
        tokenGrant: { tokenEndpoint: "https://sts.example.com/token", grantType: ProviderCredentialTokenGrantType.TOKEN_EXCHANGE, cacheTtl: { seconds: 60n } },
      },
    },
  });
}
