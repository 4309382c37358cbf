// Every SQL statement of the SQLite store, as synchronous methods over one better-sqlite3
// connection. sqlite-store.ts decides when they may run (transaction, mutex); this file only
// knows the SQL. Statements are prepared once and cached by their text.

import type BetterSqlite3 from "better-sqlite3";
import {
  OPERATION_STATE_PENDING,
  clampPageSize,
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
  idempotencyParams,
  ms,
  operationFromRow,
  operationParams,
  operationPatchSql,
  patchedOperation,
  patchedSandbox,
  policyRevisionFromRow,
  policyRevisionParams,
  providerFromRow,
  sandboxFromRow,
  sandboxParams,
  sandboxPatchSql,
  settingFromRow,
  type EnforcementRow,
  type IdempotencyRow,
  type OperationRow,
  type PolicyRevisionRow,
  type ProviderRow,
  type SandboxRow,
  type SettingRow,
} from "./sqlite-rows.js";
import { SqliteRowCache } from "./sqlite-row-cache.js";
import { recordSandboxEvent } from "./sqlite-instances.js";
import type { SandboxLifecycleRecord } from "../store.js";

// Read through the partial index operations_pending_due (migration 7; SQLite matches a bound
// state as well as a literal one). Exported for the test that reads their plans.
export const DUE_OPERATIONS = `SELECT * FROM operations WHERE state = ${OPERATION_STATE_PENDING} AND next_attempt_at <= ? ORDER BY created_at, id LIMIT ?`;
export const COUNT_PENDING = `SELECT count(*) FROM operations WHERE state = ${OPERATION_STATE_PENDING}`;

/** `?, ?, …` for an n-column insert; built once per width (inserts run on every update). */
const placeholderLists = new Map<number, string>();
const placeholders = (n: number) => {
  let s = placeholderLists.get(n);
  if (s === undefined) placeholderLists.set(n, (s = Array.from({ length: n }, () => "?").join(", ")));
  return s;
};

export type SandboxQuery = Parameters<Store["listSandboxes"]>[0];

export class SqliteQueries {
  private readonly cache = new Map<string, BetterSqlite3.Statement>();

  /**
   * While a transaction's fn runs (beginTx to endTx): the operation rows it has read or written,
   * as they stand. Its transaction is the only writer of the database meanwhile (BEGIN IMMEDIATE
   * holds the write lock; one transaction runs at a time on the connection), so an update of a
   * held row needs no RETURNING: the new record follows from the patch.
   */
  private holding = false;
  private readonly heldOperations = new Map<string, OperationRecord>();

  /** Sandbox and policy revision rows kept between transactions (sqlite-row-cache.ts). */
  private readonly rows: SqliteRowCache;

  constructor(private readonly db: BetterSqlite3.Database) {
    this.rows = new SqliteRowCache(db);
  }

  /** A transaction's fn starts: operation rows read from here on are held (see `holding`). */
  beginTx(): void {
    this.holding = true;
    this.rows.enterTransaction();
  }

  /** The transaction's fn ended (committed into the batch or rolled back): nothing is held. */
  endTx(): void {
    this.holding = false;
    this.heldOperations.clear();
    this.rows.leaveTransaction();
  }

  /** Some writes were rolled back (a failed job, a failed COMMIT): cached rows may not be in the database. */
  discardCachedRows(): void {
    this.rows.discard();
  }

  private holdOperation(o: OperationRecord): OperationRecord {
    if (this.holding) this.heldOperations.set(o.id, o);
    return o;
  }

  private stmt(sql: string): BetterSqlite3.Statement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  private one<R>(sql: string, ...params: unknown[]): R | undefined {
    return this.stmt(sql).get(...params) as R | undefined;
  }

  private all<R>(sql: string, ...params: unknown[]): R[] {
    return this.stmt(sql).all(...params) as R[];
  }

  /** Create-only insert: ON CONFLICT DO NOTHING keeps the transaction usable after a duplicate. */
  private insertOnce(sql: string, params: unknown[], what: string): void {
    if (this.stmt(`${sql} ON CONFLICT DO NOTHING`).run(...params).changes === 0) {
      throw new StoreConflictError(`${what} already exists`);
    }
  }

