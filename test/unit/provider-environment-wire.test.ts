// The provider-environment messages that ride ConfigBootstrap.provider_environment and
// ConfigUpdate.provider_environment, checked against UPSTREAM.md §7 two ways: the generated
// descriptors (every field's name, number and type, reserved numbers, every enum value's name
// and number) and bytes built by hand from §7's field numbers and wire types, decoded by the
// generated code. Any drift from the upstream shape fails here.

import { create, equals, fromBinary, ScalarType, toBinary, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";
import {
  ProviderCredentialRefreshMaterialSchema,
  ProviderCredentialRefreshOutputSchema,
  ProviderCredentialRefreshSchema,
  ProviderCredentialRefreshStrategy,
  ProviderCredentialRefreshStrategySchema,
  ProviderCredentialTokenGrantAudienceOverrideSchema,
  ProviderCredentialTokenGrantSchema,
  ProviderCredentialTokenGrantSubjectTokenSchema,
  ProviderCredentialTokenGrantType,
  ProviderCredentialTokenGrantTypeSchema,
  ProviderEnvironmentSnapshotSchema,
  ProviderEnvironmentValueClassification,
  ProviderEnvironmentValueClassificationSchema,
  ProviderEnvironmentValueSchema,
  ProviderProfileCredentialSchema,
  ProviderReadinessReason,
  ProviderReadinessReasonSchema,
  StaticCredentialBindingSchema,
  StaticCredentialEndpointBindingSchema,
} from "openshell-config/raw";
import { describe, expect, it } from "vitest";

// ---------------------------------------------------------------------------
// UPSTREAM.md §7, transcribed: field name -> "number type"
// ---------------------------------------------------------------------------

const MESSAGES: Record<string, { schema: DescMessage; fields: Record<string, string>; reserved?: number[] }> = {
  ProviderEnvironmentSnapshot: {
    schema: ProviderEnvironmentSnapshotSchema,
    fields: {
      provider_env_revision: "1 uint64",
      values: "2 repeated ProviderEnvironmentValue",
      dynamic_credentials: "3 map<string, ProviderProfileCredential>",
      provider_attachment_epoch: "4 string",
      policy_hash: "5 string",
      readiness_reason: "6 ProviderReadinessReason",
      files: "7 map<string, string>",
    },
  },
  ProviderEnvironmentValue: {
    schema: ProviderEnvironmentValueSchema,
    fields: {
      name: "1 string",
      value: "2 string",
      expiration_time: "3 google.protobuf.Timestamp",
      classification: "4 ProviderEnvironmentValueClassification",
      static_credential_binding: "5 StaticCredentialBinding",
    },
  },
  StaticCredentialBinding: {
    schema: StaticCredentialBindingSchema,
    fields: { endpoints: "1 repeated StaticCredentialEndpointBinding", credential_identity: "2 string", workload_credential_handle: "3 string" },
  },
  StaticCredentialEndpointBinding: {
    schema: StaticCredentialEndpointBindingSchema,
    fields: { host: "1 string", port: "2 uint32", path: "3 string" },
  },
  ProviderProfileCredential: {
    schema: ProviderProfileCredentialSchema,
    fields: {
      name: "1 string",
      description: "2 string",
      env_vars: "3 repeated string",
      required: "4 bool",
      auth_style: "5 string",
      header_name: "6 string",
      query_param: "7 string",
      refresh: "8 ProviderCredentialRefresh",
      path_template: "9 string",
      token_grant: "10 ProviderCredentialTokenGrant",
    },
  },
  ProviderCredentialRefresh: {
    schema: ProviderCredentialRefreshSchema,
    reserved: [4, 5],
    fields: {
      strategy: "1 ProviderCredentialRefreshStrategy",
      token_url: "2 string",
      scopes: "3 repeated string",
      refresh_before: "104 google.protobuf.Duration",
      max_lifetime: "105 google.protobuf.Duration",
      material: "6 repeated ProviderCredentialRefreshMaterial",
      additional_outputs: "7 repeated ProviderCredentialRefreshOutput",
    },
  },
  ProviderCredentialRefreshMaterial: {
    schema: ProviderCredentialRefreshMaterialSchema,
    fields: { name: "1 string", description: "2 string", required: "3 bool", secret: "4 bool" },
  },
  ProviderCredentialRefreshOutput: {
    schema: ProviderCredentialRefreshOutputSchema,
    fields: { output: "1 string", credential: "2 string" },
  },
  ProviderCredentialTokenGrant: {
    schema: ProviderCredentialTokenGrantSchema,
    reserved: [4],
    fields: {
      token_endpoint: "1 string",
      audience: "2 string",
      scopes: "3 repeated string",
      audience_overrides: "5 repeated ProviderCredentialTokenGrantAudienceOverride",
      jwt_svid_audience: "6 string",
      client_assertion_type: "7 string",
      grant_type: "8 ProviderCredentialTokenGrantType",
      subject_token: "9 ProviderCredentialTokenGrantSubjectToken",
      requested_token_type: "10 string",
      cache_ttl: "104 google.protobuf.Duration",
    },
  },
  ProviderCredentialTokenGrantAudienceOverride: {
    schema: ProviderCredentialTokenGrantAudienceOverrideSchema,
    fields: { host: "1 string", port: "2 uint32", path: "3 string", audience: "4 string", scopes: "5 repeated string" },
  },
  ProviderCredentialTokenGrantSubjectToken: {
    schema: ProviderCredentialTokenGrantSubjectTokenSchema,
    fields: { source: "1 string", credential: "2 string", subject_token_type: "3 string" },
  },
};

const ENUMS: Record<string, { schema: DescEnum; prefix: string; values: string[] }> = {
  ProviderEnvironmentValueClassification: {
    schema: ProviderEnvironmentValueClassificationSchema,
    prefix: "PROVIDER_ENVIRONMENT_VALUE_CLASSIFICATION_",
    values: ["UNSPECIFIED", "NON_SECRET", "STATIC_CREDENTIAL"],
  },
  ProviderReadinessReason: {
    schema: ProviderReadinessReasonSchema,
    prefix: "PROVIDER_READINESS_REASON_",
    values: [
      "UNSPECIFIED",
      "WAITING_FOR_SUPERVISOR",
      "WAITING_FOR_CREDENTIALS",
      "WAITING_FOR_POLICY",
      "WAITING_FOR_PROCESS",
      "UNSUPPORTED_SUPERVISOR",
      "CREDENTIALS_WITHHELD",
      "CREDENTIAL_INSTALL_FAILED",
      "POLICY_ACTIVATION_FAILED",
      "PROCESS_INSTALL_FAILED",
      "SUPERVISOR_DISCONNECTED",
      "SUPERVISOR_LEASE_EXPIRED",
      "DESIRED_STATE_CHANGED",
      "CREDENTIAL_EXPIRED",
      "LOCAL_POLICY",
      "SNAPSHOT_MISMATCH",
    ],
  },
  ProviderCredentialRefreshStrategy: {
    schema: ProviderCredentialRefreshStrategySchema,
    prefix: "PROVIDER_CREDENTIAL_REFRESH_STRATEGY_",
    values: ["UNSPECIFIED", "STATIC", "EXTERNAL", "OAUTH2_REFRESH_TOKEN", "OAUTH2_CLIENT_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT_JWT", "AWS_STS_ASSUME_ROLE"],
  },
  ProviderCredentialTokenGrantType: {
    schema: ProviderCredentialTokenGrantTypeSchema,
    prefix: "PROVIDER_CREDENTIAL_TOKEN_GRANT_TYPE_",
    values: ["UNSPECIFIED", "CLIENT_CREDENTIALS", "TOKEN_EXCHANGE"],
  },
};

// ---------------------------------------------------------------------------
// Descriptor reading
// ---------------------------------------------------------------------------

/** A type name as §7 writes it: openshell.v1 types bare, well-known types qualified. */
function shortName(typeName: string): string {
  return typeName.startsWith("openshell.v1.") ? typeName.slice("openshell.v1.".length) : typeName;
}

function scalarName(t: ScalarType): string {
  return ScalarType[t]!.toLowerCase();
}

/** "number type" of a field, in §7's notation. */
function describeField(f: DescField): string {
  let type: string;
  switch (f.fieldKind) {
    case "scalar":
      type = scalarName(f.scalar);
      break;
    case "enum":
      type = shortName(f.enum.typeName);
      break;
    case "message":
      type = shortName(f.message.typeName);
      break;
    case "list":
      type = `repeated ${f.listKind === "scalar" ? scalarName(f.scalar) : f.listKind === "enum" ? shortName(f.enum.typeName) : shortName(f.message.typeName)}`;
      break;
    case "map":
      type = `map<${scalarName(f.mapKey)}, ${f.mapKind === "scalar" ? scalarName(f.scalar) : f.mapKind === "enum" ? shortName(f.enum.typeName) : shortName(f.message.typeName)}>`;
      break;
  }
  return `${f.number} ${type}`;
}

describe("provider environment descriptors match UPSTREAM.md §7", () => {
  it.each(Object.entries(MESSAGES))("%s: every field's name, number and type, and nothing else", (name, spec) => {
    expect(spec.schema.typeName).toBe(`openshell.v1.${name}`);
    const actual = Object.fromEntries(spec.schema.fields.map((f) => [f.name, describeField(f)]));
    expect(actual).toEqual(spec.fields);
    expect(spec.schema.oneofs).toEqual([]);
    // Reserved numbers (ranges are half-open in the descriptor).
    const reserved = spec.schema.proto.reservedRange.flatMap((r) => Array.from({ length: (r.end ?? 0) - (r.start ?? 0) }, (_, i) => (r.start ?? 0) + i));
    expect(reserved.sort((a, b) => a - b)).toEqual(spec.reserved ?? []);
  });

  it.each(Object.entries(ENUMS))("%s: every value's name and number", (name, spec) => {
    expect(spec.schema.typeName).toBe(`openshell.v1.${name}`);
    const actual = spec.schema.values.map((v) => [v.name, v.number]);
    expect(actual).toEqual(spec.values.map((v, i) => [`${spec.prefix}${v}`, i]));
  });

  it("the TypeScript enums carry the same numbers", () => {
    expect(ProviderReadinessReason.WAITING_FOR_CREDENTIALS).toBe(2);
    expect(ProviderReadinessReason.CREDENTIALS_WITHHELD).toBe(6);
    expect(ProviderReadinessReason.SNAPSHOT_MISMATCH).toBe(15);
    expect(ProviderEnvironmentValueClassification.STATIC_CREDENTIAL).toBe(2);
    expect(ProviderCredentialRefreshStrategy.AWS_STS_ASSUME_ROLE).toBe(6);
    expect(ProviderCredentialTokenGrantType.TOKEN_EXCHANGE).toBe(2);
  });
});

// ---------------------------------------------------------------------------
// Hand-built bytes: §7's numbers and wire types, no generated code involved
// ---------------------------------------------------------------------------

const VARINT = 0;
const LEN = 2;
const text = new TextEncoder();

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

type Field = [number, number | bigint | boolean | string | Field[]];

/** Encodes fields in order: numbers and booleans as varints, strings and field lists as LEN. */
function encode(fields: Field[]): number[] {
  const out: number[] = [];
  for (const [num, v] of fields) {
    if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") {
      out.push(...varint((num << 3) | VARINT), ...varint(typeof v === "boolean" ? (v ? 1 : 0) : v));
    } else {
      const body = typeof v === "string" ? [...text.encode(v)] : encode(v);
      out.push(...varint((num << 3) | LEN), ...varint(body.length), ...body);
    }
  }
  return out;
}

