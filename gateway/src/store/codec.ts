// Helpers shared by the SQLite and PostgreSQL stores: page tokens, page-size bounds, JSON column
// decoding and byte copies. Both backends use these so that tokens, limits and decoded records
// are identical whichever database runs underneath.

import type { ProviderRecord } from "./store.js";

/** `openshell.v1.ConfigUpdateOperationState.PENDING`; a literal so the store needs no SDK import. */
export const OPERATION_STATE_PENDING = 1;

/** Page size used when a caller passes 0 or less. */
export const DEFAULT_PAGE_SIZE = 100;
/** Upper bound on one page, so a single request cannot load a whole table. */
export const MAX_PAGE_SIZE = 1000;

/** A page token that this store did not issue (or that was altered). */
export class InvalidPageTokenError extends RangeError {
  override readonly name = "InvalidPageTokenError";
}

export function clampPageSize(requested: number): number {
  if (!Number.isFinite(requested) || requested <= 0) return DEFAULT_PAGE_SIZE;
  return Math.min(Math.floor(requested), MAX_PAGE_SIZE);
}

// Tokens are base64url JSON of the last returned key: opaque to clients, stable across backends,
// and keyset-based, so rows inserted or deleted between pages never shift the remaining ones.

function encodeToken(key: unknown): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

function decodeToken(token: string): unknown {
  try {
    return JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown;
  } catch {
    throw new InvalidPageTokenError("invalid page token");
  }
}

/** Token after the sandbox (workspace, name); listSandboxes orders by that pair. */
export function sandboxPageToken(workspace: string, name: string): string {
  return encodeToken(["s", workspace, name]);
}

/** `undefined` for the first page. */
export function decodeSandboxPageToken(token: string): { workspace: string; name: string } | undefined {
  if (token === "") return undefined;
  const key = decodeToken(token);
  if (Array.isArray(key) && key.length === 3 && key[0] === "s" && typeof key[1] === "string" && typeof key[2] === "string") {
    return { workspace: key[1], name: key[2] };
  }
  throw new InvalidPageTokenError("invalid page token");
}

/** Token after policy revision `version`; listPolicyRevisions goes newest first. */
export function policyPageToken(version: number): string {
  return encodeToken(["p", version]);
}

export function decodePolicyPageToken(token: string): number | undefined {
  if (token === "") return undefined;
  const key = decodeToken(token);
  if (Array.isArray(key) && key.length === 2 && key[0] === "p" && Number.isSafeInteger(key[1])) return key[1] as number;
  throw new InvalidPageTokenError("invalid page token");
}

/** Token after the operation (created at `createdAtMs`, `id`); operation pages go newest first. */
export function operationPageToken(createdAtMs: number, id: string): string {
  return encodeToken(["o", createdAtMs, id]);
}

export function decodeOperationPageToken(token: string): { createdAtMs: number; id: string } | undefined {
  if (token === "") return undefined;
  const key = decodeToken(token);
  if (Array.isArray(key) && key.length === 3 && key[0] === "o" && Number.isSafeInteger(key[1]) && typeof key[2] === "string") {
    return { createdAtMs: key[1] as number, id: key[2] };
  }
  throw new InvalidPageTokenError("invalid page token");
}

/** Token after the rollout (created at `createdAtMs`, `workspace`, `id`); rollout pages go newest first. */
export function rolloutPageToken(createdAtMs: number, workspace: string, id: string): string {
  return encodeToken(["r", createdAtMs, workspace, id]);
}

export function decodeRolloutPageToken(token: string): { createdAtMs: number; workspace: string; id: string } | undefined {
  if (token === "") return undefined;
  const key = decodeToken(token);
  if (Array.isArray(key) && key.length === 4 && key[0] === "r" && Number.isSafeInteger(key[1]) && typeof key[2] === "string" && typeof key[3] === "string") {
    return { createdAtMs: key[1] as number, workspace: key[2], id: key[3] };
  }
  throw new InvalidPageTokenError("invalid page token");
}

/** A private copy, so callers never share (or mutate) a driver's pooled buffer. */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

/** The Buffer view drivers want for a blob parameter (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = String(v);
  }
  return out;
}

export function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

export function providerValues(value: unknown): ProviderRecord["values"] {
  if (!Array.isArray(value)) return [];
  return value.map((v: { name?: unknown; value?: unknown; secret?: unknown }) => ({
    name: String(v.name ?? ""),
    value: String(v.value ?? ""),
    secret: v.secret === true,
  }));
}

/** Normalised JSON of provider values (only the three known fields, in a fixed order). */
export function providerValuesJson(values: ProviderRecord["values"]): string {
  return JSON.stringify(values.map((v) => ({ name: v.name, value: v.value, secret: v.secret })));
}

