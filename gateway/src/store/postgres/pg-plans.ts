// Prepared statements outliving a schema change. Every statement of the store is prepared once
// per connection (pg-group.ts), and most read `SELECT *`; when another gateway's migration
// changes a table under a running one (a rolling upgrade of replicas adds a column), the server
// refuses to run a statement prepared before it ("cached plan must not change result type").
// That failure invalidates every connection's prepared statements: each connection drops them
// (DEALLOCATE ALL) the next time it is checked out, and the statement that met the failure runs
// again, so the change costs one retry rather than one failure per pooled connection.

import pg from "pg";
import { forgetShapes } from "./pg-group.js";

/**
 * The server's refusal to run a statement prepared before its result columns changed (by the
 * routine that raises it, which is not translated; the message is, with lc_messages).
 */
export const isStalePlan = (err: unknown): boolean =>
  err instanceof pg.DatabaseError &&
  err.code === "0A000" &&
  (err.routine === "RevalidateCachedQuery" || /cached plan must not change result type/.test(err.message));

export class PlanGenerations {
  private current = 0;
  /** The generation each connection's prepared statements belong to. */
  private readonly of = new WeakMap<pg.ClientBase, number>();

  /** After a stale plan: every connection's prepared statements are suspect. */
  invalidate(): void {
    this.current++;
  }

  /** Drops `client`'s prepared statements if they predate the last invalidation. */
  async refresh(client: pg.ClientBase): Promise<void> {
    const at = this.of.get(client);
    const current = this.current;
    if (at !== undefined && at < current) {
      await client.query("DEALLOCATE ALL");
      const connection = (client as unknown as { connection?: { parsedStatements?: Record<string, string> } }).connection;
      const parsed = connection?.parsedStatements;
      if (parsed) for (const name of Object.keys(parsed)) delete parsed[name];
      forgetShapes(connection);
    }
    this.of.set(client, current);
  }
}
