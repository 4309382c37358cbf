// The PostgreSQL statements of sandbox instances: who created and deleted each instance, and which
// instance each supervisor credential is bound to. The same logical behaviour as
// ../sqlite/sqlite-instances.ts, so the one behavioural suite holds for both.

import { StoreUnavailableError, type SandboxLifecycleRecord, type SupervisorBindingRecord } from "../store.js";
import type { Run } from "./pg-queries.js";

interface LifecycleRow {
  sandbox_id: string;
  event: "created" | "deleted";
  workspace: string;
  name: string;
  principal: string;
  at: Date;
}

interface BindingRow {
  credential: string;
  workspace: string;
  sandbox_name: string;
  sandbox_id: string;
  principal: string;
  bound_at: Date;
}

const lifecycleFromRow = (r: LifecycleRow): SandboxLifecycleRecord => ({
  sandboxId: r.sandbox_id,
  event: r.event,
  workspace: r.workspace,
  name: r.name,
  principal: r.principal,
  at: r.at,
});

const bindingFromRow = (r: BindingRow): SupervisorBindingRecord => ({
  credential: r.credential,
  workspace: r.workspace,
  sandboxName: r.sandbox_name,
  sandboxId: r.sandbox_id,
  principal: r.principal,
  boundAt: r.bound_at,
});

/** The INSERT of a lifecycle record; the caller adds ON CONFLICT DO NOTHING and checks the count. */
export const INSERT_SANDBOX_EVENT = "INSERT INTO sandbox_lifecycle (sandbox_id, event, workspace, name, principal, at) VALUES ($1, $2, $3, $4, $5, $6)";

export const sandboxEventValues = (r: SandboxLifecycleRecord): unknown[] => [r.sandboxId, r.event, r.workspace, r.name, r.principal, r.at];

export async function sandboxEvents(run: Run, sandboxId: string): Promise<SandboxLifecycleRecord[]> {
  const { rows } = await run<LifecycleRow>("SELECT * FROM sandbox_lifecycle WHERE sandbox_id = $1 ORDER BY event = 'deleted'", [sandboxId]);
  return rows.map(lifecycleFromRow);
}

export async function supervisorBinding(run: Run, credential: string): Promise<SupervisorBindingRecord | undefined> {
  const { rows } = await run<BindingRow>("SELECT * FROM supervisor_bindings WHERE credential = $1", [credential]);
  return rows[0] && bindingFromRow(rows[0]);
}

export async function bindSupervisor(run: Run, r: SupervisorBindingRecord, replace: boolean): Promise<SupervisorBindingRecord> {
  const onConflict = replace
    ? `DO UPDATE SET workspace = excluded.workspace, sandbox_name = excluded.sandbox_name, sandbox_id = excluded.sandbox_id,
         principal = excluded.principal, bound_at = excluded.bound_at`
    : "DO NOTHING";
  const { rows } = await run<BindingRow>(
    `INSERT INTO supervisor_bindings (credential, workspace, sandbox_name, sandbox_id, principal, bound_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (credential) ${onConflict} RETURNING *`,
    [r.credential, r.workspace, r.sandboxName, r.sandboxId, r.principal, r.boundAt],
  );
  if (rows[0]) return bindingFromRow(rows[0]);
  // Bound already (perhaps by a session racing this one, committed after this statement began):
  // a statement of its own sees it. Bindings are never deleted.
  const existing = await supervisorBinding(run, r.credential);
  if (!existing) throw new StoreUnavailableError(`PostgreSQL: the binding of ${r.credential} is neither new nor stored`);
  return existing;
}
