// Rows of the SQLite store kept in memory between transactions: sandboxes (every update reads its
// sandbox by name, every result by id), policy revisions (every update reads its sandbox's
// latest, every result the revision it answers for), each scope's settings (every commit's
// size check reads its sandbox's and the global ones, mostly none) and each sandbox's pending
// operations (every commit and every result reads them; every insert and update of an operation
// on this connection keeps them current). They stay true because every write of those
// tables on this connection goes through SqliteQueries, which keeps them up to date here, and a
// commit by any other connection (a second gateway on the file, an operator's tool) changes
// `PRAGMA data_version`, which is checked before a row is used and empties the cache. A
// transaction that rolls back empties it too (discard). Bounded; the oldest entries go first.

import type BetterSqlite3 from "better-sqlite3";
import type { OperationRecord, PolicyRevisionRecord, SandboxRecord, SettingRecord } from "../store.js";
import { OPERATION_STATE_PENDING, copyBytes } from "../codec.js";

/** Sandbox rows kept (about 1 kB each). */
const MAX_SANDBOXES = 1024;
/** Policy revision rows kept (a policy of a few hundred bytes each). */
const MAX_REVISIONS = 1024;
/** Scopes whose settings are kept; a scope's are kept only up to this many bytes of values. */
const MAX_SETTINGS_SCOPES = 1024;
const MAX_SETTINGS_BYTES = 16 * 1024;
/** Sandboxes whose pending operations are kept; a sandbox's are kept only while it has at most this many. */
const MAX_PENDING_SANDBOXES = 1024;
const MAX_PENDING_KEPT = 16;

/** The order of `SELECT … ORDER BY created_at, id` (ids compare as SQLite compares text: by code unit, as here). */
function before(a: OperationRecord, b: OperationRecord): boolean {
  const ta = a.createdAt.getTime();
  const tb = b.createdAt.getTime();
  return ta < tb || (ta === tb && a.id < b.id);
}

const nameKey = (workspace: string, name: string) => `${workspace}\u0000${name}`;
const revisionKey = (sandboxId: string, version: number) => `${sandboxId}\u0000${version}`;

export class SqliteRowCache {
  private readonly sandboxes = new Map<string, SandboxRecord>();
  /** `workspace NUL name` → id, for the rows in `sandboxes`. */
  private readonly sandboxIds = new Map<string, string>();
  /** By `sandboxId NUL version`. */
  private readonly revisions = new Map<string, PolicyRevisionRecord>();
  /** Each sandbox's latest revision version, where known. */
  private readonly latestVersions = new Map<string, number>();
  /** Each scope's settings (by sandbox id, "" the global scope), frozen: callers share them. */
  private readonly settingsOf = new Map<string, readonly SettingRecord[]>();
  /** Each sandbox's PENDING operations, in creation order. */
  private readonly pendingOf = new Map<string, OperationRecord[]>();
  private readonly dataVersionStmt: BetterSqlite3.Statement;
  private dataVersion: unknown;
  /** Inside a transaction (BEGIN IMMEDIATE holds the write lock): no other connection can commit, one check does. */
  private inTransaction = false;

  constructor(db: BetterSqlite3.Database) {
    this.dataVersionStmt = db.prepare("PRAGMA data_version").pluck();
  }

  /** Some writes were rolled back (a failed job, a failed COMMIT): cached rows may not be in the database. */
  discard(): void {
    this.sandboxes.clear();
    this.sandboxIds.clear();
    this.revisions.clear();
    this.latestVersions.clear();
    this.settingsOf.clear();
    this.pendingOf.clear();
  }

  /** A transaction's fn starts (its BEGIN IMMEDIATE has run): checked once for all of its reads. */
  enterTransaction(): void {
    this.inTransaction = false;
    this.check();
    this.inTransaction = true;
  }

  leaveTransaction(): void {
    this.inTransaction = false;
  }

  /** Empties the cache if another connection has committed since its rows were read; call before each use. */
  check(): void {
    if (this.inTransaction) return;
    const v = this.dataVersionStmt.get();
    if (v !== this.dataVersion) {
      this.dataVersion = v;
      this.discard();
    }
  }

  sandboxById(id: string): SandboxRecord | undefined {
    return this.sandboxes.get(id);
  }

  sandboxByName(workspace: string, name: string): SandboxRecord | undefined {
    const id = this.sandboxIds.get(nameKey(workspace, name));
    return id === undefined ? undefined : this.sandboxes.get(id);
  }

  /** Keeps `sb` as its row now stands. */
  putSandbox(sb: SandboxRecord): SandboxRecord {
    if (!this.sandboxes.has(sb.id) && this.sandboxes.size >= MAX_SANDBOXES) {
      this.forgetSandbox(this.sandboxes.keys().next().value as string);
    }
    this.sandboxes.set(sb.id, sb);
    this.sandboxIds.set(nameKey(sb.workspace, sb.name), sb.id);
    return sb;
  }

  /** The sandbox is deleted, with its revisions (rare enough to forget every revision kept). */
  deleteSandbox(id: string): void {
    this.forgetSandbox(id);
    this.revisions.clear();
    this.latestVersions.clear();
  }

