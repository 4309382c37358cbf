// Option values of the command line that mean more than text: durations (--timeout), setting
// values by --type, counts (--limit) and operation ids. Each throws an Error whose message is
// for the user; args.ts turns it into a UsageError for the command at hand. Label selectors have
// their own module (selector.ts).

import type { SettingInput } from "openshell-config";
import type { SettingType } from "./types.js";

/** Parses a duration: `500ms`, `30s`, `5m`, `1h` or a bare number of seconds. `0` means no limit. */
export function parseDuration(text: string, flag = "--timeout"): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`${flag} must be a duration such as 500ms, 30s, 5m or 1h; got "${text}"`);
  const n = Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  if (n === 0) return Infinity;
  if (n < 1) throw new Error(`${flag} must be at least 1ms; got "${text}"`);
  return Math.round(n);
}

/** Converts `--value` according to `--type`. Throws an Error with a message for the user. */
export function parseSettingValue(value: string, type: SettingType): SettingInput {
  switch (type) {
    case "string":
      return value;
    case "bool":
      if (value === "true") return true;
      if (value === "false") return false;
      throw new Error(`--value must be true or false for --type bool; got "${value}"`);
    case "int": {
      if (!/^-?\d+$/.test(value)) throw new Error(`--value must be an integer for --type int; got "${value}"`);
      const n = BigInt(value);
      if (n < -(2n ** 63n) || n > 2n ** 63n - 1n) throw new Error("--value does not fit in a signed 64-bit integer");
      return n;
    }
    case "bytes-base64": {
      const compact = value.replace(/\s+/g, "");
      const bytes = Buffer.from(compact, "base64");
      // Buffer.from skips invalid characters silently: accept only what round-trips.
      if (bytes.toString("base64").replace(/=+$/, "") !== compact.replace(/=+$/, "")) {
        throw new Error("--value is not valid base64 for --type bytes-base64");
      }
      return new Uint8Array(bytes);
    }
  }
}

/** A whole number of at least `min`. */
export function parseCount(text: string, flag: string, min: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw new Error(`${flag} must be an integer of at least ${min}; got "${text}"`);
  }
  return Number(text);
}

// Operation ids are UUIDs (UPSTREAM.md: ConfigUpdateOperation.operation_id, UUIDv4).
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checks an operation id's form, so a typo is reported as malformed rather than "not found". */
export function parseOperationId(text: string): string {
  const id = text.trim();
  if (/^[0-9a-f]{8}$/i.test(id)) {
    // A table's short id (its first 8 characters): the gateway looks operations up by the whole one.
    throw new Error(`"${text}" is a short operation ID, as tables show it; give the whole UUID ("operation list --sandbox S -o wide" or -o json shows it)`);
  }
  if (!UUID.test(id)) {
    throw new Error(`malformed operation ID "${text}": expected a UUID such as 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f`);
  }
  return id;
}
