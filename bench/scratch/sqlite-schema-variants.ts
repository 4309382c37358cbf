// Scratch: the SQL of a waited update's two transactions (16 updates per COMMIT, as the probe's
// group commit) against variants of the SQLite schema: WITHOUT ROWID tables, a partial index of
// pending operations by next attempt, other page sizes. Prints µs per update of each part.
//   node --import tsx bench/scratch/sqlite-schema-variants.ts
import * as fs from "node:fs";
import * as crypto from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import D from "better-sqlite3";
import { sqliteMigrations } from "../../gateway/src/store/sqlite/migrations.js";
const sqls = sqliteMigrations.map((m) => m.sql);
const dir = fs.mkdtempSync(join(tmpdir(), "sqlite-variants-"));
function schema(variant: string): string {
  let s = sqls.join("\n");
  if (variant.includes("wr")) {
    s = s.replace(/(CREATE TABLE (policy_revisions|idempotency|sandbox_enforcement|settings|session_owners) \([\s\S]*?\)) STRICT;/g, "$1 STRICT, WITHOUT ROWID;");
  }
  if (variant.includes("opwr")) s = s.replace(/(CREATE TABLE operations \([\s\S]*?\)) STRICT;/, "$1 STRICT, WITHOUT ROWID;");
  if (variant.includes("partial")) s = s.replace("CREATE INDEX operations_state_next_attempt ON operations (state, next_attempt_at);", "CREATE INDEX operations_state_next_attempt ON operations (next_attempt_at) WHERE state = 1;");
  return s;
}
function run(variant: string, N = 6000): void {
  const f = join(dir, `${variant}.db`); for (const x of ["", "-wal", "-shm"]) fs.rmSync(f + x, { force: true });
  const db = new D(f); const ps = /ps(\d+)/.exec(variant); if (ps) db.pragma("page_size = " + ps[1]); db.pragma("journal_mode = WAL"); db.pragma("synchronous = NORMAL");
  db.exec(schema(variant));
  const sb = Array.from({ length: 64 }, () => crypto.randomUUID());
  const insS = db.prepare("INSERT INTO sandboxes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const id of sb) insS.run(id, "", "n" + id, "{}", "{}", Buffer.alloc(200), 2, 1, 1, "h", 0, 0, "[]", Date.now(), null);
  const ver = new Map(sb.map((s) => [s, 1]));
  const insP = db.prepare("INSERT INTO policy_revisions VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
  const insO = db.prepare("INSERT INTO operations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
  const insI = db.prepare("INSERT INTO idempotency VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING");
  const updS = db.prepare("UPDATE sandboxes SET policy_version = ?, policy_hash = ?, resource_version = resource_version + 1 WHERE id = ?");
  const updO = db.prepare("UPDATE operations SET state = 3, outcome = 1, completed_at = ?, updated_at = ?, row_version = row_version + 1 WHERE id = ? AND row_version = ?");
  const updP = db.prepare("UPDATE policy_revisions SET status = ?, load_error = ?, loaded_at = ? WHERE sandbox_id = ? AND version = ?");
  const upE = db.prepare("INSERT INTO sandbox_enforcement (sandbox_id, state, policy_version, detail, observed_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (sandbox_id) DO UPDATE SET state = excluded.state, policy_version = excluded.policy_version, detail = excluded.detail, observed_at = excluded.observed_at");
  const pend = db.prepare("SELECT * FROM operations WHERE sandbox_id = ? AND state = 1 ORDER BY created_at, id");
  const begin = db.prepare("BEGIN IMMEDIATE"), commit = db.prepare("COMMIT");
  let tIns = 0, tRes = 0, tCommit = 0, k = 0;
  const B = 16; const now = () => Number(process.hrtime.bigint()) / 1e3;
  for (let b = 0; b < N / B; b++) {
    const ops: [string, number, string][] = [];
    let t = now(); begin.run();
    for (let i = 0; i < B; i++) {
      const s = sb[k++ % 64]!; const v = ver.get(s)! + 1; ver.set(s, v); const id = crypto.randomUUID(); const ts = Date.now();
      insP.run(s, v, Buffer.alloc(147, k), "h" + k, 1, "", ts, null, "{}");
      insO.run(id, s, "", "policy", 1, v, Buffer.alloc(16), 1, 0, "", ts, ts, null, 0, ts, 1);
      insI.run(s, crypto.randomUUID(), "f".repeat(64), "policy", id, Buffer.alloc(68), ts);
      updS.run(v, "h" + k, s);
      ops.push([s, v, id]);
    }
    let t2 = now(); commit.run(); let t3 = now(); tIns += t2 - t; tCommit += t3 - t2;
    t = now(); begin.run();
    for (const [s, v, id] of ops) { pend.all(s); updO.run(Date.now(), Date.now(), id, 1); updP.run(2, "", Date.now(), s, v); upE.run(s, 1, v, Buffer.alloc(60), Date.now()); }
    t2 = now(); commit.run(); t3 = now(); tRes += t2 - t; tCommit += t3 - t2;
  }
  console.log(variant.padEnd(16), "per update µs: inserts", (tIns / N).toFixed(1), "results", (tRes / N).toFixed(1), "commits", (tCommit / N).toFixed(1), "total", ((tIns + tRes + tCommit) / N).toFixed(1));
  db.close();
}
for (let r = 0; r < 2; r++) for (const v of ["base", "partial", "wr", "wr,partial", "wr,opwr,partial", "ps2048", "ps8192"]) run(v);
fs.rmSync(dir, { recursive: true, force: true });
