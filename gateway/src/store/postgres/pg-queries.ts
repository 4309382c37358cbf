// Every SQL statement of the PostgreSQL store. One PgQueries runs either on the pool (reads
// outside transactions, each its own snapshot) or on the client of one transaction, where reads
// that a caller will act on take locks: sandbox and provider rows FOR UPDATE, the global settings
// row FOR UPDATE, and a per-scope advisory lock before reading the latest policy revision (there
// may be no row to lock yet, e.g. the global policy's first version). Under READ COMMITTED each
// statement sees rows committed before it started, so after waiting for a lock the read returns
// the other transaction's committed result: read-then-update sequences never lose updates.
//
// Inside a transaction (TxHooks, see pg-batch.ts) writes whose answer nobody needs are queued and
// go out with the next statement or with COMMIT, and locking a sandbox also reads, in the same
// round trip and after the lock is held, what the gateway's transactions read next
// (pg-tx-cache.ts): the scope's advisory lock and latest policy revision, the sandbox's pending
// operations, for a commit by name (UpdateConfig) the sandbox's and the global settings it
// measures its snapshot with, and for a commit that names one its idempotency key's record.
// Those answers are kept for the rest of the transaction (updated by its own writes), and the
// compare-and-set of an operation so read is queued too (checked by the server: a lost one
// re-runs the transaction), so a commit or a result costs two round trips, the lock and the
// COMMIT. Every statement takes its values as parameters, so each shape is prepared once per
// connection. A queued create-only insert is sent without ON CONFLICT (a duplicate aborts the
// transaction with a conflict) only where the transaction's locks leave no room for a
// duplicate; elsewhere it is still answered at once.

import type pg from "pg";
import type { QueryResult, Stmt } from "./pg-batch.js";
import { BOTH_SETTINGS, LATEST_POLICY, PENDING_OPERATIONS, POLICY_LOCK, POLICY_LOCK_SHARED, TxCache, checkedCas } from "./pg-tx-cache.js";
import { INSERT_SANDBOX_EVENT, sandboxEventValues } from "./pg-instances.js";
import type { SandboxLifecycleRecord } from "../store.js";
import {
  OPERATION_STATE_PENDING,
  clampPageSize,
  copyBytes,
  decodeOperationPageToken,
  decodePolicyPageToken,
  decodeSandboxPageToken,
  operationPageToken,
  policyPageToken,
  providerValuesJson,
  sandboxPageToken,
} from "../codec.js";
import {
  StoreConflictError,
  type Dimension,
  type EnforcementRecord,
  type IdempotencyRecord,
  type OperationPatch,
  type OperationRecord,
  type Page,
  type PolicyRevisionRecord,
  type ProviderRecord,
  type SandboxPatch,
  type SandboxRecord,
  type SettingRecord,
  type Store,
} from "../store.js";
import {
  enforcementFromRow,
  idempotencyFromRow,
  idempotencyValues,
  operationFromRow,
  operationPatchSets,
  patchedOperation,
  operationValues,
  policyRevisionFromRow,
  policyRevisionValues,
  providerFromRow,
  patchedSandbox,
  sandboxFromRow,
  sandboxPatchSets,
  sandboxValues,
  settingFromRow,
  type EnforcementRow,
  type IdempotencyRow,
  type OperationRow,
  type PolicyRevisionRow,
  type ProviderRow,
  type SandboxRow,
  type SettingRow,
} from "./pg-rows.js";

export type Run = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/** Collects positional parameters: `p.add(v)` returns its `$n`. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** What a transaction's queries can do beyond running one statement (see pg-batch.ts). */
export interface TxHooks {
  /** Queues a write; it goes out with the next statement or with COMMIT. */
  defer(stmt: Stmt): void;
  /** Runs a statement, then `extra` in the same round trip; all results. */
  queryWith(text: string, values: readonly unknown[], extra: readonly Stmt[]): Promise<QueryResult[]>;
}

/** The UPDATE of `patch` (resource version bumped), with or without RETURNING *. */
function sandboxUpdate(id: string, patch: SandboxPatch, returning: boolean): [string, unknown[]] {
  const values: unknown[] = [];
  const sets = ["resource_version = resource_version + 1", ...sandboxPatchSets(patch, values)];
  values.push(id);
  return [`UPDATE sandboxes SET ${sets.join(", ")} WHERE id = $${values.length}${returning ? " RETURNING *" : ""}`, values];
}

