// Maps store failures to Connect codes at the edge: the database unreachable is UNAVAILABLE
// (retryable; nothing was committed or the commit is replayable by key), a bad page token is
// the caller's INVALID_ARGUMENT, and a conflict that outlived the store's retries is ABORTED.

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { StoreConflictError, StoreUnavailableError } from "../store/store.js";
import { InvalidPageTokenError } from "../store/codec.js";

export function mapStoreError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return new ConnectError("the gateway's database is unavailable; retry", Code.Unavailable, undefined, undefined, err);
  if (err instanceof InvalidPageTokenError) return new ConnectError("page_token is not valid", Code.InvalidArgument, undefined, undefined, err);
  if (err instanceof StoreConflictError) return new ConnectError("the resource changed concurrently; retry", Code.Aborted, undefined, undefined, err);
  return err;
}

export function createStoreErrorInterceptor(): Interceptor {
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
            throw mapStoreError(err);
          }
        })(),
      };
    } catch (err) {
      throw mapStoreError(err);
    }
  };
}
