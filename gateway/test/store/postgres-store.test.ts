// Runs the store suite on PostgreSQL. The file creates its own database (osc_test_<random>) on
// the server at OSC_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// gives every test a fresh schema in it, and drops the database afterwards; no other database is
// touched. When the server is unreachable the file is skipped with a notice, unless
// OSC_REQUIRE_POSTGRES=1 makes that a failure (set it in CI).

import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/open-store.js";
import { openPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { StoreConflictError, StoreUnavailableError, type Store } from "../../src/store/store.js";
import { APPLIED, operation, sandbox } from "./store-fixtures.js";
import { defineStoreSuite, insertSandboxes } from "./store-suite.js";
import { rollout } from "./store-suite-rollouts.js";

const adminUrl = process.env.OSC_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `osc_test_${randomBytes(6).toString("hex")}`;
const testUrl = (() => {
  const u = new URL(adminUrl);
  u.pathname = `/${database}`;
  return u.toString();
})();

async function withAdmin<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}

const reachable = await withAdmin(adminUrl, async () => true).catch(() => false);
if (!reachable && process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error(`PostgreSQL unreachable at ${adminUrl}`);

let schemas = 0;
const freshSchema = () => `s_${++schemas}`;

if (!reachable) {
  describe.skip(`PostgreSQL store (no server at ${adminUrl}; set OSC_TEST_POSTGRES_URL)`, () => {
    it("runs the store suite", () => undefined);
  });
} else {
  beforeAll(async () => {
    await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${database}`));
  });
  afterAll(async () => {
    await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  });

  defineStoreSuite("PostgreSQL", async () => {
    const schema = freshSchema();
    const opened: Store[] = [await openPostgresStore(testUrl, { schema, poolSize: 8 })];
    return {
      store: opened[0]!,
      reopen: async () => {
        const again = await openPostgresStore(testUrl, { schema, poolSize: 8 });
        opened.push(again);
        return again;
      },
      cleanup: async () => {
        for (const s of opened) await s.close();
      },
    };
  });

  describe("PostgreSQL store specifics", () => {
    it("openStore opens postgres:// and postgresql:// URLs and each migration is recorded exactly once", async () => {
      const first = await openStore(testUrl);
      expect(first.kind).toBe("postgres");
      const s = sandbox();
      await insertSandboxes(first, s);
      await first.close();
      const second = await openStore(testUrl.replace(/^postgres:/, "postgresql:"));
      expect(await second.sandboxById(s.id)).toEqual(s);
      await second.close();
      const versions = await withAdmin(testUrl, (c) => c.query<{ version: number }>("SELECT version FROM public.schema_migrations"));
      expect(versions.rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });

    it("gateways starting together on an empty schema migrate it once", async () => {
      const schema = freshSchema();
      const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore(testUrl, { schema, poolSize: 2 })));
      await Promise.all(stores.map((s) => s.close()));
      const versions = await withAdmin(testUrl, (c) => c.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations`));
      expect(versions.rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });

    it("schemas isolate stores in one database", async () => {
      const a = await openPostgresStore(testUrl, { schema: freshSchema() });
      const b = await openPostgresStore(testUrl, { schema: freshSchema() });
      const s = sandbox();
      await insertSandboxes(a, s);
      expect(await b.sandboxById(s.id)).toBeUndefined();
      await Promise.all([a.close(), b.close()]);
    });

    it("without the checks tests run with (as deployed), a transaction's fn runs with no async context: a store read from it runs outside the transaction", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema(), checkTransactions: false });
      const s = sandbox();
      const seen = await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        // On its own pooled connection: the transaction's write is not committed yet.
        return { outside: await store.sandboxById(s.id), inside: await tx.sandboxById(s.id) };
      });
      expect(seen.outside).toBeUndefined();
      expect(seen.inside).toEqual(s);
      expect(await store.sandboxById(s.id)).toEqual(s);
      await store.close();
    });

    it("readers of the global policy's latest revision share its lock, and a transaction that may insert one waits for them", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const hasLock = new Promise<void>((r) => (locked = r));
      const reading = store.transaction(async (tx) => {
        await tx.latestPolicyRevision("", "shared");
        locked();
        await held;
      });
      // Once the reader holds its share of the lock, however long a loaded machine took.
      await Promise.race([hasLock, reading]);
      // Another reader (a sandbox's settings commit measuring its bootstrap) is not held up.
      await store.transaction(async (tx) => tx.latestPolicyRevision("", "shared"));
      let inserterHasLock = false;
      const inserting = store.transaction(async (tx) => {
        await tx.latestPolicyRevision("");
        inserterHasLock = true;
      });
      await sleep(200);
      expect(inserterHasLock).toBe(false);
      release();
      await Promise.all([reading, inserting]);
      expect(inserterHasLock).toBe(true);
      await store.close();
    });

    it("a transaction in which a statement failed is never reported as committed, even if fn caught the failure", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const s = sandbox();
      const attempt = store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        // Violates the dimension CHECK constraint: PostgreSQL aborts the whole transaction.
        await tx.insertOperation(operation(s.id, { dimension: "bogus" as "policy" })).catch(() => undefined);
      });
      await expect(attempt).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await store.sandboxById(s.id)).toBeUndefined();
      await store.close();
    });

    it("an operation's queued compare-and-set that another writer overtook re-runs the transaction, which then sees the row anew", async () => {
      const schema = freshSchema();
      const store = await openPostgresStore(testUrl, { schema });
      const s = sandbox();
      await insertSandboxes(store, s);
      const op = operation(s.id);
      await store.transaction((tx) => tx.insertOperation(op));
      let attempts = 0;
      const result = await store.transaction(async (tx) => {
        attempts++;
        await tx.sandboxById(s.id);
        const [pending] = await tx.pendingOperations(s.id);
        // A writer that does not lock the sandbox (as the reconciler's claim) changes the row
        // after this transaction read it and before the CAS reaches the server.
        if (attempts === 1) {
          await withAdmin(testUrl, (c) => c.query(`UPDATE ${schema}.operations SET row_version = row_version + 1, attempt_count = 7 WHERE id = $1`, [op.id]));
        }
        return tx.updateOperation(pending!.id, pending!.rowVersion, { state: APPLIED, completedAt: new Date() });
      });
      expect(attempts).toBe(2);
      expect(result).toMatchObject({ state: APPLIED, attemptCount: 7, rowVersion: 3 });
      expect(await store.operation(op.id)).toEqual(result);
      await store.close();
    });

    it("statements issued together outside a transaction share a round trip, and one that fails leaves the others' answers and writes as they would be alone", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b] = [sandbox(), sandbox()];
      await insertSandboxes(store, a, b);
      const taken = rollout();
      await store.insertRollout(taken);
      const fresh = rollout();
      // One turn of the event loop: pipelined on one connection, each its own implicit transaction.
      // A lease without its end breaks the table's CHECK: the server refuses that statement alone.
      const broken = rollout({ lease: { holder: "driver", principal: "alice", until: undefined as unknown as Date } });
      const [readA, duplicate, refused, inserted, readB] = await Promise.allSettled([
        store.sandboxById(a.id),
        store.insertRollout({ ...taken, changeSummary: "a second one" }),
        store.insertRollout(broken),
        store.insertRollout(fresh),
        store.sandboxById(b.id),
      ]);
      expect(readA).toEqual({ status: "fulfilled", value: a });
      expect(duplicate.status).toBe("rejected");
      expect((duplicate as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
      expect(refused.status).toBe("rejected");
      expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      expect(String((refused as PromiseRejectedResult).reason)).toMatch(/check constraint/);
      expect(await store.rollout(broken.workspace, broken.id, false)).toBeUndefined();
      expect(inserted).toEqual({ status: "fulfilled", value: undefined });
      expect(readB).toEqual({ status: "fulfilled", value: b });
      expect((await store.rollout(fresh.workspace, fresh.id, true))?.changeSummary).toBe(fresh.changeSummary);
      expect((await store.rollout(taken.workspace, taken.id, true))?.changeSummary).toBe(taken.changeSummary);
      await store.close();
    });

    it("a queued write that fails is what its transaction fails of, not the aborted statements behind it, and nothing of the transaction is kept", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const s = sandbox();
      await insertSandboxes(store, s);
      const op = operation(s.id);
      await store.transaction((tx) => tx.insertOperation(op));
      const attempt = store.transaction(async (tx) => {
        await tx.sandboxById(s.id); // held locked: the insert below is queued, not answered
        await tx.updateSandbox(s.id, { annotations: { touched: "yes" } });
        await tx.insertOperation({ ...op, attemptCount: 9 }); // the same id
        // Goes out behind the queued insert, in its round trip, and finds the transaction aborted.
        await tx.operation(op.id);
      });
      await expect(attempt).rejects.toBeInstanceOf(StoreConflictError);
      await expect(attempt).rejects.toThrow(/duplicate key/);
      expect(await store.sandboxById(s.id)).toEqual(s);
      expect((await store.operation(op.id))?.attemptCount).toBe(op.attemptCount);
      await store.close();
    });

    it("a column added under a running store (another replica's migration) costs no failed call: statements prepared before it are dropped and run again", async () => {
      const schema = freshSchema();
      const store = await openPostgresStore(testUrl, { schema, poolSize: 2 });
      const s = sandbox();
      await insertSandboxes(store, s);
      // Prepared on both connections: a read outside a transaction and a transaction's lock.
      await Promise.all([store.sandboxById(s.id), store.transaction((tx) => tx.sandboxById(s.id))]);
      await withAdmin(testUrl, (c) => c.query(`ALTER TABLE ${schema}.sandboxes ADD COLUMN added_later integer NOT NULL DEFAULT 7`));
      expect(await store.sandboxById(s.id)).toEqual(s);
      const updated = await store.transaction(async (tx) => {
        await tx.sandboxById(s.id);
        return tx.updateSandbox(s.id, { annotations: { after: "migration" } });
      });
      expect(updated.annotations).toEqual({ after: "migration" });
      expect((await Promise.all([store.sandboxById(s.id), store.sandboxById(s.id)])).map((x) => x?.annotations)).toEqual([{ after: "migration" }, { after: "migration" }]);
      await store.close();
    });

    it("a connection lost during a transaction is a StoreUnavailableError, and the store carries on", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema(), poolSize: 1 });
      const s = sandbox();
      const attempt = store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await withAdmin(testUrl, (c) =>
          c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'", [database]),
        );
        await sleep(100); // the client reports the dead connection while no query runs
        await tx.sandboxById(s.id);
      });
      await expect(attempt).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await store.sandboxById(s.id)).toBeUndefined();
      await store.close();
    });

    it("an unreachable server is a StoreUnavailableError", async () => {
      await expect(openPostgresStore("postgres://postgres@127.0.0.1:1/nowhere")).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it("a schema name that is not a plain identifier is refused", async () => {
      await expect(openPostgresStore(testUrl, { schema: "x; DROP TABLE y" })).rejects.toThrow(/invalid PostgreSQL schema name/);
    });
  });

  describe("PostgreSQL group commit", () => {
    const touch = (store: Store, id: string, note: string) =>
      store.transaction(async (tx) => {
        await tx.sandboxById(id);
        return tx.updateSandbox(id, { annotations: { note } });
      });
    const noteOf = async (store: Store, id: string) => (await store.sandboxById(id))?.annotations.note;

    it("transactions started in one turn share one COMMIT, none is answered before it, and each sees the writes of those before it", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b, c] = [sandbox(), sandbox(), sandbox()];
      await insertSandboxes(store, a, b, c);
      const before = store.writeStats();
      const seenWhenFirstAnswered: unknown[] = [];
      const first = touch(store, a.id, "one").then(async (r) => {
        // Answered only after the group's COMMIT: the last transaction's write is durable too.
        seenWhenFirstAnswered.push(await noteOf(store, c.id));
        return r;
      });
      const results = await Promise.all([
        first,
        touch(store, b.id, "two"),
        store.transaction(async (tx) => (await tx.sandboxById(a.id))?.annotations.note), // after the first, in its transaction
        touch(store, c.id, "three"),
      ]);
      expect(results[2]).toBe("one");
      expect(seenWhenFirstAnswered).toEqual(["three"]);
      const after = store.writeStats();
      expect(after.commits - before.commits).toBe(1);
      expect(after.transactions - before.transactions).toBe(4);
      expect(await Promise.all([a, b, c].map((s) => noteOf(store, s.id)))).toEqual(["one", "two", "three"]);
      await store.close();
    });

    it("a transaction of a group whose fn throws, or whose statement the server refuses, is rolled back alone and the others commit", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b, c, d] = [sandbox(), sandbox(), sandbox(), sandbox()];
      await insertSandboxes(store, a, b, c, d);
      const settled = await Promise.allSettled([
        touch(store, a.id, "kept"),
        store.transaction(async (tx) => {
          await tx.sandboxById(b.id);
          await tx.updateSandbox(b.id, { annotations: { note: "undone" } });
          await tx.sandboxById(b.id); // the update reaches the server before fn fails
          throw new Error("the caller's own failure");
        }),
        store.transaction(async (tx) => {
          await tx.sandboxById(c.id);
          await tx.updateSandbox(c.id, { annotations: { note: "undone" } });
          // Violates the dimension CHECK constraint; fn catches it, the transaction is still lost.
          await tx.insertOperation(operation(c.id, { dimension: "bogus" as "policy" })).catch(() => undefined);
        }),
        touch(store, d.id, "kept too"),
      ]);
      expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
      expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/the caller's own failure/);
      expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      expect(await Promise.all([a, b, c, d].map((s) => noteOf(store, s.id)))).toEqual(["kept", undefined, undefined, "kept too"]);
      await store.close();
    });

    it("a queued write refused when it reaches the server, in front of the next transaction's statements or with the COMMIT, fails only its own transaction", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b, c] = [sandbox(), sandbox(), sandbox()];
      await insertSandboxes(store, a, b, c);
      const [opA, opC] = [operation(a.id), operation(c.id)];
      await store.transaction((tx) => tx.insertOperation(opA));
      await store.transaction((tx) => tx.insertOperation(opC));
      // Under the sandbox's lock the insert is queued; its duplicate id fails once it is sent.
      const duplicate = (s: typeof a, op: typeof opA) =>
        store.transaction(async (tx) => {
          await tx.sandboxById(s.id);
          await tx.updateSandbox(s.id, { annotations: { note: "undone" } });
          await tx.insertOperation({ ...op, attemptCount: 9 });
        });
      const before = store.writeStats();
      const settled = await Promise.allSettled([duplicate(a, opA), touch(store, b.id, "kept"), duplicate(c, opC)]);
      expect(settled.map((s) => s.status)).toEqual(["rejected", "fulfilled", "rejected"]);
      for (const i of [0, 2]) {
        expect((settled[i] as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
        expect(String((settled[i] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
      }
      expect(store.writeStats().commits - before.commits).toBe(1);
      expect(await Promise.all([a, b, c].map((s) => noteOf(store, s.id)))).toEqual([undefined, "kept", undefined]);
      expect((await store.operation(opA.id))?.attemptCount).toBe(opA.attemptCount);
      await store.close();
    });

    it("statements a transaction issues side by side, behind a queued write of the one before it that fails, are answered as if that write had never been", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b, c] = [sandbox(), sandbox(), sandbox()];
      await insertSandboxes(store, a, b, c);
      const op = operation(a.id);
      await store.transaction((tx) => tx.insertOperation(op));
      const settled = await Promise.allSettled([
        store.transaction(async (tx) => {
          await tx.sandboxById(a.id);
          await tx.insertOperation({ ...op, attemptCount: 9 }); // queued; a duplicate once sent
        }),
        store.transaction(async (tx) => {
          const [sb] = await Promise.all([tx.sandboxById(b.id), tx.sandboxById(c.id)]);
          return tx.updateSandbox(sb!.id, { annotations: { note: "kept" } });
        }),
      ]);
      expect(settled[0].status).toBe("rejected");
      expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(StoreConflictError);
      expect(settled[1].status).toBe("fulfilled");
      expect(await noteOf(store, b.id)).toBe("kept");
      await store.close();
    });

    it("a transaction that waits for one started after it in the same turn still finishes: the jobs behind a slow one go to another group", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema() });
      const [a, b] = [sandbox(), sandbox()];
      await insertSandboxes(store, a, b);
      let second: Promise<unknown> = Promise.resolve();
      const first = store.transaction(async (tx) => {
        await tx.sandboxById(a.id);
        const seen = await second;
        return tx.updateSandbox(a.id, { annotations: { note: String(seen) } });
      });
      second = touch(store, b.id, "second").then((sb) => sb.annotations.note);
      const outcome = await Promise.race([first.then((sb) => sb.annotations.note), sleep(10_000).then(() => "still waiting")]);
      expect(outcome).toBe("second");
      expect(await noteOf(store, b.id)).toBe("second");
      await store.close();
    });

    it("a transaction after the first of a group that finds a lock held elsewhere stops waiting, so the others commit, and runs again first in a group of its own once the lock is free", async () => {
      const schema = freshSchema();
      const store = await openPostgresStore(testUrl, { schema });
      const [a, b] = [sandbox(), sandbox()];
      await insertSandboxes(store, a, b);
      const holder = new pg.Client({ connectionString: testUrl });
      await holder.connect();
      try {
        await holder.query("BEGIN");
        await holder.query(`SELECT 1 FROM ${schema}.sandboxes WHERE id = $1 FOR UPDATE`, [b.id]);
        let runsOfSecond = 0;
        const first = touch(store, a.id, "first");
        const second = store.transaction(async (tx) => {
          runsOfSecond++;
          await tx.sandboxById(b.id);
          return tx.updateSandbox(b.id, { annotations: { note: "second" } });
        });
        // The first commits while b is still locked elsewhere: its group did not wait for b.
        const firstOutcome = await Promise.race([first.then(() => "committed"), sleep(10_000).then(() => "still waiting")]);
        expect(firstOutcome).toBe("committed");
        expect(await noteOf(store, b.id)).toBeUndefined();
        await holder.query("COMMIT");
        expect((await second).annotations).toEqual({ note: "second" });
        expect(runsOfSecond).toBeGreaterThanOrEqual(2);
      } finally {
        await holder.end();
      }
      await store.close();
    });

    it("a connection lost while a group runs fails each of its transactions not yet answered, keeps none of their writes, and the store carries on", async () => {
      const store = await openPostgresStore(testUrl, { schema: freshSchema(), poolSize: 1 });
      const [x, y] = [sandbox(), sandbox()];
      const settled = await Promise.allSettled([
        store.transaction((tx) => tx.insertSandbox(x)),
        store.transaction(async (tx) => {
          await tx.insertSandbox(y);
          await tx.sandboxById(y.id);
          await withAdmin(testUrl, (c) =>
            c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction'", [database]),
          );
          await sleep(100); // the client reports the dead connection while no query runs
          await tx.sandboxById(x.id);
        }),
      ]);
      expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
      for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      expect(await store.sandboxById(x.id)).toBeUndefined();
      expect(await store.sandboxById(y.id)).toBeUndefined();
      await insertSandboxes(store, x);
      expect(await store.sandboxById(x.id)).toEqual(x);
      await store.close();
    });
  });
}
