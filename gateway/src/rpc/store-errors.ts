// Maps store failures to Connect codes at the edge: the database unreachable is UNAVAILABLE
// (retryable; nothing was committed or the commit is replayable by key), a bad page token is
// the caller's INVALID_ARGUMENT, and a conflict that outlived the store's retries is ABORTED.
// The caller learns only "unavailable"; the operator learns why (a full disk, a lost database)
// from the log, at most once per interval per cause, so an outage does not flood it.

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { StoreConflictError, StoreUnavailableError } from "../store/store.js";
import { InvalidPageTokenError } from "../store/codec.js";
import type { Logger } from "pino";

/** One log line per distinct cause per this interval; the rest are counted. */
const LOG_INTERVAL_MS = 10_000;

export function mapStoreError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return new ConnectError("the gateway's database is unavailable; retry", Code.Unavailable, undefined, undefined, err);
  if (err instanceof InvalidPageTokenError) return new ConnectError("page_token is not valid", Code.InvalidArgument, undefined, undefined, err);
  if (err instanceof StoreConflictError) return new ConnectError("the resource changed concurrently; retry", Code.Aborted, undefined, undefined, err);
  return err;
}

/** Logs store outages, rate-limited by message. */
function createOutageLog(logger: Logger | undefined) {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (err: unknown, method: string) => {
    if (!logger || !(err instanceof StoreUnavailableError)) return;
    const now = Date.now();
    const seen = last.get(err.message);
    if (seen && now - seen.at < LOG_INTERVAL_MS) {
      seen.suppressed++;
      return;
    }
    if (last.size > 100) last.clear();
    last.set(err.message, { at: now, suppressed: 0 });
    logger.error({ err: err.message, method, suppressedSinceLast: seen?.suppressed ?? 0 }, "the store is unavailable; calls answer UNAVAILABLE");
  };
}

export function createStoreErrorInterceptor(logger?: Logger): Interceptor {
  const logOutage = createOutageLog(logger);
  const map = (err: unknown, method: string) => {
    logOutage(err, method);
    return mapStoreError(err);
  };
  return (next) => async (req) => {
    try {
      const res = await next(req);
      if (!res.stream) return res;
      const messages = res.message;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* messages;
          } catch (err) {
            throw map(err, req.method.name);
          }
        })(),
      };
    } catch (err) {
      throw map(err, req.method.name);
    }
  };
}
