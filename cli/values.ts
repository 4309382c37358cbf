// Option values of the command line that mean more than text: durations (--timeout), setting
// values by --type, and label selectors. Each throws an Error whose message is for the user;
// args.ts turns it into a UsageError for the command at hand.

import type { SettingInput } from "openshell-config";
import type { SettingType } from "./args.js";

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

/** Parses a label selector (`k=v`, repeatable, each possibly `k=v,k2=v2`) into the gateway's form. */
export function parseSelector(parts: readonly string[]): string | undefined {
  const pairs: string[] = [];
  for (const part of parts.flatMap((p) => p.split(","))) {
    const m = /^\s*([^=\s]+)\s*=\s*([^=\s]*)\s*$/.exec(part);
    if (!m) throw new Error(`--selector must be key=value; got "${part}"`);
    pairs.push(`${m[1]}=${m[2]}`);
  }
  return pairs.length === 0 ? undefined : pairs.join(",");
}
