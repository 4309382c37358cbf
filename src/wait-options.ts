// The options of a wait, as types, below both the wait (await.ts) and the updates that can wait
// from the start (update.ts), which is the module the wait builds its replayed request with.

import type { OperationStatus } from "./completion.js";

/** Something that happened while waiting, for progress displays. */
export type ProgressEvent =
  | {
      /** The operation's observed state changed. */
      readonly type: "state";
      /** The newly observed status. */
      readonly status: OperationStatus;
    }
  | {
      /** A transient failure (gateway unavailable, broken connection) is being retried. */
      readonly type: "retry";
      /** Which retry this is, counting from 1. */
      readonly attempt: number;
      /** The failure being retried. */
      readonly error: unknown;
    };

/** Options of `awaitCompletion` (and of `wait` on an update). */
export interface WaitOptions {
  /** Local bound on the whole wait. Default 60 s; `Infinity` waits until the outcome or an abort. */
  readonly timeoutMs?: number;
  /** Ends the wait (not the operation) with CompletionTimeoutError, reason `aborted`. */
  readonly signal?: AbortSignal;
  /** Called on each observed state change and on each transient failure that is retried. */
  readonly onProgress?: (event: ProgressEvent) => void;
}
