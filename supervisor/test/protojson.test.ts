// The compiled proto JSON writer (protojson.ts) gives the same text as toJson, byte for byte.

import { create, fromBinary, toBinary, toJson, type DescMessage } from "@bufbuild/protobuf";
import { EffectiveSettingSchema, ProviderEnvironmentSnapshotSchema, ProviderEnvironmentValueSchema, ProviderProfileCredentialSchema, SandboxConfigSnapshotSchema, SandboxPolicySchema, StaticCredentialBindingSchema } from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import { messageToJson } from "../src/protojson.js";

const full = create(SandboxPolicySchema, {
  version: 7,
  filesystem: { includeWorkdir: true, readOnly: ["/usr", "/etc"], readWrite: ["/tmp"] },
  landlock: { compatibility: "best_effort" },
  process: { runAsUser: "sandbox", runAsGroup: "" },
  networkPolicies: {
    "10": { name: "numeric key" },
    github: {
      name: "github",
      endpoints: [
        {
          host: "api.github.com",
          port: 443,
          protocol: "rest",
          tls: 2,
          enforcement: 1,
          access: 3,
          rules: [{ allow: { method: "GET", path: "/repos/**", query: { q: { glob: "a*", any: ["x", "y"] } }, fields: ["f"], params: { p: { any: ["1"] } } } }, {}],
          allowedIps: ["10.0.0.0/8"],
          ports: [443, 8443],
          denyRules: [{ method: "DELETE", path: "/x", operationType: "mutation", operationName: "del" }],
          allowEncodedSlash: true,
          persistedQueries: "strict",
          graphqlPersistedQueries: { abc: { operationType: "query", operationName: "q", fields: ["a", "b"] } },
          graphqlMaxBodyBytes: 1024,
          path: "/v1",
          websocketCredentialRewrite: true,
          requestBodyCredentialRewrite: true,
          advisorProposed: true,
          credentialSigning: "sigv4",
          signingService: "s3",
          signingRegion: "eu-west-1",
          jsonRpcMaxBodyBytes: 99,
          mcp: { strictToolNames: false, versions: ["2025-06-18"] },
          credentialBinding: { provider: "llm" },
          allowUninspectedCredentials: true,
          providerCredentialed: true,
        },
        { host: "unknown-enum.example.com", tls: 99 as never },
      ],
      binaries: [{ path: "/usr/bin/git" }, {}],
    },
    empty: {},
  },
  networkMiddlewares: {
    mw: { name: "mw", middleware: "audit", config: { fields: { a: { kind: { case: "stringValue", value: "x" } }, n: { kind: { case: "numberValue", value: 1.5 } }, z: { kind: { case: "nullValue", value: 0 } } } }, onError: "deny", endpoints: { include: ["github"], exclude: [] }, order: -3 },
    bare: {},
  },
});

function same(desc: DescMessage, m: object) {
  expect(JSON.stringify(messageToJson(desc, m))).toBe(JSON.stringify(toJson(desc, m as never)));
}

describe("messageToJson", () => {
  it("writes provider credential descriptions and bindings as toJson does", () => {
    const binding = create(StaticCredentialBindingSchema, { endpoints: [{ host: "api.openai.com", port: 443, path: "/v1/**" }, {}], credentialIdentity: "llm:API_KEY", workloadCredentialHandle: "h" });
    same(StaticCredentialBindingSchema, binding);
    same(StaticCredentialBindingSchema, fromBinary(StaticCredentialBindingSchema, toBinary(StaticCredentialBindingSchema, binding)));
    same(StaticCredentialBindingSchema, create(StaticCredentialBindingSchema));
    const cred = create(ProviderProfileCredentialSchema, { name: "token", envVars: ["T"], required: true, authStyle: "bearer", refresh: { strategy: 1, tokenUrl: "https://x", scopes: ["a"], refreshBefore: { seconds: 30n } }, tokenGrant: {} });
    same(ProviderProfileCredentialSchema, cred);
    same(ProviderProfileCredentialSchema, fromBinary(ProviderProfileCredentialSchema, toBinary(ProviderProfileCredentialSchema, cred)));
  });
  it("writes a policy with every field set as toJson does, created and decoded", () => {
    same(SandboxPolicySchema, full);
    same(SandboxPolicySchema, fromBinary(SandboxPolicySchema, toBinary(SandboxPolicySchema, full)));
  });
  it("writes empty and partly set policies as toJson does", () => {
    same(SandboxPolicySchema, create(SandboxPolicySchema));
    same(SandboxPolicySchema, create(SandboxPolicySchema, { version: 1, filesystem: {} }));
    same(SandboxPolicySchema, fromBinary(SandboxPolicySchema, toBinary(SandboxPolicySchema, create(SandboxPolicySchema, { networkPolicies: { a: { endpoints: [{ mcp: {} }] } } }))));
  });
  it("leaves messages it does not compile (64-bit integers, oneofs, well-known types) to toJson with the same result", () => {
    same(SandboxConfigSnapshotSchema, create(SandboxConfigSnapshotSchema, { policy: full, version: 3, configRevision: 12n, policyHash: "ab", settings: { s: { value: { value: { case: "boolValue", value: true } } } } }));
    same(EffectiveSettingSchema, create(EffectiveSettingSchema));
    same(EffectiveSettingSchema, create(EffectiveSettingSchema, { value: { value: { case: "stringValue", value: "v" } }, scope: 1 }));
    same(ProviderEnvironmentValueSchema, create(ProviderEnvironmentValueSchema, { name: "A", value: "1", classification: 2, expirationTime: { seconds: 5n, nanos: 1 }, staticCredentialBinding: { credentialIdentity: "llm:A" } }));
    same(ProviderEnvironmentSnapshotSchema, create(ProviderEnvironmentSnapshotSchema, { providerEnvRevision: 4n, policyHash: "h", values: [{ name: "A", value: "1" }] }));
  });
});