  // --- sandboxes ---

  /** `_idempotencyKey`: a hint for engines with round trips; SQLite reads the key when asked. */
  sandboxByName(workspace: string, name: string, _idempotencyKey?: string): SandboxRecord | undefined {
    this.rows.check();
    const cached = this.rows.sandboxByName(workspace, name);
    if (cached) return cached;
    const r = this.one<SandboxRow>("SELECT * FROM sandboxes WHERE workspace = ? AND name = ?", workspace, name);
    return r && this.rows.putSandbox(sandboxFromRow(r));
  }

  sandboxById(id: string): SandboxRecord | undefined {
    this.rows.check();
    const cached = this.rows.sandboxById(id);
    if (cached) return cached;
    const r = this.one<SandboxRow>("SELECT * FROM sandboxes WHERE id = ?", id);
    return r && this.rows.putSandbox(sandboxFromRow(r));
  }

  insertSandbox(s: SandboxRecord): void {
    this.insertOnce(`INSERT INTO sandboxes VALUES (${placeholders(15)})`, sandboxParams(s), `sandbox ${s.workspace}/${s.name} (id ${s.id})`);
  }

  updateSandbox(id: string, patch: SandboxPatch): SandboxRecord {
    const { sets, values } = sandboxPatchSql(patch);
    sets.push("resource_version = resource_version + 1");
    // A cached row is the row as it stands, so the new record follows from the patch.
    this.rows.check();
    const cached = this.rows.sandboxById(id);
    if (cached) {
      if (this.stmt(`UPDATE sandboxes SET ${sets.join(", ")} WHERE id = ?`).run(...values, id).changes !== 1) {
        throw new Error(`updateSandbox: no sandbox with id ${id}`);
      }
      return this.rows.putSandbox(patchedSandbox(cached, patch));
    }
    const r = this.one<SandboxRow>(`UPDATE sandboxes SET ${sets.join(", ")} WHERE id = ? RETURNING *`, ...values, id);
    if (!r) throw new Error(`updateSandbox: no sandbox with id ${id}`);
    return this.rows.putSandbox(sandboxFromRow(r));
  }

  /** Removes the sandbox and its sandbox-scoped rows; operations stay as the record of what became of each change. */
  deleteSandbox(id: string): void {
    if (id === "") return; // "" is the global scope, never a sandbox
    this.rows.deleteSandbox(id);
    this.stmt("DELETE FROM sandboxes WHERE id = ?").run(id);
    this.stmt("DELETE FROM policy_revisions WHERE sandbox_id = ?").run(id);
    this.stmt("DELETE FROM settings WHERE sandbox_id = ?").run(id);
    this.stmt("DELETE FROM idempotency WHERE sandbox_id = ?").run(id);
    this.stmt("DELETE FROM sandbox_enforcement WHERE sandbox_id = ?").run(id);
  }