const SECRET = "sk-wire-secret-value";

const handBuilt: Field[] = [
  [1, 42n], // provider_env_revision
  [
    2, // values
    [
      [1, "API_KEY"],
      [2, SECRET],
      [3, [[1, 1_900_000_000], [2, 5]]], // expiration_time: Timestamp{seconds, nanos}
      [4, 2], // STATIC_CREDENTIAL
      [
        5, // static_credential_binding
        [
          [1, [[1, "api.example.com"], [2, 443], [3, "/v1/**"]]],
          [1, [[1, "*.example.org"], [2, 8443], [3, "/**"]]],
          [2, "llm:API_KEY"],
          [3, "workload-handle-1"],
        ],
      ],
    ],
  ],
  [2, [[1, "REGION"], [2, "eu"], [4, 1]]], // NON_SECRET
  [
    3, // dynamic_credentials entry
    [
      [1, "github"],
      [
        2,
        [
          [1, "GitHub token"],
          [2, "short-lived installation token"],
          [3, "GH_TOKEN"],
          [3, "GITHUB_TOKEN"],
          [4, true],
          [5, "bearer"],
          [6, "Authorization"],
          [7, "access_token"],
          [
            8, // refresh
            [
              [1, 4], // OAUTH2_CLIENT_CREDENTIALS
              [2, "https://auth.example.com/token"],
              [3, "repo"],
              [3, "read:org"],
              [104, [[1, 300]]], // refresh_before: Duration{seconds}
              [105, [[1, 3600]]], // max_lifetime
              [6, [[1, "client_secret"], [2, "OAuth client secret"], [3, true], [4, true]]],
              [7, [[1, "id_token"], [2, "GITHUB_ID_TOKEN"]]],
            ],
          ],
          [9, "/repos/{owner}/**"],
          [
            10, // token_grant
            [
              [1, "https://sts.example.com/token"],
              [2, "api://github"],
              [3, "repo"],
              [5, [[1, "uploads.example.com"], [2, 443], [3, "/up/**"], [4, "api://uploads"], [5, "write"]]],
              [6, "spiffe://example/gh"],
              [7, "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"],
              [8, 2], // TOKEN_EXCHANGE
              [9, [[1, "workload"], [2, "GITHUB_ID_TOKEN"], [3, "urn:ietf:params:oauth:token-type:jwt"]]],
              [10, "urn:ietf:params:oauth:token-type:access_token"],
              [104, [[1, 60]]], // cache_ttl
            ],
          ],
        ],
      ],
    ],
  ],
  [4, "epoch-7"],
  [5, "policy-hash-abc"],
  [6, 15], // SNAPSHOT_MISMATCH
  [7, [[1, "/etc/openshell/ca.pem"], [2, "-----BEGIN CERTIFICATE-----"]]], // files entry
];