  private forgetSandbox(id: string): void {
    this.settingsOf.delete(id);
    const sb = this.sandboxes.get(id);
    if (sb === undefined) return;
    this.sandboxes.delete(id);
    this.sandboxIds.delete(nameKey(sb.workspace, sb.name));
  }

  revision(sandboxId: string, version: number): PolicyRevisionRecord | undefined {
    return this.revisions.get(revisionKey(sandboxId, version));
  }

  latestRevision(sandboxId: string): PolicyRevisionRecord | undefined {
    const latest = this.latestVersions.get(sandboxId);
    // A latest version whose row went out of the cache is read again.
    return latest === undefined ? undefined : this.revisions.get(revisionKey(sandboxId, latest));
  }

  /** Keeps `r` as its row now stands; `isLatest` when it was read as its sandbox's latest. */
  putRevision(r: PolicyRevisionRecord, isLatest = false): PolicyRevisionRecord {
    const key = revisionKey(r.sandboxId, r.version);
    if (!this.revisions.has(key) && this.revisions.size >= MAX_REVISIONS) {
      this.revisions.delete(this.revisions.keys().next().value as string);
    }
    this.revisions.set(key, r);
    if (isLatest) this.latestVersions.set(r.sandboxId, r.version);
    return r;
  }

  /** A revision was inserted: kept as it reads back (its own copies), the latest if it is newer than the latest known. */
  insertedRevision(p: PolicyRevisionRecord): void {
    this.putRevision({ ...p, policy: Uint8Array.prototype.slice.call(p.policy), provenance: { ...p.provenance } });
    const latest = this.latestVersions.get(p.sandboxId);
    if (latest !== undefined && p.version > latest) this.latestVersions.set(p.sandboxId, p.version);
  }

  /** A revision's status was set (as setPolicyStatus stores it: times in whole milliseconds). */
  revisionStatus(sandboxId: string, version: number, status: number, loadError: string, loadedAtMs: number | undefined): void {
    const key = revisionKey(sandboxId, version);
    const cached = this.revisions.get(key);
    if (cached) this.revisions.set(key, { ...cached, status, loadError, loadedAt: loadedAtMs === undefined ? undefined : new Date(loadedAtMs) });
  }

  settings(scope: string): readonly SettingRecord[] | undefined {
    return this.settingsOf.get(scope);
  }

  /** Keeps the settings of `scope` as just read (ordered by key), unless their values are large. */
  putSettings(scope: string, settings: SettingRecord[]): readonly SettingRecord[] {
    let bytes = 0;
    for (const s of settings) bytes += s.value.length;
    if (bytes > MAX_SETTINGS_BYTES) return settings;
    if (!this.settingsOf.has(scope) && this.settingsOf.size >= MAX_SETTINGS_SCOPES) {
      this.settingsOf.delete(this.settingsOf.keys().next().value as string);
    }
    const kept = Object.freeze(settings);
    this.settingsOf.set(scope, kept);
    return kept;
  }

  /** A setting of `scope` was written: read its settings again next time. */
  settingsChanged(scope: string): void {
    this.settingsOf.delete(scope);
  }

  /** A copy of the sandbox's pending operations, if kept. */
  pending(sandboxId: string): OperationRecord[] | undefined {
    return this.pendingOf.get(sandboxId)?.slice();
  }

  /** Keeps the sandbox's pending operations as just read (in creation order), unless there are many. */
  putPending(sandboxId: string, ops: readonly OperationRecord[]): void {
    if (ops.length > MAX_PENDING_KEPT) return;
    if (!this.pendingOf.has(sandboxId) && this.pendingOf.size >= MAX_PENDING_SANDBOXES) {
      this.pendingOf.delete(this.pendingOf.keys().next().value as string);
    }
    this.pendingOf.set(sandboxId, ops.slice());
  }

  /** An operation was inserted: kept as it reads back, if its sandbox's are kept and it is pending. */
  insertedOperation(o: OperationRecord): void {
    const list = this.pendingOf.get(o.sandboxId);
    if (list === undefined || o.state !== OPERATION_STATE_PENDING) return;
    this.place(list, {
      ...o,
      target: o.target === undefined ? undefined : copyBytes(o.target),
      createdAt: new Date(o.createdAt.getTime()),
      updatedAt: new Date(o.updatedAt.getTime()),
      completedAt: o.completedAt === undefined ? undefined : new Date(o.completedAt.getTime()),
      nextAttemptAt: new Date(o.nextAttemptAt.getTime()),
    });
  }

  /** An operation was updated to `o` (as it now stands): kept while pending, dropped once not. */
  updatedOperation(o: OperationRecord): void {
    const list = this.pendingOf.get(o.sandboxId);
    if (list === undefined) return;
    const i = list.findIndex((x) => x.id === o.id);
    if (i >= 0) list.splice(i, 1);
    if (o.state === OPERATION_STATE_PENDING) this.place(list, o);
  }

  private place(list: OperationRecord[], o: OperationRecord): void {
    if (list.length >= MAX_PENDING_KEPT) {
      this.pendingOf.delete(o.sandboxId);
      return;
    }
    let i = list.length;
    while (i > 0 && before(o, list[i - 1]!)) i--;
    list.splice(i, 0, o);
  }
}