  listSandboxes(q: SandboxQuery): Page<SandboxRecord> {
    const size = clampPageSize(q.pageSize);
    const after = decodeSandboxPageToken(q.pageToken);
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.workspace !== undefined) {
      where.push("workspace = ?");
      params.push(q.workspace);
    }
    if (after && after.workspace === q.workspace) {
      // Within one workspace the page starts after a name: a range on the (workspace, name)
      // index. SQLite does not take the row-value comparison below as a range bound next to
      // `workspace = ?`, so every page would scan the workspace from its first name.
      where.push("name > ?");
      params.push(after.name);
    } else if (after) {
      where.push("(workspace, name) > (?, ?)");
      params.push(after.workspace, after.name);
    }
    for (const [k, v] of Object.entries(q.labels)) {
      where.push("EXISTS (SELECT 1 FROM json_each(sandboxes.labels) AS l WHERE l.key = ? AND l.type = 'text' AND l.value = ?)");
      params.push(k, v);
    }
    const sql = `SELECT * FROM sandboxes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY workspace, name LIMIT ?`;
    const rows = this.all<SandboxRow>(sql, ...params, size + 1);
    const items = rows.slice(0, size).map(sandboxFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? sandboxPageToken(last.workspace, last.name) : "" };
  }

  sandboxesWithProvider(workspace: string, name: string): SandboxRecord[] {
    return this.all<SandboxRow>(
      "SELECT * FROM sandboxes WHERE workspace = ? AND EXISTS (SELECT 1 FROM json_each(sandboxes.providers) AS p WHERE p.value = ?) ORDER BY name",
      workspace,
      name,
    ).map(sandboxFromRow);
  }

  // --- what each sandbox enforces ---

  putEnforcement(e: EnforcementRecord): void {
    this.stmt(
      `INSERT INTO sandbox_enforcement (sandbox_id, state, policy_version, detail, observed_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (sandbox_id) DO UPDATE SET state = excluded.state, policy_version = excluded.policy_version,
         detail = excluded.detail, observed_at = excluded.observed_at`,
    ).run(e.sandboxId, e.state, e.policyVersion, e.detail, ms(e.observedAt));
  }

  enforcements(sandboxIds: readonly string[]): EnforcementRecord[] {
    if (sandboxIds.length === 0) return [];
    const sql = "SELECT * FROM sandbox_enforcement WHERE sandbox_id IN (SELECT value FROM json_each(?))";
    return this.all<EnforcementRow>(sql, JSON.stringify(sandboxIds)).map(enforcementFromRow);
  }

  /** Who created or deleted an instance, in the same transaction as the change (sqlite-instances.ts). */
  recordSandboxEvent(r: SandboxLifecycleRecord): void {
    recordSandboxEvent(this.db, r);
  }

  // --- policy revisions ---

  policyRevision(sandboxId: string, version: number): PolicyRevisionRecord | undefined {
    this.rows.check();
    const cached = this.rows.revision(sandboxId, version);
    if (cached) return cached;
    const r = this.one<PolicyRevisionRow>("SELECT * FROM policy_revisions WHERE sandbox_id = ? AND version = ?", sandboxId, version);
    return r && this.rows.putRevision(policyRevisionFromRow(r));
  }

  latestPolicyRevision(sandboxId: string): PolicyRevisionRecord | undefined {
    this.rows.check();
    const cached = this.rows.latestRevision(sandboxId);
    if (cached) return cached;
    const r = this.one<PolicyRevisionRow>("SELECT * FROM policy_revisions WHERE sandbox_id = ? ORDER BY version DESC LIMIT 1", sandboxId);
    return r && this.rows.putRevision(policyRevisionFromRow(r), true);
  }

  insertPolicyRevision(p: PolicyRevisionRecord): void {
    this.rows.check();
    this.insertOnce(`INSERT INTO policy_revisions VALUES (${placeholders(9)})`, policyRevisionParams(p), `policy revision ${p.version} of "${p.sandboxId}"`);
    this.rows.insertedRevision(p);
  }

  setPolicyStatus(sandboxId: string, version: number, status: number, loadError: string, loadedAt: Date | undefined): void {
    this.rows.check();
    const loadedAtMs = loadedAt === undefined ? undefined : ms(loadedAt);
    this.stmt("UPDATE policy_revisions SET status = ?, load_error = ?, loaded_at = ? WHERE sandbox_id = ? AND version = ?").run(status, loadError, loadedAtMs ?? null, sandboxId, version);
    this.rows.revisionStatus(sandboxId, version, status, loadError, loadedAtMs);
  }

  listPolicyRevisions(sandboxId: string, pageSize: number, pageToken: string): Page<PolicyRevisionRecord> {
    const size = clampPageSize(pageSize);
    const before = decodePolicyPageToken(pageToken);
    const rows =
      before === undefined
        ? this.all<PolicyRevisionRow>("SELECT * FROM policy_revisions WHERE sandbox_id = ? ORDER BY version DESC LIMIT ?", sandboxId, size + 1)
        : this.all<PolicyRevisionRow>(
            "SELECT * FROM policy_revisions WHERE sandbox_id = ? AND version < ? ORDER BY version DESC LIMIT ?",
            sandboxId,
            before,
            size + 1,
          );
    const items = rows.slice(0, size).map(policyRevisionFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? policyPageToken(last.version) : "" };
  }

  // --- settings ---

  settings(sandboxId: string): readonly SettingRecord[] {
    this.rows.check();
    const cached = this.rows.settings(sandboxId);
    if (cached) return cached;
    return this.rows.putSettings(sandboxId, this.all<SettingRow>("SELECT * FROM settings WHERE sandbox_id = ? ORDER BY key", sandboxId).map(settingFromRow));
  }

  putSetting(s: SettingRecord): void {
    this.rows.settingsChanged(s.sandboxId);
    this.stmt("INSERT INTO settings (sandbox_id, key, value) VALUES (?, ?, ?) ON CONFLICT (sandbox_id, key) DO UPDATE SET value = excluded.value").run(
      s.sandboxId,
      s.key,
      s.value,
    );
  }

  deleteSetting(sandboxId: string, key: string): void {
    this.rows.settingsChanged(sandboxId);
    this.stmt("DELETE FROM settings WHERE sandbox_id = ? AND key = ?").run(sandboxId, key);
  }

  globalSettingsRevision(): bigint {
    return (this.stmt("SELECT revision FROM global_settings_revision WHERE id = 1").pluck().get() as bigint | undefined) ?? 0n;
  }

  globalVersions(): { policyVersion: number; settingsRevision: bigint } {
    const r = this.stmt(
      "SELECT (SELECT max(version) FROM policy_revisions WHERE sandbox_id = '') AS policy_version, (SELECT revision FROM global_settings_revision WHERE id = 1) AS settings_revision",
    ).get() as { policy_version: bigint | number | null; settings_revision: bigint | null };
    return { policyVersion: Number(r.policy_version ?? 0), settingsRevision: BigInt(r.settings_revision ?? 0n) };
  }

  setGlobalSettingsRevision(revision: bigint): void {
    this.stmt("UPDATE global_settings_revision SET revision = ? WHERE id = 1").run(revision);
  }

  // --- idempotency ---

  idempotency(sandboxId: string, key: string): IdempotencyRecord | undefined {
    const r = this.one<IdempotencyRow>("SELECT * FROM idempotency WHERE sandbox_id = ? AND key = ?", sandboxId, key);
    return r && idempotencyFromRow(r);
  }

  insertIdempotency(i: IdempotencyRecord): void {
    this.insertOnce(`INSERT INTO idempotency VALUES (${placeholders(7)})`, idempotencyParams(i), `idempotency key "${i.key}" of "${i.sandboxId}"`);
  }

  // --- operations ---

  operation(id: string): OperationRecord | undefined {
    const r = this.one<OperationRow>("SELECT * FROM operations WHERE id = ?", id);
    return r && this.holdOperation(operationFromRow(r));
  }

  insertOperation(o: OperationRecord): void {
    this.insertOnce(`INSERT INTO operations VALUES (${placeholders(16)})`, operationParams(o), `operation ${o.id}`);
    this.rows.insertedOperation(o);
  }

  updateOperation(id: string, expectedRowVersion: number, patch: OperationPatch): OperationRecord | undefined {
    const { sets, values } = operationPatchSql(patch);
    sets.push("updated_at = ?", "row_version = row_version + 1");
    const now = Date.now();
    const held = this.holding ? this.heldOperations.get(id) : undefined;
    if (held && held.rowVersion === expectedRowVersion) {
      // The compare-and-set cannot fail on a held row at the expected version; `changes` checks it.
      const { changes } = this.stmt(`UPDATE operations SET ${sets.join(", ")} WHERE id = ? AND row_version = ?`).run(...values, now, id, expectedRowVersion);
      if (changes !== 1) {
        this.heldOperations.delete(id);
        return undefined;
      }
      const next = patchedOperation(held, patch, new Date(now));
      this.heldOperations.set(id, next);
      this.rows.updatedOperation(next);
      return next;
    }
    const r = this.one<OperationRow>(
      `UPDATE operations SET ${sets.join(", ")} WHERE id = ? AND row_version = ? RETURNING *`,
      ...values,
      now,
      id,
      expectedRowVersion,
    );
    if (!r) return undefined;
    const updated = operationFromRow(r);
    this.rows.updatedOperation(updated);
    return this.holdOperation(updated);
  }

  pendingOperations(sandboxId: string, dimension?: Dimension): OperationRecord[] {
    this.rows.check();
    let ops = this.rows.pending(sandboxId);
    if (ops === undefined) {
      // The state is a literal, not a parameter: only then can SQLite use the partial index of
      // pending operations (it matches index conditions at prepare time).
      ops = this.all<OperationRow>(`SELECT * FROM operations WHERE sandbox_id = ? AND state = ${OPERATION_STATE_PENDING} ORDER BY created_at, id`, sandboxId).map(operationFromRow);
      this.rows.putPending(sandboxId, ops);
    }
    if (dimension !== undefined) ops = ops.filter((o) => o.dimension === dimension);
    return this.holding ? ops.map((o) => this.holdOperation(o)) : ops;
  }

  operationsOfSandbox(sandboxId: string, limit: number): OperationRecord[] {
    return this.all<OperationRow>(
      "SELECT * FROM operations WHERE sandbox_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
      sandboxId,
      Math.max(0, Math.floor(limit)),
    ).map(operationFromRow);
  }

  listOperationsOfSandbox(sandboxId: string, pageSize: number, pageToken: string): Page<OperationRecord> {
    const size = clampPageSize(pageSize);
    const after = decodeOperationPageToken(pageToken);
    const rows =
      after === undefined
        ? this.all<OperationRow>("SELECT * FROM operations WHERE sandbox_id = ? ORDER BY created_at DESC, id DESC LIMIT ?", sandboxId, size + 1)
        : this.all<OperationRow>(
            "SELECT * FROM operations WHERE sandbox_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?",
            sandboxId,
            after.createdAtMs,
            after.createdAtMs,
            after.id,
            size + 1,
          );
    const items = rows.slice(0, size).map(operationFromRow);
    const last = items[items.length - 1];
    return { items, nextPageToken: rows.length > size && last ? operationPageToken(last.createdAt.getTime(), last.id) : "" };
  }

  dueOperations(now: Date, limit: number): OperationRecord[] {
    return this.all<OperationRow>(
      DUE_OPERATIONS,
      ms(now),
      Math.max(0, Math.floor(limit)),
    ).map(operationFromRow);
  }

  countPending(): number {
    return Number(this.stmt(COUNT_PENDING).pluck().get());
  }

  // --- providers ---
  // Their rows hold credentials. The connection runs secure_delete = FAST (sqlite-connection.ts),
  // which zeroes deleted content inside pages but leaves freed pages as they were; a provider
  // write runs with ON, so that the overflow pages of a replaced value are zeroed too. Every
  // statement that writes this table goes through `withSecureDelete`.

  private withSecureDelete<T>(write: () => T): T {
    this.db.pragma("secure_delete = ON");
    try {
      return write();
    } finally {
      this.db.pragma("secure_delete = FAST");
    }
  }

  providerByName(workspace: string, name: string): ProviderRecord | undefined {
    const r = this.one<ProviderRow>("SELECT * FROM providers WHERE workspace = ? AND name = ?", workspace, name);
    return r && providerFromRow(r);
  }

  insertProvider(p: ProviderRecord): void {
    this.withSecureDelete(() =>
      this.insertOnce(
        `INSERT INTO providers VALUES (${placeholders(7)})`,
        [p.id, p.workspace, p.name, p.type, p.resourceVersion, providerValuesJson(p.values), ms(p.createdAt)],
        `provider ${p.workspace}/${p.name} (id ${p.id})`,
      ),
    );
  }

  updateProvider(id: string, patch: { type?: string; values?: ProviderRecord["values"] }): ProviderRecord {
    const sets = ["resource_version = resource_version + 1"];
    const values: unknown[] = [];
    if (patch.type !== undefined) {
      sets.push("type = ?");
      values.push(patch.type);
    }
    if (patch.values !== undefined) {
      sets.push("value = ?");
      values.push(providerValuesJson(patch.values));
    }
    const r = this.withSecureDelete(() => this.one<ProviderRow>(`UPDATE providers SET ${sets.join(", ")} WHERE id = ? RETURNING *`, ...values, id));
    if (!r) throw new Error(`updateProvider: no provider with id ${id}`);
    return providerFromRow(r);
  }
}