const expected = create(ProviderEnvironmentSnapshotSchema, {
  providerEnvRevision: 42n,
  values: [
    {
      name: "API_KEY",
      value: SECRET,
      expirationTime: { seconds: 1_900_000_000n, nanos: 5 },
      classification: ProviderEnvironmentValueClassification.STATIC_CREDENTIAL,
      staticCredentialBinding: {
        endpoints: [
          { host: "api.example.com", port: 443, path: "/v1/**" },
          { host: "*.example.org", port: 8443, path: "/**" },
        ],
        credentialIdentity: "llm:API_KEY",
        workloadCredentialHandle: "workload-handle-1",
      },
    },
    { name: "REGION", value: "eu", classification: ProviderEnvironmentValueClassification.NON_SECRET },
  ],
  dynamicCredentials: {
    github: {
      name: "GitHub token",
      description: "short-lived installation token",
      envVars: ["GH_TOKEN", "GITHUB_TOKEN"],
      required: true,
      authStyle: "bearer",
      headerName: "Authorization",
      queryParam: "access_token",
      refresh: {
        strategy: ProviderCredentialRefreshStrategy.OAUTH2_CLIENT_CREDENTIALS,
        tokenUrl: "https://auth.example.com/token",
        scopes: ["repo", "read:org"],
        refreshBefore: { seconds: 300n },
        maxLifetime: { seconds: 3600n },
        material: [{ name: "client_secret", description: "OAuth client secret", required: true, secret: true }],
        additionalOutputs: [{ output: "id_token", credential: "GITHUB_ID_TOKEN" }],
      },
      pathTemplate: "/repos/{owner}/**",
      tokenGrant: {
        tokenEndpoint: "https://sts.example.com/token",
        audience: "api://github",
        scopes: ["repo"],
        audienceOverrides: [{ host: "uploads.example.com", port: 443, path: "/up/**", audience: "api://uploads", scopes: ["write"] }],
        jwtSvidAudience: "spiffe://example/gh",
        clientAssertionType: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        grantType: ProviderCredentialTokenGrantType.TOKEN_EXCHANGE,
        subjectToken: { source: "workload", credential: "GITHUB_ID_TOKEN", subjectTokenType: "urn:ietf:params:oauth:token-type:jwt" },
        requestedTokenType: "urn:ietf:params:oauth:token-type:access_token",
        cacheTtl: { seconds: 60n },
      },
    },
  },
  providerAttachmentEpoch: "epoch-7",
  policyHash: "policy-hash-abc",
  readinessReason: ProviderReadinessReason.SNAPSHOT_MISMATCH,
  files: { "/etc/openshell/ca.pem": "-----BEGIN CERTIFICATE-----" },
});

