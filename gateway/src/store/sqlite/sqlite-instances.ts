// The SQLite statements of sandbox instances: who created and deleted each instance, and which
// instance each supervisor credential is bound to. The same logical behaviour as
// ../postgres/pg-instances.ts, so the one behavioural suite holds for both.

import type BetterSqlite3 from "better-sqlite3";
import { StoreConflictError, type SandboxLifecycleRecord, type SupervisorBindingRecord } from "../store.js";
import { ms } from "./sqlite-rows.js";

interface LifecycleRow {
  sandbox_id: string;
  event: "created" | "deleted";
  workspace: string;
  name: string;
  principal: string;
  at: bigint;
}

interface BindingRow {
  credential: string;
  workspace: string;
  sandbox_name: string;
  sandbox_id: string;
  principal: string;
  bound_at: bigint;
}

const lifecycleFromRow = (r: LifecycleRow): SandboxLifecycleRecord => ({
  sandboxId: r.sandbox_id,
  event: r.event,
  workspace: r.workspace,
  name: r.name,
  principal: r.principal,
  at: new Date(Number(r.at)),
});

const bindingFromRow = (r: BindingRow): SupervisorBindingRecord => ({
  credential: r.credential,
  workspace: r.workspace,
  sandboxName: r.sandbox_name,
  sandboxId: r.sandbox_id,
  principal: r.principal,
  boundAt: new Date(Number(r.bound_at)),
});

/** Runs inside the caller's transaction; ON CONFLICT DO NOTHING keeps that transaction usable. */
export function recordSandboxEvent(db: BetterSqlite3.Database, r: SandboxLifecycleRecord): void {
  const inserted = db
    .prepare("INSERT INTO sandbox_lifecycle (sandbox_id, event, workspace, name, principal, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
    .run(r.sandboxId, r.event, r.workspace, r.name, r.principal, ms(r.at));
  if (inserted.changes === 0) throw new StoreConflictError(`sandbox ${r.sandboxId} already has a "${r.event}" record`);
}

export function sandboxEvents(db: BetterSqlite3.Database, sandboxId: string): SandboxLifecycleRecord[] {
  const rows = db.prepare("SELECT * FROM sandbox_lifecycle WHERE sandbox_id = ? ORDER BY event = 'deleted'").all(sandboxId) as LifecycleRow[];
  return rows.map(lifecycleFromRow);
}

export function supervisorBinding(db: BetterSqlite3.Database, credential: string): SupervisorBindingRecord | undefined {
  const row = db.prepare("SELECT * FROM supervisor_bindings WHERE credential = ?").get(credential) as BindingRow | undefined;
  return row && bindingFromRow(row);
}

/** Runs inside a transaction of the store, so the write and the read back are atomic. */
export function bindSupervisor(db: BetterSqlite3.Database, r: SupervisorBindingRecord, replace: boolean): SupervisorBindingRecord {
  const onConflict = replace
    ? `DO UPDATE SET workspace = excluded.workspace, sandbox_name = excluded.sandbox_name, sandbox_id = excluded.sandbox_id,
         principal = excluded.principal, bound_at = excluded.bound_at`
    : "DO NOTHING";
  db.prepare(
    `INSERT INTO supervisor_bindings (credential, workspace, sandbox_name, sandbox_id, principal, bound_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (credential) ${onConflict}`,
  ).run(r.credential, r.workspace, r.sandboxName, r.sandboxId, r.principal, ms(r.boundAt));
  return supervisorBinding(db, r.credential)!;
}
