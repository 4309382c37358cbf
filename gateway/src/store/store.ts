// The gateway's durable state behind one interface, implemented by SQLite (embedded default) and
// PostgreSQL. Stores only persist and query; every rule (validation, revisions, idempotency,
// operation state machine) lives above them and runs inside `transaction`, so both backends
// behave identically and one behavioural suite (store-suite.ts) covers both.
//
// Protobuf payloads (policies, setting values, committed responses, target revisions) are stored
// as binary blobs: the store never interprets them. Nothing secret is stored outside the
// providers table's value column.

import type { RolloutStore } from "./rollouts.js";

export type { RolloutRow, RolloutPatch, RolloutListQuery, RolloutApprovalRow, RolloutLeaseRow, RolloutStore } from "./rollouts.js";

/** Sandbox phases, numbered as `openshell.v1.SandboxPhase`. */
export type PhaseNumber = number;

export interface SandboxRecord {
  readonly id: string;
  readonly workspace: string;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  /** `openshell.v1.SandboxSpec` binary, including the create-time policy. */
  readonly spec: Uint8Array;
  readonly phase: PhaseNumber;
  /** Bumped by every mutation of the sandbox or its desired configuration. */
  readonly resourceVersion: bigint;
  /** Latest sandbox policy version (0 = none yet). */
  readonly policyVersion: number;
  readonly policyHash: string;
  /** Revision of the sandbox-scoped settings. */
  readonly settingsRevision: bigint;
  /** Bumped when an attached provider changes. */
  readonly providerEnvRevision: bigint;
  /** Names of attached providers. */
  readonly providers: readonly string[];
  readonly createdAt: Date;
  readonly deletionAt: Date | undefined;
}

export interface PolicyRevisionRecord {
  /** Sandbox id, or "" for the global policy. */
  readonly sandboxId: string;
  readonly version: number;
  /** `openshell.sandbox.v1.SandboxPolicy` binary. */
  readonly policy: Uint8Array;
  readonly hash: string;
  /** `openshell.v1.PolicyStatus` number. */
  readonly status: number;
  readonly loadError: string;
  readonly createdAt: Date;
  readonly loadedAt: Date | undefined;
  /** Non-secret annotations sent with the update that created this revision. */
  readonly provenance: Record<string, string>;
}

export interface SettingRecord {
  /** Sandbox id, or "" for a global setting. */
  readonly sandboxId: string;
  readonly key: string;
  /** `openshell.sandbox.v1.SettingValue` binary. */
  readonly value: Uint8Array;
}

export type Dimension = "policy" | "settings";

export interface OperationRecord {
  readonly id: string;
  readonly sandboxId: string;
  readonly workspace: string;
  readonly dimension: Dimension;
  /** `openshell.v1.ConfigComponent` number. */
  readonly component: number;
  /** The committed desired revision of the operation's dimension (policy version or settings revision). */
  readonly desiredRevision: bigint;
  /** `openshell.v1.ConfigSnapshotRevision` binary once associated with an exact snapshot revision. */
  readonly target: Uint8Array | undefined;
  /** `openshell.v1.ConfigUpdateOperationState` number. */
  readonly state: number;
  /** `openshell.v1.ConfigApplyOutcome` number. */
  readonly outcome: number;
  readonly sanitizedError: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly completedAt: Date | undefined;
  /** Redelivery bookkeeping for the reconciler. */
  readonly attemptCount: number;
  readonly nextAttemptAt: Date;
  /** Compare-and-set token; bumped by every update of the row. */
  readonly rowVersion: number;
}

export interface IdempotencyRecord {
  readonly sandboxId: string;
  readonly key: string;
  readonly fingerprint: string;
  readonly dimension: Dimension;
  readonly operationId: string;
  /** The original `openshell.v1.UpdateConfigResponse` binary (without `operation`). */
  readonly response: Uint8Array;
  readonly createdAt: Date;
}

export interface ProviderRecord {
  readonly id: string;
  readonly workspace: string;
  readonly name: string;
  readonly type: string;
  readonly resourceVersion: bigint;
  /** Environment values. `secret` values never leave the gateway except on a supervisor stream. */
  readonly values: readonly { readonly name: string; readonly value: string; readonly secret: boolean }[];
  readonly createdAt: Date;
}