// PENDING as a literal, not a parameter: a prepared statement's generic plan can use the partial
// index operations_pending_due (migration 7) only then. Exported for the test that reads their
// plans.
export const DUE_OPERATIONS = `SELECT * FROM operations WHERE state = ${OPERATION_STATE_PENDING} AND next_attempt_at <= $1 ORDER BY created_at, id LIMIT $2`;
export const COUNT_PENDING = `SELECT count(*) AS n FROM operations WHERE state = ${OPERATION_STATE_PENDING}`;

/** `$1, …, $n`, built once per n. */
const lists: string[] = [];
const list = (n: number) => (lists[n] ??= Array.from({ length: n }, (_, i) => `$${i + 1}`).join(", "));
const optional = (d: Date | undefined) => d ?? null;

export class PgQueries {
  /** Row locks for reads through a transaction; nothing outside one. */
  private readonly forUpdate: string;

  private readonly cache: TxCache | undefined;

  constructor(
    private readonly run: Run,
    private readonly inTransaction: boolean,
    private readonly hooks?: TxHooks,
  ) {
    this.forUpdate = inTransaction ? " FOR UPDATE" : "";
    this.cache = hooks && inTransaction ? new TxCache() : undefined;
  }

  /** A write whose answer is not needed: queued in a transaction, run at once elsewhere. */
  private async write(text: string, values: unknown[]): Promise<void> {
    if (this.hooks) this.hooks.defer({ text, values });
    else await this.run(text, values);
  }

  /**
   * Locks the sandbox rows `where` selects and, in the same round trip, takes the policy lock of
   * its scope and reads its latest revision and pending operations (kept in the cache). `idExpr`
   * is the sandbox's id in terms of `values` (the parameter itself, or a subquery by name).
   */
  private async lockSandbox(where: string, values: unknown[], idExpr: string, idempotencyKey?: string, withSettings = false): Promise<SandboxRecord | undefined> {
    const hooks = this.hooks!;
    const cache = this.cache!;
    const text = `SELECT * FROM sandboxes WHERE ${where} FOR UPDATE`;
    const by = (t: string): Stmt => ({ text: t, values });
    const extra = [by(POLICY_LOCK(idExpr)), by(LATEST_POLICY(idExpr)), by(PENDING_OPERATIONS(idExpr))];
    // The global settings are read once a global commit under way has ended (it holds the global
    // scope's lock exclusive), as the size check measures them: read before, they could be what
    // that commit replaces. Shared, so sandbox commits do not wait for each other.
    if (withSettings) extra.push({ text: POLICY_LOCK_SHARED("''"), values: [] }, by(BOTH_SETTINGS(idExpr)));
    if (idempotencyKey !== undefined) {
      extra.push({ text: `SELECT * FROM idempotency WHERE sandbox_id = ${idExpr} AND key = $${values.length + 1}`, values: [...values, idempotencyKey] });
    }
    const [r, , latest, pending, ...rest] = await hooks.queryWith(text, values, extra);
    const row = r!.rows[0] as SandboxRow | undefined;
    if (!row) return undefined;
    const sb = sandboxFromRow(row);
    cache.sandboxes.set(sb.id, sb);
    const rev = latest!.rows[0] as PolicyRevisionRow | undefined;
    cache.latest.set(sb.id, rev && policyRevisionFromRow(rev));
    cache.pending.set(sb.id, (pending!.rows as OperationRow[]).map(operationFromRow));
    if (withSettings) {
      const [, both] = rest.splice(0, 2);
      const settings = (both!.rows as SettingRow[]).map(settingFromRow);
      cache.settings.set(sb.id, settings.filter((x) => x.sandboxId === sb.id));
      cache.settings.set("", settings.filter((x) => x.sandboxId === ""));
    }
    const key = rest[0];
    if (key) {
      const k = key.rows[0] as IdempotencyRow | undefined;
      cache.keys.set(`${sb.id}\0${idempotencyKey}`, k && idempotencyFromRow(k));
    }
    return sb;
  }

