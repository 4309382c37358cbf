// The state a client shares with its operations: the RPC client, how to authenticate a call, and
// what it has learnt about the gateway (whether it offers the watch extension, whether it tracks
// operations at all).

import type { CallOptions, Client } from "@connectrpc/connect";
import type { ConfigRpcService } from "./rpc.js";
import type { RetryOptions } from "./retry.js";

/** Shared by every method of one client. Internal. */
export interface ClientContext {
  readonly rpc: Client<ConfigRpcService>;
  /** Headers (the bearer token) and the signal for one call. */
  callOptions(signal: AbortSignal | undefined, timeoutMs?: number): Promise<CallOptions>;
  readonly retry: RetryOptions;
  /** The workspace used when a call names none. */
  readonly workspace: string | undefined;
  /** Local wait bound when a call gives none. */
  readonly defaultWaitTimeoutMs: number;
  /** The longest single server-side wait requested; longer waits loop. */
  readonly serverWaitSliceMs: number;
  /** Backoff bounds for status polling (only used when the gateway offers nothing better). */
  readonly poll: { readonly minDelayMs: number; readonly maxDelayMs: number };
  /** Learnt on first use: does the gateway implement WatchConfigUpdateOperations? */
  watch: "unknown" | "supported" | "unsupported";
  /**
   * Learnt from the first answer that tells (commit.ts): does the gateway track operations, and
   * so replay a resent commit by its idempotency key? "untracked" is final.
   */
  operations: "unknown" | "tracked" | "untracked";
}
