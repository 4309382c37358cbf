// Protobuf Timestamp and Duration conversions. An absent timestamp stays `undefined`: a missing
// `completed_time` must never read as 1970.

import { timestampDate, durationFromMs, type Timestamp, type Duration } from "@bufbuild/protobuf/wkt";

/** The `Date` of a protobuf Timestamp, or `undefined` when the field is absent. */
export function toDate(ts: Timestamp | undefined): Date | undefined {
  return ts === undefined ? undefined : timestampDate(ts);
}

/** A protobuf Duration of whole milliseconds (negative input is clamped to zero). */
export function toDuration(ms: number): Duration {
  return durationFromMs(Math.max(0, Math.floor(ms)));
}