/** One pending promise chain: callers run strictly one after another, in arrival order. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private holdersAndWaiters = 0;

  /** True when nobody holds or waits for the lock. */
  get idle(): boolean {
    return this.holdersAndWaiters === 0;
  }

  async lock(): Promise<() => void> {
    this.holdersAndWaiters++;
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holdersAndWaiters--;
      release();
    };
  }
}

/**
 * One running transaction. With checks on (transactionChecksByDefault) it marks the async
 * context of its fn, so store reads and nested `transaction` calls from inside fn are refused;
 * without them SQLite still runs such a read in the transaction (queueing behind it would
 * deadlock its single connection). `active` turns false at commit/rollback so callbacks that
 * outlive the transaction are treated as outside it.
 */
export interface TxContext {
  active: boolean;
}

export const NESTED_TRANSACTION_MESSAGE =
  "store.transaction called inside another transaction's fn; use the outer StoreTx instead";
export const FINISHED_TRANSACTION_MESSAGE = "this StoreTx was used after its transaction ended";
export const STORE_CALL_IN_TRANSACTION_MESSAGE = "a store read inside a transaction's fn; read through its StoreTx instead";

/**
 * Whether a store checks that a transaction's fn uses only its StoreTx (no store reads, no nested
 * transaction): on under test (NODE_ENV=test, which vitest sets and the processes a test starts
 * inherit) or with OSC_STORE_CHECKS=1. The check needs an AsyncLocalStorage, which while enabled
 * makes every promise of the process cost more; PostgreSQL, whose transactions are in flight
 * almost all the time under load, runs without it otherwise (about 6% of a fleet gateway's CPU).
 */
export function transactionChecksByDefault(): boolean {
  return process.env.NODE_ENV === "test" || process.env.OSC_STORE_CHECKS === "1";
}

/** Every StoreTx method, listed once; the Record type makes a missing one a compile error. */
const TX_METHODS: Record<keyof import("./store.js").StoreTx, true> = {
  sandboxByName: true,
  sandboxById: true,
  insertSandbox: true,
  updateSandbox: true,
  deleteSandbox: true,
  policyRevision: true,
  latestPolicyRevision: true,
  insertPolicyRevision: true,
  setPolicyStatus: true,
  settings: true,
  putSetting: true,
  deleteSetting: true,
  globalSettingsRevision: true,
  setGlobalSettingsRevision: true,
  globalVersions: true,
  idempotency: true,
  insertIdempotency: true,
  operation: true,
  insertOperation: true,
  updateOperation: true,
  pendingOperations: true,
  providerByName: true,
  insertProvider: true,
  updateProvider: true,
  sandboxesWithProvider: true,
  putEnforcement: true,
  recordSandboxEvent: true,
};

/**
 * A StoreTx whose every method runs the backend's query of the same name through `guard`, which
 * refuses calls after the transaction ended and maps driver errors. Both backends share it.
 */
export function guardedTx(queries: object, guard: <T>(call: () => T | Promise<T>) => Promise<T>): import("./store.js").StoreTx {
  // The methods live on one prototype per class of `queries`, built once: a transaction is
  // opened per request (on PostgreSQL with queries of its own), and its own object holds only
  // its queries and its guard.
  const tx = Object.create(txPrototype((Object.getPrototypeOf(queries) as object | null) ?? NO_CLASS)) as Guarded;
  tx[QUERIES] = queries as Guarded[typeof QUERIES];
  tx[GUARD] = guard;
  return tx as unknown as import("./store.js").StoreTx;
}

const GUARD = Symbol("guard");
const QUERIES = Symbol("queries");
interface Guarded {
  [GUARD]: <T>(call: () => T | Promise<T>) => Promise<T>;
  [QUERIES]: Record<string, (...args: unknown[]) => unknown>;
}
const prototypes = new WeakMap<object, object>();
/** The key for queries without a prototype. */
const NO_CLASS = {};

function txPrototype(queriesClass: object): object {
  let proto = prototypes.get(queriesClass);
  if (proto) return proto;
  const p: Record<string, unknown> = {};
  for (const name of Object.keys(TX_METHODS)) {
    p[name] = function (this: Guarded, ...args: unknown[]) {
      const q = this[QUERIES];
      return this[GUARD](() => q[name]!.apply(q, args));
    };
  }
  prototypes.set(queriesClass, (proto = p));
  return proto;
}
