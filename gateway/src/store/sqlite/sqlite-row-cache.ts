// Rows of the SQLite store kept in memory between transactions: sandboxes (every update reads its
// sandbox by name, every result by id) and policy revisions (every update reads its sandbox's
// latest, every result the revision it answers for). They stay true because every write of those
// tables on this connection goes through SqliteQueries, which keeps them up to date here, and a
// commit by any other connection (a second gateway on the file, an operator's tool) changes
// `PRAGMA data_version`, which is checked before a row is used and empties the cache. A
// transaction that rolls back empties it too (discard). Bounded; the oldest entries go first.

import type BetterSqlite3 from "better-sqlite3";
import type { PolicyRevisionRecord, SandboxRecord } from "../store.js";

/** Sandbox rows kept (about 1 kB each). */
const MAX_SANDBOXES = 1024;
/** Policy revision rows kept (a policy of a few hundred bytes each). */
const MAX_REVISIONS = 1024;

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
}