/**
 * What a sandbox enforces according to its supervisor's latest result (bootstrap or update):
 * observed state, kept apart from the desired state so recording it never bumps the sandbox's
 * resource version. One row per sandbox, replaced by each result that says something new.
 */
export interface EnforcementRecord {
  readonly sandboxId: string;
  /** `openshell.v1.PolicyEnforcementState` number. */
  readonly state: number;
  /** The enforced sandbox policy version (0 unless a sandbox policy is in force). */
  readonly policyVersion: number;
  /** `openshell.v1.PolicyEnforcement` binary without `observed_time` (that is `observedAt`). */
  readonly detail: Uint8Array;
  readonly observedAt: Date;
}

/**
 * Which gateway replica holds a sandbox's supervisor session. Several replicas on one database
 * use it to know who delivers to a sandbox and to tell an old owner it lost the session.
 */
export interface SessionOwnerRecord {
  readonly sandboxId: string;
  readonly replicaId: string;
  readonly sessionId: string;
  /** The owner renews before this; afterwards the row only records who held the session last. */
  readonly leaseUntil: Date;
  readonly acquiredAt: Date;
}

/**
 * Who created or deleted a sandbox instance, and when: one row per instance and event, kept after
 * the sandbox is gone (an audit record, and how a supervisor of a deleted instance is told so).
 */
export interface SandboxLifecycleRecord {
  readonly sandboxId: string;
  readonly event: "created" | "deleted";
  readonly workspace: string;
  readonly name: string;
  /** The principal's name (as in logs), never a credential. */
  readonly principal: string;
  readonly at: Date;
}

/**
 * The sandbox instance a supervisor credential serves. Written at the credential's first accepted
 * session (or from the auth file's `sandboxId`), so that a sandbox deleted and re-created under
 * the same name does not inherit the old instance's supervisors.
 */
export interface SupervisorBindingRecord {
  /** The credential's key (auth/principal-credential.ts): a digest or certificate identity, never a secret. */
  readonly credential: string;
  readonly workspace: string;
  readonly sandboxName: string;
  readonly sandboxId: string;
  /** The principal's name when it bound (for operators reading the table). */
  readonly principal: string;
  readonly boundAt: Date;
}

/** Callbacks of a `Store.listen` subscription. */
export interface StoreListenHandlers {
  onMessage(message: string): void;
  /** Messages may have been lost (the listening connection was re-established): re-read state. */
  onGap(): void;
}

/** The two versions that name the global part of every sandbox's configuration. */
export interface GlobalVersions {
  readonly policyVersion: number;
  readonly settingsRevision: bigint;
}

export interface StoreSubscription {
  close(): Promise<void>;
}

/** Fields of an operation a transition may set (state leaves PENDING only through this). */
export interface OperationPatch {
  readonly state?: number;
  readonly outcome?: number;
  readonly sanitizedError?: string;
  readonly target?: Uint8Array | null;
  readonly completedAt?: Date;
  readonly attemptCount?: number;
  readonly nextAttemptAt?: Date;
}

export interface SandboxPatch {
  readonly phase?: PhaseNumber;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly spec?: Uint8Array;
  readonly policyVersion?: number;
  readonly policyHash?: string;
  readonly settingsRevision?: bigint;
  readonly providerEnvRevision?: bigint;
  readonly deletionAt?: Date;
}

export interface Page<T> {
  readonly items: T[];
  /** Opaque; empty when there is no further page. */
  readonly nextPageToken: string;
}

/**
 * Reads and writes inside one transaction. Every write bumps what it must; the caller decides
 * what to write. Reads of a sandbox through a transaction lock its row until commit.
 */
export interface StoreTx {
  /**
   * `idempotencyKey`: the key `idempotency` will be asked for next, which an engine may read
   * together with the sandbox (PostgreSQL: in the same round trip, after the lock is held).
   * `measured`: the caller measures the snapshot the transaction leads to (a configuration
   * commit's size check), so an engine may read both scopes' settings with the sandbox, once no
   * global commit is under way (PostgreSQL: under the global scope's shared lock).
   */
  sandboxByName(workspace: string, name: string, idempotencyKey?: string, measured?: boolean): Promise<SandboxRecord | undefined>;
  sandboxById(id: string): Promise<SandboxRecord | undefined>;
  insertSandbox(record: SandboxRecord): Promise<void>;
  /** Applies `patch` and bumps `resourceVersion`; returns the new record. */
  updateSandbox(id: string, patch: SandboxPatch): Promise<SandboxRecord>;
  deleteSandbox(id: string): Promise<void>;

