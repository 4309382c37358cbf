// Record builders for the store suite: valid records with distinctive values (64-bit counters
// beyond 2^53, millisecond timestamps, non-ASCII map entries, bytes with 0x00 and 0xff) so a
// round-trip that narrows, truncates or re-encodes anything fails loudly.

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type {
  IdempotencyRecord,
  OperationRecord,
  PolicyRevisionRecord,
  ProviderRecord,
  SandboxRecord,
  SettingRecord,
} from "../../src/store/store.js";

export const PENDING = 1;
export const APPLIED = 2;
export const SUPERSEDED = 5;

/** 2^53 + 1: not representable as a JavaScript number. */
export const BEYOND_DOUBLE = 9_007_199_254_740_993n;
/** The largest signed 64-bit value. */
export const MAX_INT64 = 9_223_372_036_854_775_807n;

let counter = 0;
const next = () => ++counter;

export const bytes = (...values: number[]) => new Uint8Array(values);
export const at = (ms: number) => new Date(Date.UTC(2025, 0, 1) + ms);

export function sandbox(over: Partial<SandboxRecord> = {}): SandboxRecord {
  const n = next();
  return {
    id: randomUUID(),
    workspace: "ws-a",
    name: `sandbox-${String(n).padStart(4, "0")}`,
    labels: { team: "core", tier: "gold" },
    annotations: { "openshell.io/note": "grüße ✓", empty: "" },
    spec: bytes(0, 1, 2, 254, 255),
    phase: 2,
    resourceVersion: BEYOND_DOUBLE,
    policyVersion: 3,
    policyHash: "sha256:abc",
    settingsRevision: 7n,
    providerEnvRevision: MAX_INT64 - 1n,
    providers: ["github", "openai"],
    createdAt: at(123),
    deletionAt: undefined,
    ...over,
  };
}

export function policyRevision(sandboxId: string, version: number, over: Partial<PolicyRevisionRecord> = {}): PolicyRevisionRecord {
  return {
    sandboxId,
    version,
    policy: bytes(version & 0xff, 0, 255),
    hash: `sha256:v${version}`,
    status: 1,
    loadError: "",
    createdAt: at(version * 1000 + 7),
    loadedAt: undefined,
    provenance: { "openshell.io/by": "tester", version: String(version) },
    ...over,
  };
}

export function setting(sandboxId: string, key: string, ...value: number[]): SettingRecord {
  return { sandboxId, key, value: bytes(...value) };
}

export function operation(sandboxId: string, over: Partial<OperationRecord> = {}): OperationRecord {
  const n = next();
  return {
    id: randomUUID(),
    sandboxId,
    workspace: "ws-a",
    dimension: "policy",
    component: 1,
    desiredRevision: BEYOND_DOUBLE + BigInt(n),
    target: undefined,
    state: PENDING,
    outcome: 0,
    sanitizedError: "",
    createdAt: at(n * 10),
    updatedAt: at(n * 10),
    completedAt: undefined,
    attemptCount: 0,
    nextAttemptAt: at(n * 10),
    rowVersion: 1,
    ...over,
  };
}

export function idempotency(sandboxId: string, key: string, over: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    sandboxId,
    key,
    fingerprint: `fp-${key}`,
    dimension: "settings",
    operationId: randomUUID(),
    response: bytes(8, 1, 0, 255),
    createdAt: at(55),
    ...over,
  };
}

export function provider(over: Partial<ProviderRecord> = {}): ProviderRecord {
  const n = next();
  return {
    id: randomUUID(),
    workspace: "ws-a",
    name: `provider-${n}`,
    type: "github",
    resourceVersion: BEYOND_DOUBLE,
    values: [
      { name: "GITHUB_TOKEN", value: "ghp_secret", secret: true },
      { name: "GITHUB_HOST", value: "github.example", secret: false },
    ],
    createdAt: at(999),
    ...over,
  };
}

/**
 * Resolves when `parties` callers have arrived, or after `timeoutMs` (so a backend that runs
 * transactions one at a time, where the others can never arrive, still proceeds).
 */
export function barrier(parties: number, timeoutMs: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    if (++arrived >= parties) open();
    return Promise.race([opened, sleep(timeoutMs).then(() => undefined)]);
  };
}