  private async one<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R | undefined> {
    return (await this.run<R>(text, values)).rows[0];
  }

  private async all<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.run<R>(text, values)).rows;
  }

  /**
   * Create-only insert. ON CONFLICT DO NOTHING (rather than catching 23505) keeps the transaction
   * usable after a duplicate, as in SQLite; a concurrent uncommitted insert of the same key is
   * waited for, then counts as a duplicate if it committed.
   */
  private async insertOnce(text: string, values: unknown[], what: string, deferrable = false): Promise<void> {
    if (deferrable && this.hooks) {
      // A duplicate (which the caller's locks rule out) fails the statement and so the commit.
      this.hooks.defer({ text, values });
      return;
    }
    const r = await this.run(`${text} ON CONFLICT DO NOTHING`, values);
    if (r.rowCount === 0) throw new StoreConflictError(`${what} already exists`);
  }

  // --- sandboxes ---

  async sandboxByName(workspace: string, name: string, idempotencyKey?: string, measured = false): Promise<SandboxRecord | undefined> {
    if (this.cache) {
      // A commit by name (UpdateConfig) measures the snapshot it leads to, from both scopes'
      // settings; stopping, starting or deleting a sandbox does not, nor waits for a global commit.
      const id = "(SELECT id FROM sandboxes WHERE workspace = $1 AND name = $2)";
      return this.lockSandbox("workspace = $1 AND name = $2", [workspace, name], id, idempotencyKey, measured);
    }
    const r = await this.one<SandboxRow>(`SELECT * FROM sandboxes WHERE workspace = $1 AND name = $2${this.forUpdate}`, [workspace, name]);
    return r && sandboxFromRow(r);
  }

  async sandboxById(id: string): Promise<SandboxRecord | undefined> {
    if (this.cache) return this.lockSandbox("id = $1", [id], "$1");
    const r = await this.one<SandboxRow>(`SELECT * FROM sandboxes WHERE id = $1${this.forUpdate}`, [id]);
    return r && sandboxFromRow(r);
  }

  insertSandbox(s: SandboxRecord): Promise<void> {
    return this.insertOnce(
      `INSERT INTO sandboxes VALUES (${list(15)})`,
      sandboxValues(s),
      `sandbox ${s.workspace}/${s.name} (id ${s.id})`,
    );
  }

  async updateSandbox(id: string, patch: SandboxPatch): Promise<SandboxRecord> {
    const held = this.cache?.sandboxes.get(id);
    if (held) {
      // The row is locked by this transaction and known as it stands: the new record follows
      // from the patch, and the UPDATE needs no answer.
      const [text, values] = sandboxUpdate(id, patch, false);
      this.write(text, values);
      const next = patchedSandbox(held, patch);
      this.cache!.sandboxes.set(id, next);
      return next;
    }
    const [text, values] = sandboxUpdate(id, patch, true);
    const r = await this.one<SandboxRow>(text, values);
    if (!r) throw new Error(`updateSandbox: no sandbox with id ${id}`);
    const next = sandboxFromRow(r);
    this.cache?.sandboxes.set(id, next);
    return next;
  }

  /** Removes the sandbox and its sandbox-scoped rows; operations stay as the record of what became of each change. */
  async deleteSandbox(id: string): Promise<void> {
    if (id === "") return; // "" is the global scope, never a sandbox
    for (const table of ["sandboxes", "policy_revisions", "settings", "idempotency", "sandbox_enforcement"]) {
      await this.write(`DELETE FROM ${table} WHERE ${table === "sandboxes" ? "id" : "sandbox_id"} = $1`, [id]);
    }
    if (this.cache) {
      this.cache.sandboxes.delete(id);
      this.cache.latest.delete(id);
      this.cache.pending.delete(id);
      this.cache.settings.delete(id);
      for (const k of this.cache.absentKeys) if (k.startsWith(`${id}\0`)) this.cache.absentKeys.delete(k);
      for (const k of this.cache.keys.keys()) if (k.startsWith(`${id}\0`)) this.cache.keys.delete(k);
    }
  }

  async listSandboxes(q: Parameters<Store["listSandboxes"]>[0]): Promise<Page<SandboxRecord>> {
    const size = clampPageSize(q.pageSize);
    const after = decodeSandboxPageToken(q.pageToken);
    const p = new Params();
    const where: string[] = [];
    if (q.workspace !== undefined) where.push(`workspace = ${p.add(q.workspace)}`);
    if (after) where.push(`(workspace, name) > (${p.add(after.workspace)}, ${p.add(after.name)})`);
    if (Object.keys(q.labels).length > 0) where.push(`labels @> ${p.add(JSON.stringify(q.labels))}::jsonb`);
    const text = `SELECT * FROM sandboxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY workspace, name LIMIT ${p.add(size + 1)}`;
    const rows = await this.all<SandboxRow>(text, p.values);
    const items = rows.slice(0, size).map(sandboxFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? sandboxPageToken(last.workspace, last.name) : "" };
  }

  async sandboxesWithProvider(workspace: string, name: string): Promise<SandboxRecord[]> {
    const rows = await this.all<SandboxRow>(
      `SELECT * FROM sandboxes WHERE workspace = $1 AND providers @> jsonb_build_array($2::text) ORDER BY name${this.forUpdate}`,
      [workspace, name],
    );
    return rows.map(sandboxFromRow);
  }

  // --- policy revisions ---

  async policyRevision(sandboxId: string, version: number): Promise<PolicyRevisionRecord | undefined> {
    const latest = this.cache?.latest.get(sandboxId);
    if (latest && latest.version === version) return latest;
    const r = await this.one<PolicyRevisionRow>("SELECT * FROM policy_revisions WHERE sandbox_id = $1 AND version = $2", [sandboxId, version]);
    return r && policyRevisionFromRow(r);
  }

  async latestPolicyRevision(sandboxId: string, lock?: "shared"): Promise<PolicyRevisionRecord | undefined> {
    const take = lock === "shared" ? POLICY_LOCK_SHARED : POLICY_LOCK;
    if (this.cache) {
      // Kept, unless it was read under the shared lock and the exclusive one is asked for now.
      if (this.cache.latest.has(sandboxId) && (lock === "shared" || !this.cache.sharedOnly.has(sandboxId))) return this.cache.latest.get(sandboxId);
      // Serializes "read latest, insert latest + 1" per scope until commit; the read is a
      // statement of its own, so its snapshot is taken once the lock is held.
      const [, r] = await this.hooks!.queryWith(take("$1"), [sandboxId], [{ text: LATEST_POLICY("$1"), values: [sandboxId] }]);
      const row = r!.rows[0] as PolicyRevisionRow | undefined;
      const rev = row && policyRevisionFromRow(row);
      this.cache.latest.set(sandboxId, rev);
      if (lock === "shared") this.cache.sharedOnly.add(sandboxId);
      else this.cache.sharedOnly.delete(sandboxId);
      return rev;
    }
    if (this.inTransaction) await this.run(take("$1"), [sandboxId]);
    const r = await this.one<PolicyRevisionRow>(LATEST_POLICY("$1"), [sandboxId]);
    return r && policyRevisionFromRow(r);
  }

  async putEnforcement(e: EnforcementRecord): Promise<void> {
    await this.write(
      `INSERT INTO sandbox_enforcement (sandbox_id, state, policy_version, detail, observed_at) VALUES (${list(5)})
       ON CONFLICT (sandbox_id) DO UPDATE SET state = excluded.state, policy_version = excluded.policy_version,
         detail = excluded.detail, observed_at = excluded.observed_at`,
      [e.sandboxId, e.state, e.policyVersion, e.detail, e.observedAt],
    );
  }

  /** Who created or deleted an instance, in the same transaction as the change (pg-instances.ts). */
  async recordSandboxEvent(r: SandboxLifecycleRecord): Promise<void> {
    await this.insertOnce(INSERT_SANDBOX_EVENT, sandboxEventValues(r), `the "${r.event}" record of sandbox ${r.sandboxId}`);
  }

  async enforcements(sandboxIds: readonly string[]): Promise<EnforcementRecord[]> {
    if (sandboxIds.length === 0) return [];
    const { rows } = await this.run<EnforcementRow>("SELECT * FROM sandbox_enforcement WHERE sandbox_id = ANY($1::text[])", [sandboxIds]);
    return rows.map(enforcementFromRow);
  }

  async insertPolicyRevision(r: PolicyRevisionRecord): Promise<void> {
    const cache = this.cache;
    // Under the scope's policy lock, latest + 1 cannot exist: the insert needs no answer.
    const next = cache?.latest.has(r.sandboxId) && (cache.latest.get(r.sandboxId)?.version ?? 0) + 1 === r.version;
    await this.insertOnce(
      `INSERT INTO policy_revisions VALUES (${list(9)})`,
      policyRevisionValues(r),
      `policy revision ${r.version} of "${r.sandboxId}"`,
      next === true,
    );
    if (!cache) return;
    if (next) cache.latest.set(r.sandboxId, { ...r, policy: copyBytes(r.policy), provenance: { ...r.provenance } });
    else cache.latest.delete(r.sandboxId);
  }

  async setPolicyStatus(sandboxId: string, version: number, status: number, loadError: string, loadedAt: Date | undefined): Promise<void> {
    const latest = this.cache?.latest.get(sandboxId);
    if (latest && latest.version === version) this.cache!.latest.set(sandboxId, { ...latest, status, loadError, loadedAt });
    await this.write("UPDATE policy_revisions SET status = $1, load_error = $2, loaded_at = $3 WHERE sandbox_id = $4 AND version = $5", [
      status,
      loadError,
      optional(loadedAt),
      sandboxId,
      version,
    ]);
  }

  async listPolicyRevisions(sandboxId: string, pageSize: number, pageToken: string): Promise<Page<PolicyRevisionRecord>> {
    const size = clampPageSize(pageSize);
    const before = decodePolicyPageToken(pageToken);
    const rows =
      before === undefined
        ? await this.all<PolicyRevisionRow>("SELECT * FROM policy_revisions WHERE sandbox_id = $1 ORDER BY version DESC LIMIT $2", [sandboxId, size + 1])
        : await this.all<PolicyRevisionRow>(
            "SELECT * FROM policy_revisions WHERE sandbox_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3",
            [sandboxId, before, size + 1],
          );
    const items = rows.slice(0, size).map(policyRevisionFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? policyPageToken(last.version) : "" };
  }

  // --- settings ---

  async settings(sandboxId: string): Promise<SettingRecord[]> {
    const kept = this.cache?.settings.get(sandboxId);
    if (kept) return [...kept];
    return (await this.all<SettingRow>("SELECT * FROM settings WHERE sandbox_id = $1 ORDER BY key", [sandboxId])).map(settingFromRow);
  }

  async putSetting(s: SettingRecord): Promise<void> {
    const kept = this.cache?.settings.get(s.sandboxId);
    const at = kept ? kept.findIndex((k) => k.key === s.key) : -1;
    // A replaced value keeps its place; a new key's place is the database collation's: read anew.
    if (kept && at >= 0) kept[at] = { sandboxId: s.sandboxId, key: s.key, value: copyBytes(s.value) };
    else this.cache?.settings.delete(s.sandboxId);
    await this.write(
      "INSERT INTO settings (sandbox_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (sandbox_id, key) DO UPDATE SET value = excluded.value",
      [s.sandboxId, s.key, s.value],
    );
  }

  async deleteSetting(sandboxId: string, key: string): Promise<void> {
    const kept = this.cache?.settings.get(sandboxId);
    if (kept) this.cache!.settings.set(sandboxId, kept.filter((k) => k.key !== key));
    await this.write("DELETE FROM settings WHERE sandbox_id = $1 AND key = $2", [sandboxId, key]);
  }

  async globalSettingsRevision(): Promise<bigint> {
    // Global settings read before this lock was taken are not what the lock protects: read anew.
    this.cache?.settings.delete("");
    const r = await this.one<{ revision: string }>(`SELECT revision FROM global_settings_revision WHERE id = 1${this.forUpdate}`, []);
    return r ? BigInt(r.revision) : 0n;
  }

  /** Locks nothing, in a transaction too (a commit's target reads it: see StoreTx). */
  async globalVersions(): Promise<{ policyVersion: number; settingsRevision: bigint }> {
    const r = await this.one<{ policy_version: number | null; settings_revision: string | null }>(
      "SELECT (SELECT max(version) FROM policy_revisions WHERE sandbox_id = '') AS policy_version, (SELECT revision FROM global_settings_revision WHERE id = 1) AS settings_revision",
      [],
    );
    return { policyVersion: Number(r?.policy_version ?? 0), settingsRevision: BigInt(r?.settings_revision ?? 0) };
  }

  async setGlobalSettingsRevision(revision: bigint): Promise<void> {
    await this.write("UPDATE global_settings_revision SET revision = $1 WHERE id = 1", [revision]);
  }

  // --- idempotency ---

  async idempotency(sandboxId: string, key: string): Promise<IdempotencyRecord | undefined> {
    const k = `${sandboxId}\0${key}`;
    if (this.cache?.keys.has(k)) {
      // Read with the sandbox's lock (still held): answered once, as a read now would be.
      const kept = this.cache.keys.get(k);
      this.cache.keys.delete(k);
      if (!kept) this.cache.absentKeys.add(k);
      return kept;
    }
    const r = await this.one<IdempotencyRow>("SELECT * FROM idempotency WHERE sandbox_id = $1 AND key = $2", [sandboxId, key]);
    if (!r && this.cache?.sandboxes.has(sandboxId)) this.cache.absentKeys.add(`${sandboxId}\0${key}`);
    return r && idempotencyFromRow(r);
  }

  insertIdempotency(i: IdempotencyRecord): Promise<void> {
    // Read as absent under the sandbox's lock: the insert needs no answer.
    this.cache?.keys.delete(`${i.sandboxId}\0${i.key}`);
    const absent = this.cache?.absentKeys.delete(`${i.sandboxId}\0${i.key}`) === true;
    return this.insertOnce(
      `INSERT INTO idempotency VALUES (${list(7)})`,
      idempotencyValues(i),
      `idempotency key "${i.key}" of "${i.sandboxId}"`,
      absent,
    );
  }

  // --- operations ---

  async operation(id: string): Promise<OperationRecord | undefined> {
    const r = await this.one<OperationRow>("SELECT * FROM operations WHERE id = $1", [id]);
    return r && operationFromRow(r);
  }

  insertOperation(o: OperationRecord): Promise<void> {
    // Fresh ids (UUIDs) on a sandbox this transaction holds locked: the insert needs no answer.
    const held = this.cache?.sandboxes.has(o.sandboxId) === true;
    this.cache?.pending.delete(o.sandboxId);
    return this.insertOnce(
      `INSERT INTO operations VALUES (${list(16)})`,
      operationValues(o),
      `operation ${o.id}`,
      held,
    );
  }

  async updateOperation(id: string, expectedRowVersion: number, patch: OperationPatch): Promise<OperationRecord | undefined> {
    const deferred = this.deferredCas(id, expectedRowVersion, patch);
    if (deferred) return deferred;
    this.cache?.pending.clear();
    const values: unknown[] = [new Date()];
    const sets = ["updated_at = $1", "row_version = row_version + 1", ...operationPatchSets(patch, values)];
    values.push(id, expectedRowVersion);
    const r = await this.one<OperationRow>(
      `UPDATE operations SET ${sets.join(", ")} WHERE id = $${values.length - 1} AND row_version = $${values.length} RETURNING *`,
      values,
    );
    return r && operationFromRow(r);
  }

  /**
   * An operation read PENDING under its sandbox's lock in this transaction, still at
   * `expectedRowVersion` as far as it knows: the CAS is queued (checkedCas) and its result
   * follows from the patch. Undefined where it cannot be.
   */
  private deferredCas(id: string, expectedRowVersion: number, patch: OperationPatch): OperationRecord | undefined {
    if (!this.cache || !this.hooks) return undefined;
    for (const [sandboxId, ops] of this.cache.pending) {
      const at = ops.findIndex((o) => o.id === id);
      if (at < 0) continue;
      const held = ops[at]!;
      if (held.rowVersion !== expectedRowVersion) return undefined;
      const now = new Date();
      const values: unknown[] = [now];
      const sets = ["updated_at = $1", "row_version = row_version + 1", ...operationPatchSets(patch, values)];
      values.push(id, expectedRowVersion);
      const update = `UPDATE operations SET ${sets.join(", ")} WHERE id = $${values.length - 1} AND row_version = $${values.length}`;
      this.hooks.defer({ text: checkedCas(update), values, cas: true });
      const next = patchedOperation(held, patch, now);
      const rest = [...ops];
      if (next.state === OPERATION_STATE_PENDING) rest[at] = next;
      else rest.splice(at, 1);
      this.cache.pending.set(sandboxId, rest);
      return next;
    }
    return undefined;
  }

  async pendingOperations(sandboxId: string, dimension?: Dimension): Promise<OperationRecord[]> {
    const kept = this.cache?.pending.get(sandboxId);
    if (kept) return kept.filter((o) => dimension === undefined || o.dimension === dimension);
    // The state is a literal so that the partial index of pending operations always applies.
    const rows =
      dimension === undefined
        ? await this.all<OperationRow>(`SELECT * FROM operations WHERE sandbox_id = $1 AND state = ${OPERATION_STATE_PENDING} ORDER BY created_at, id`, [sandboxId])
        : await this.all<OperationRow>(
            `SELECT * FROM operations WHERE sandbox_id = $1 AND state = ${OPERATION_STATE_PENDING} AND dimension = $2 ORDER BY created_at, id`,
            [sandboxId, dimension],
          );
    return rows.map(operationFromRow);
  }

  async operationsOfSandbox(sandboxId: string, limit: number): Promise<OperationRecord[]> {
    const rows = await this.all<OperationRow>("SELECT * FROM operations WHERE sandbox_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2", [
      sandboxId,
      Math.max(0, Math.floor(limit)),
    ]);
    return rows.map(operationFromRow);
  }

  async listOperationsOfSandbox(sandboxId: string, pageSize: number, pageToken: string): Promise<Page<OperationRecord>> {
    const size = clampPageSize(pageSize);
    const after = decodeOperationPageToken(pageToken);
    const rows =
      after === undefined
        ? await this.all<OperationRow>("SELECT * FROM operations WHERE sandbox_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2", [sandboxId, size + 1])
        : await this.all<OperationRow>(
            "SELECT * FROM operations WHERE sandbox_id = $1 AND (created_at, id) < ($2, $3) ORDER BY created_at DESC, id DESC LIMIT $4",
            [sandboxId, new Date(after.createdAtMs), after.id, size + 1],
          );
    const items = rows.slice(0, size).map(operationFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? operationPageToken(last.createdAt.getTime(), last.id) : "" };
  }

  async dueOperations(now: Date, limit: number): Promise<OperationRecord[]> {
    const rows = await this.all<OperationRow>(
      DUE_OPERATIONS,
      [now, Math.max(0, Math.floor(limit))],
    );
    return rows.map(operationFromRow);
  }

  async countPending(): Promise<number> {
    const r = await this.one<{ n: string }>(COUNT_PENDING, []);
    return Number(r?.n ?? 0);
  }

  // --- providers ---

  async providerByName(workspace: string, name: string): Promise<ProviderRecord | undefined> {
    const r = await this.one<ProviderRow>(`SELECT * FROM providers WHERE workspace = $1 AND name = $2${this.forUpdate}`, [workspace, name]);
    return r && providerFromRow(r);
  }

  insertProvider(p: ProviderRecord): Promise<void> {
    return this.insertOnce(
      `INSERT INTO providers VALUES (${list(7)})`,
      [p.id, p.workspace, p.name, p.type, p.resourceVersion, providerValuesJson(p.values), p.createdAt],
      `provider ${p.workspace}/${p.name} (id ${p.id})`,
    );
  }

  async updateProvider(id: string, patch: { type?: string; values?: ProviderRecord["values"] }): Promise<ProviderRecord> {
    const p = new Params();
    const sets = ["resource_version = resource_version + 1"];
    if (patch.type !== undefined) sets.push(`type = ${p.add(patch.type)}`);
    if (patch.values !== undefined) sets.push(`value = ${p.add(providerValuesJson(patch.values))}`);
    const r = await this.one<ProviderRow>(`UPDATE providers SET ${sets.join(", ")} WHERE id = ${p.add(id)} RETURNING *`, p.values);
    if (!r) throw new Error(`updateProvider: no provider with id ${id}`);
    return providerFromRow(r);
  }
}
