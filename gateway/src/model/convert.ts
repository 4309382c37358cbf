// Store records to wire messages, in one place. Secrets never pass through here: provider
// values are reported by name only.

import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ConfigSnapshotRevisionSchema,
  ConfigUpdateOperationSchema,
  SandboxPolicyRevisionSchema,
  SandboxSchema,
  SandboxSpecSchema,
  SandboxPolicySchema,
  ProviderSchema,
  type ConfigUpdateOperation,
  type Sandbox,
  type SandboxSpec,
  type SandboxPolicyRevision,
  type Provider,
} from "openshell-config/raw";
import type { EnforcementRecord, OperationRecord, PolicyRevisionRecord, ProviderRecord, SandboxRecord } from "../store/store.js";
import { fromEnforcementRecord } from "./enforcement.js";

export function toOperation(op: OperationRecord): ConfigUpdateOperation {
  return create(ConfigUpdateOperationSchema, {
    operationId: op.id,
    sandboxId: op.sandboxId,
    component: op.component,
    targetRevision: op.target ? fromBinary(ConfigSnapshotRevisionSchema, op.target) : undefined,
    state: op.state,
    outcome: op.outcome,
    sanitizedError: op.sanitizedError,
    createdTime: timestampFromDate(op.createdAt),
    updatedTime: timestampFromDate(op.updatedAt),
    completedTime: op.completedAt ? timestampFromDate(op.completedAt) : undefined,
  });
}

/**
 * `current_policy_version` is what the sandbox enforces according to its latest result (0 before
 * any, or when no sandbox policy is in force); the desired version rides our extension field.
 */
/**
 * Decoded specs by their encoding. Sandboxes created from one template carry the same spec
 * bytes, and a ListSandboxes page decoded each one again (most of a READY watcher's cost). The
 * decoded message is shared by every response that carries it: responses are only encoded, never
 * changed. Small specs only, and few of them, so the memory kept stays bounded.
 */
const decodedSpecs = new Map<string, SandboxSpec>();
const MAX_DECODED_SPECS = 256;
const MAX_SHARED_SPEC_BYTES = 16 * 1024;

function decodedSpec(bytes: Uint8Array): SandboxSpec {
  if (bytes.length > MAX_SHARED_SPEC_BYTES) return fromBinary(SandboxSpecSchema, bytes);
  const key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
  let spec = decodedSpecs.get(key);
  if (spec) {
    decodedSpecs.delete(key);
  } else {
    spec = fromBinary(SandboxSpecSchema, bytes);
    if (decodedSpecs.size >= MAX_DECODED_SPECS) decodedSpecs.delete(decodedSpecs.keys().next().value!);
  }
  decodedSpecs.set(key, spec);
  return spec;
}

export function toSandbox(sb: SandboxRecord, enforcement: EnforcementRecord | undefined): Sandbox {
  return create(SandboxSchema, {
    metadata: {
      id: sb.id,
      name: sb.name,
      workspace: sb.workspace,
      labels: { ...sb.labels },
      annotations: { ...sb.annotations },
      resourceVersion: sb.resourceVersion,
      createdTime: timestampFromDate(sb.createdAt),
      deletionTime: sb.deletionAt ? timestampFromDate(sb.deletionAt) : undefined,
    },
    spec: decodedSpec(sb.spec),
    status: {
      phase: sb.phase,
      currentPolicyVersion: enforcement?.policyVersion ?? 0,
      desiredPolicyVersion: sb.policyVersion,
      policyEnforcement: enforcement ? fromEnforcementRecord(enforcement) : undefined,
    },
  });
}

export function toPolicyRevision(rev: PolicyRevisionRecord, withPolicy: boolean): SandboxPolicyRevision {
  return create(SandboxPolicyRevisionSchema, {
    version: rev.version,
    policyHash: rev.hash,
    status: rev.status,
    loadError: rev.loadError,
    createdTime: timestampFromDate(rev.createdAt),
    loadedTime: rev.loadedAt ? timestampFromDate(rev.loadedAt) : undefined,
    provenance: { ...rev.provenance },
    ...(withPolicy ? { policy: fromBinary(SandboxPolicySchema, rev.policy) } : {}),
  });
}

/** A provider as callers see it: secret values are replaced by an empty string. */
export function toProvider(p: ProviderRecord): Provider {
  const credentials: Record<string, string> = {};
  const config: Record<string, string> = {};
  for (const v of p.values) {
    if (v.secret) credentials[v.name] = "";
    else config[v.name] = v.value;
  }
  return create(ProviderSchema, {
    metadata: { id: p.id, name: p.name, workspace: p.workspace, resourceVersion: p.resourceVersion, createdTime: timestampFromDate(p.createdAt) },
    type: p.type,
    credentials,
    config,
  });
}
