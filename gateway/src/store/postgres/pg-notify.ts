// LISTEN/NOTIFY for the PostgreSQL store. Notifications go out on the pool (one statement per
// batch); each subscription listens on a dedicated connection of its own, outside the pool, and
// reconnects with backoff when that connection is lost, then reports a gap: notifications sent
// while it was away are gone, so the listener must re-read what it cares about.
//
// Channels are per schema, so stores isolated in schemas of one database (tests) never hear each
// other. Messages are small identifiers, never data of record and never secrets.

import pg from "pg";
import type { StoreListenHandlers, StoreSubscription } from "../store.js";
import type { Run } from "./pg-queries.js";

/** PostgreSQL caps channel names at 63 bytes; lowercase so LISTEN and pg_notify agree. */
export function channelName(channel: string, schema: string | undefined): string {
  if (!/^[A-Za-z0-9_]{1,30}$/.test(channel)) throw new Error(`invalid notification channel ${JSON.stringify(channel)}`);
  return `osc_${channel}_${schema ?? "public"}`.toLowerCase().slice(0, 63);
}

export async function notifyAll(run: Run, channel: string, messages: readonly string[]): Promise<void> {
  if (messages.length === 0) return;
  await run("SELECT pg_notify($1, m) FROM unnest($2::text[]) AS m", [channel, [...messages]]);
}

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/** Listens on `channel` over its own connection to `url`; resolves once the first LISTEN holds. */
export async function listenOn(url: string, channel: string, handlers: StoreListenHandlers): Promise<StoreSubscription> {
  let closed = false;
  let client: pg.Client | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let delay = RECONNECT_MIN_MS;

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    // Lost connection: drop it and come back; without a listener an 'error' would crash the process.
    const lost = () => {
      if (client !== c) return;
      client = undefined;
      c.end().catch(() => undefined);
      schedule();
    };
    c.on("error", lost);
    c.on("end", lost);
    c.on("notification", (n) => {
      if (n.channel === channel && n.payload !== undefined) handlers.onMessage(n.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN "${channel}"`);
    } catch (err) {
      c.removeAllListeners("end");
      c.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
  };

  const schedule = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(async () => {
      retryTimer = undefined;
      try {
        await connect();
        delay = RECONNECT_MIN_MS;
        if (!closed) handlers.onGap();
      } catch {
        delay = Math.min(delay * 2, RECONNECT_MAX_MS);
        schedule();
      }
    }, delay);
  };

  await connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
