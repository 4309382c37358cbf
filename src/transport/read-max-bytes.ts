// The bound on what a transport reads of one answer, shared by the Node and fetch transports.
// connect's own default is 4 GiB, no bound at all in practice; configuration answers are
// kilobytes, and the gateway reads requests of at most 16 MiB.

import { InvalidArgumentError } from "../errors.js";

/** The most one answer message may hold unless the caller says otherwise: 64 MiB. */
export const READ_MAX_BYTES = 64 * 1024 * 1024;

/** `value`, or the default when absent; InvalidArgumentError (field `readMaxBytes`) outside 1 to 4294967295. */
export function readMaxBytesOf(value: number | undefined): number {
  const max = value ?? READ_MAX_BYTES;
  if (!Number.isSafeInteger(max) || max < 1 || max > 0xffffffff) {
    throw new InvalidArgumentError(`readMaxBytes must be a whole number of bytes from 1 to 4294967295, not ${String(value)}`, { field: "readMaxBytes" });
  }
  return max;
}