  policyRevision(sandboxId: string, version: number): Promise<PolicyRevisionRecord | undefined>;
  /**
   * The newest revision of a scope ('' global). PostgreSQL holds the scope's lock from here until
   * COMMIT, so "read the latest, insert latest + 1" is safe. `"shared"`: the caller only reads it
   * (a size check): such readers do not wait for each other, only for a transaction that may
   * insert (which waits for them in turn).
   */
  latestPolicyRevision(sandboxId: string, lock?: "shared"): Promise<PolicyRevisionRecord | undefined>;
  insertPolicyRevision(record: PolicyRevisionRecord): Promise<void>;
  /** Sets status (and load error / loaded time) of one revision. */
  setPolicyStatus(sandboxId: string, version: number, status: number, loadError: string, loadedAt: Date | undefined): Promise<void>;

  settings(sandboxId: string): Promise<readonly SettingRecord[]>;
  putSetting(record: SettingRecord): Promise<void>;
  deleteSetting(sandboxId: string, key: string): Promise<void>;
  /** Global settings revision (a single counter). */
  globalSettingsRevision(): Promise<bigint>;
  setGlobalSettingsRevision(revision: bigint): Promise<void>;
  /**
   * The global policy version (0: none) and settings revision as committed, locking nothing
   * (unlike globalSettingsRevision, which on PostgreSQL locks the counter until COMMIT).
   */
  globalVersions(): Promise<GlobalVersions>;

  idempotency(sandboxId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** Create-only: rejects (throws StoreConflictError) when the key already exists. */
  insertIdempotency(record: IdempotencyRecord): Promise<void>;

  operation(id: string): Promise<OperationRecord | undefined>;
  insertOperation(record: OperationRecord): Promise<void>;
  /**
   * Compare-and-set: applies `patch` only when the row's `rowVersion` still equals
   * `expectedRowVersion`; returns the new record, or `undefined` when the CAS lost.
   */
  updateOperation(id: string, expectedRowVersion: number, patch: OperationPatch): Promise<OperationRecord | undefined>;
  /** PENDING operations of one sandbox (optionally one dimension), oldest first. */
  pendingOperations(sandboxId: string, dimension?: Dimension): Promise<OperationRecord[]>;

  providerByName(workspace: string, name: string): Promise<ProviderRecord | undefined>;
  insertProvider(record: ProviderRecord): Promise<void>;
  updateProvider(id: string, patch: { type?: string; values?: ProviderRecord["values"] }): Promise<ProviderRecord>;
  /** Sandboxes (any phase) that attach provider `name` in `workspace`. */
  sandboxesWithProvider(workspace: string, name: string): Promise<SandboxRecord[]>;

  /** Replaces the sandbox's enforcement record (creates it on the first result). */
  putEnforcement(record: EnforcementRecord): Promise<void>;

  /** Create-only: rejects (throws StoreConflictError) when the instance already has this event. */
  recordSandboxEvent(record: SandboxLifecycleRecord): Promise<void>;
}

/** Thrown by create-only inserts on a duplicate key, and by stores on serialization conflicts. */
export class StoreConflictError extends Error {
  override readonly name = "StoreConflictError";
}

/** Thrown when the database cannot be reached or fails; the gateway answers UNAVAILABLE. */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
}