/** Paths of every message in `v` that kept unknown fields (a field the schema did not place). */
function unknownFieldPaths(v: unknown, path = "$"): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => unknownFieldPaths(x, `${path}[${i}]`));
  if (v === null || typeof v !== "object" || v instanceof Uint8Array) return [];
  const out: string[] = [];
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.$unknown) && o.$unknown.length > 0) out.push(path);
  for (const [k, x] of Object.entries(o)) if (k !== "$unknown") out.push(...unknownFieldPaths(x, `${path}.${k}`));
  return out;
}

describe("a ProviderEnvironmentSnapshot with every field set, on the wire", () => {
  const bytes = new Uint8Array(encode(handBuilt));

  it("hand-built bytes (§7 numbers and wire types) decode to exactly the expected snapshot, with no unknown field", () => {
    const decoded = fromBinary(ProviderEnvironmentSnapshotSchema, bytes);
    expect(unknownFieldPaths(decoded)).toEqual([]);
    expect(equals(ProviderEnvironmentSnapshotSchema, decoded, expected)).toBe(true);
    // Spot checks that read naturally when the comparison above fails.
    expect(decoded.values[0]?.staticCredentialBinding?.endpoints.map((e) => `${e.host}:${e.port}${e.path}`)).toEqual(["api.example.com:443/v1/**", "*.example.org:8443/**"]);
    expect(decoded.dynamicCredentials.github?.refresh?.maxLifetime?.seconds).toBe(3600n);
    expect(decoded.dynamicCredentials.github?.tokenGrant?.cacheTtl?.seconds).toBe(60n);
    expect(decoded.readinessReason).toBe(ProviderReadinessReason.SNAPSHOT_MISMATCH);
  });

  it("the generated encoder's bytes decode back to the same snapshot", () => {
    const again = fromBinary(ProviderEnvironmentSnapshotSchema, toBinary(ProviderEnvironmentSnapshotSchema, expected));
    expect(equals(ProviderEnvironmentSnapshotSchema, again, expected)).toBe(true);
  });

  it("a static_credential_binding sent as a string (the old shape) does not decode as a binding", () => {
    // Field 5 as LEN carrying text: the bytes of "x" (0x78 = field 15, wire type 0, truncated)
    // cannot be read as a StaticCredentialBinding.
    const old = new Uint8Array(encode([[2, [[1, "K"], [4, 2], [5, "x"]]]]));
    expect(() => fromBinary(ProviderEnvironmentSnapshotSchema, old)).toThrow();
  });

  it("the reserved numbers of ProviderCredentialRefresh (4, 5) and ProviderCredentialTokenGrant (4) are not read as fields", () => {
    const refresh = fromBinary(ProviderCredentialRefreshSchema, new Uint8Array(encode([[4, 300], [5, 3600]])));
    expect(refresh.refreshBefore).toBeUndefined();
    expect(refresh.maxLifetime).toBeUndefined();
    expect(unknownFieldPaths(refresh)).toEqual(["$"]);
    const grant = fromBinary(ProviderCredentialTokenGrantSchema, new Uint8Array(encode([[4, 60]])));
    expect(grant.cacheTtl).toBeUndefined();
    expect(unknownFieldPaths(grant)).toEqual(["$"]);
  });
});
