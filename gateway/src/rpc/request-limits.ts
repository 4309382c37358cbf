// Per-request limits enforced at the RPC edge, before a handler reads or writes the store: the
// size of each request message, how many server-side waits one caller may hold open at once
// (both RESOURCE_EXHAUSTED), and values the gateway refuses (INVALID_ARGUMENT naming the field:
// text the store cannot hold (NUL) or that is not UTF-8, a Duration or Timestamp out of range). A
// call over a limit changes nothing. What decoding itself cannot be trusted with (bytes that are
// not UTF-8, nesting) is refused before decoding (request-body-guard.ts).

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ConfigUpdateWaitMode, type UpdateConfigRequest } from "openshell-config/raw";
import { principalKey } from "../auth/interceptor.js";
import { findInvalidValue } from "./nul-text.js";
import { scanMessage } from "./message-scan.js";
import { encodeMessage } from "../model/binary-encoder.js";

export interface RequestLimits {
  /** Largest request message, in bytes of its binary encoding. */
  readonly maxMessageBytes: number;
  /** Concurrent waits (waited UpdateConfig, WatchConfigUpdateOperations, WatchRollouts) per principal. */
  readonly maxWaitersPerCaller: number;
}

/**
 * 4 MiB, gRPC's customary default. The HTTP layer reads up to 16 MiB so that a message between
 * the two gets this limit's clearer error instead of a cut stream.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Enough for a busy deployment tool waiting on a whole fleet; a runaway loop hits it quickly. */
export const DEFAULT_MAX_WAITERS_PER_CALLER = 1_000;
/** The HTTP layer's own read limit (server.ts); a larger message limit could never be reached. */
export const MAX_MESSAGE_BYTES_CEILING = 16 * 1024 * 1024;

export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  maxWaitersPerCaller: DEFAULT_MAX_WAITERS_PER_CALLER,
};

function tooLarge(size: number, limit: number): ConnectError {
  return new ConnectError(`request message is ${size} bytes; the gateway accepts at most ${limit} bytes`, Code.ResourceExhausted);
}

/** Whether a call holds a server-side wait for as long as it runs. */
function isWait(method: string, message: unknown): boolean {
  if (method === "WatchConfigUpdateOperations" || method === "WatchRollouts") return true;
  if (method !== "UpdateConfig") return false;
  const req = message as UpdateConfigRequest;
  // Global updates cannot wait (validation rejects them); counting them would only mislead.
  return req.waitMode === ConfigUpdateWaitMode.WAIT_FOR_COMPLETION && !req.global;
}

/** Counts open waits per principal name. */
export function createWaiterSlots(max: number) {
  const open = new Map<string, number>();
  return {
    /** Takes a slot for `who`, or throws RESOURCE_EXHAUSTED; the returned function gives it back once. */
    acquire(who: string): () => void {
      const n = open.get(who) ?? 0;
      if (n >= max) {
        throw new ConnectError(
          `too many concurrent waits for this caller (limit ${max}); wait for some to finish or commit without waiting`,
          Code.ResourceExhausted,
        );
      }
      open.set(who, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (open.get(who) ?? 1) - 1;
        if (left === 0) open.delete(who);
        else open.set(who, left);
      };
    },
    /** Open waits of `who` (tests and metrics). */
    count: (who: string) => open.get(who) ?? 0,
  };
}

/**
 * A view of `source` that runs `check` on each item and `onEnd` once, however iteration ends.
 * Hand-written rather than a generator: `return()` must reach `source` at once even while a
 * `next()` is pending (the supervisor session ends without waiting for the peer's next message).
 */
function observed<T>(source: AsyncIterable<T>, check: (item: T) => void, onEnd: () => void = () => undefined): AsyncIterable<T> {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const r = await it.next();
            if (r.done) end();
            else check(r.value);
            return r;
          } catch (err) {
            end();
            throw err;
          }
        },
        async return(value?: unknown) {
          end();
          return (await it.return?.(value)) ?? { done: true as const, value: undefined };
        },
        async throw(err?: unknown) {
          end();
          if (it.throw) return it.throw(err);
          throw err;
        },
      };
    },
  };
}

/** Runs after authentication (the principal is known) and before every handler. */
export function createRequestLimitsInterceptor(limits: RequestLimits = DEFAULT_REQUEST_LIMITS): Interceptor {
  const slots = createWaiterSlots(limits.maxWaitersPerCaller);
  return (next) => async (req) => {
    const checkSize = (message: unknown) => {
      // One walk finds invalid values and bounds the size; only a message the bound cannot clear is encoded to measure it.
      const scan = scanMessage(req.method.input, message as object);
      if (scan.sizeBound > limits.maxMessageBytes) {
        const size = encodeMessage(req.method.input, message as never).byteLength;
        if (size > limits.maxMessageBytes) throw tooLarge(size, limits.maxMessageBytes);
      }
      const invalid = scan.invalid ? findInvalidValue(message) : undefined;
      if (invalid) throw new ConnectError(`${invalid.path} ${invalid.reason}`, Code.InvalidArgument);
    };
    const principal = req.contextValues.get(principalKey);
    let release: (() => void) | undefined;
    if (req.stream) {
      // Streams: every incoming message is checked as it arrives; a watch holds a wait slot.
      if (principal && isWait(req.method.name, undefined)) release = slots.acquire(principal.name);
      req = { ...req, message: observed(req.message, checkSize) };
    } else {
      checkSize(req.message);
      if (principal && isWait(req.method.name, req.message)) release = slots.acquire(principal.name);
    }
    if (!release) return next(req);
    const done = release;
    let res;
    try {
      res = await next(req);
    } catch (err) {
      done();
      throw err;
    }
    if (!res.stream) {
      done();
      return res;
    }
    const onAbort = () => done();
    req.signal.addEventListener("abort", onAbort, { once: true });
    return {
      ...res,
      message: observed(res.message, () => undefined, () => {
        req.signal.removeEventListener("abort", onAbort);
        done();
      }),
    };
  };
}