export interface Store extends RolloutStore {
  /** "sqlite" or "postgres", for logs and metrics. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Runs `fn` in one transaction: all of its writes commit together or not at all. The
   * transaction is retried (fn called again) on serialization conflicts, up to a bound. Never
   * hold one across network I/O other than the database's own. fn reads and writes through `tx`
   * only: a call on the store itself from inside fn is refused under test (codec.ts,
   * transactionChecksByDefault) and on PostgreSQL would otherwise run outside the transaction.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;

  // Reads outside a transaction (each is its own consistent snapshot).
  sandboxByName(workspace: string, name: string): Promise<SandboxRecord | undefined>;
  sandboxById(id: string): Promise<SandboxRecord | undefined>;
  /** `workspace` undefined = every workspace. Ordered by (workspace, name). */
  listSandboxes(query: {
    workspace: string | undefined;
    labels: Record<string, string>;
    pageSize: number;
    pageToken: string;
  }): Promise<Page<SandboxRecord>>;
  operation(id: string): Promise<OperationRecord | undefined>;
  /** PENDING operations of one sandbox (optionally one dimension), oldest first. */
  pendingOperations(sandboxId: string, dimension?: Dimension): Promise<OperationRecord[]>;
  /** Operations of one sandbox, newest first. */
  operationsOfSandbox(sandboxId: string, limit: number): Promise<OperationRecord[]>;
  /** Operations of one sandbox, newest first, a page at a time (ListConfigUpdateOperations). */
  listOperationsOfSandbox(sandboxId: string, pageSize: number, pageToken: string): Promise<Page<OperationRecord>>;
  /**
   * PENDING operations whose `nextAttemptAt` ≤ `now`, oldest first, at most `limit`. With
   * `ownedBy`, only those of sandboxes whose session that replica owns with a lease beyond `now`.
   */
  dueOperations(now: Date, limit: number, ownedBy?: string): Promise<OperationRecord[]>;
  /** The operations with these ids that exist, in no particular order. */
  operationsById(ids: readonly string[]): Promise<OperationRecord[]>;
  /** Number of PENDING operations. */
  countPending(): Promise<number>;
  policyRevision(sandboxId: string, version: number): Promise<PolicyRevisionRecord | undefined>;
  /** Newest first. */
  listPolicyRevisions(sandboxId: string, pageSize: number, pageToken: string): Promise<Page<PolicyRevisionRecord>>;
  settings(sandboxId: string): Promise<readonly SettingRecord[]>;
  globalSettingsRevision(): Promise<bigint>;
  /** The global policy version (0: none) and settings revision, in one read. */
  globalVersions(): Promise<GlobalVersions>;
  providerByName(workspace: string, name: string): Promise<ProviderRecord | undefined>;
  /** The enforcement records of those of these sandboxes that have one, in no particular order. */
  enforcements(sandboxIds: readonly string[]): Promise<EnforcementRecord[]>;

  // Sandbox instances: lifecycle records and supervisor bindings. Each call is atomic on its own.

  /** The lifecycle records of one sandbox instance ("created" before "deleted"); [] for none. */
  sandboxEvents(sandboxId: string): Promise<SandboxLifecycleRecord[]>;
  supervisorBinding(credential: string): Promise<SupervisorBindingRecord | undefined>;
  /**
   * Stores `record` unless the credential is bound already, and returns the binding now in force:
   * the first one stays, so two first sessions racing agree on one instance. With `replace`,
   * `record` replaces any binding (the auth file pins the credential to an instance).
   */
  bindSupervisor(record: SupervisorBindingRecord, replace?: boolean): Promise<SupervisorBindingRecord>;

  // Session ownership (several gateway replicas on one database). Each call is atomic on its own.

  /** Makes `owner` the sandbox's session owner whoever held it; returns the record it replaced. */
  claimSession(owner: SessionOwnerRecord): Promise<SessionOwnerRecord | undefined>;
  /**
   * Extends to `leaseUntil` the leases of those of `sessionIds` that `replicaId` still owns, and
   * returns their ids: a session missing from the answer was taken over.
   */
  renewSessions(replicaId: string, sessionIds: readonly string[], leaseUntil: Date): Promise<string[]>;
  /** Forgets the sandbox's owner if it is still session `sessionId`; returns whether it was. */
  releaseSession(sandboxId: string, sessionId: string): Promise<boolean>;
  sessionOwner(sandboxId: string): Promise<SessionOwnerRecord | undefined>;

  // Notifications between processes sharing the database: best effort, never durable, no
  // payload of record (a listener re-reads what changed). PostgreSQL uses LISTEN/NOTIFY; SQLite,
  // which serves one process, delivers to listeners of the same store object.

  /** Sends each message to every listener of `channel`, the sender's own included. */
  notify(channel: string, messages: readonly string[]): Promise<void>;
  /** Listens on `channel` (letters, digits and _ only) until the subscription is closed. */
  listen(channel: string, handlers: StoreListenHandlers): Promise<StoreSubscription>;

  /**
   * Transactions committed and physical COMMITs issued since the store opened. SQLite groups
   * concurrent transactions into one COMMIT, so its ratio shows how much batching happened.
   */
  writeStats(): { readonly transactions: number; readonly commits: number };

  close(): Promise<void>;
}
