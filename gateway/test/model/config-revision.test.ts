// The configuration revision (model/snapshot.ts, configRevision): a fingerprint of the policy
// hash and the effective settings. Without settings it is looked up for recent policy hashes
// instead of hashed again; the looked-up value must be the hashed one, whatever the order of
// calls and however many hashes have gone by.

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SettingScope } from "openshell-config/raw";
import { MAX_CONFIG_REVISION, configRevision } from "../../src/model/snapshot.js";

/** What configRevision computes, written out: sha256 of the hash, then each setting in key order. */
function expected(policyHash: string, settings: [string, SettingScope, Uint8Array][] = []): bigint {
  const h = createHash("sha256").update(policyHash);
  for (const [key, scope, value] of [...settings].sort((a, b) => (a[0] < b[0] ? -1 : 1))) h.update(`\0${key}\0${scope}\0`).update(value);
  return h.digest().readBigUInt64BE(0) & MAX_CONFIG_REVISION;
}

describe("configRevision", () => {
  it("without settings, equals the hash of the policy hash on every call, for more policy hashes than it keeps", () => {
    const hashes = Array.from({ length: 600 }, (_, i) => `sha256:${i.toString(16).padStart(64, "0")}`);
    for (let round = 0; round < 2; round++) {
      for (const h of hashes) expect(configRevision(h, new Map())).toBe(expected(h));
      // And in reverse, so that both kept and evicted hashes are asked for.
      for (const h of [...hashes].reverse()) expect(configRevision(h, new Map())).toBe(expected(h));
    }
  });

  it("with settings, depends on every key, scope and value, not on the order they were given in", () => {
    const v = (s: string) => new TextEncoder().encode(s);
    const a: [string, SettingScope, Uint8Array][] = [["b", SettingScope.SANDBOX, v("1")], ["a", SettingScope.GLOBAL, v("2")]];
    const map = (entries: typeof a) => new Map(entries.map(([k, scope, value]) => [k, { scope, value }]));
    const h = "sha256:abc";
    expect(configRevision(h, map(a))).toBe(expected(h, a));
    expect(configRevision(h, map([...a].reverse()))).toBe(expected(h, a));
    expect(configRevision(h, map(a))).not.toBe(configRevision(h, new Map()));
    expect(configRevision(h, map([["b", SettingScope.GLOBAL, v("1")], a[1]!]))).not.toBe(configRevision(h, map(a)));
    expect(configRevision(h, map([["b", SettingScope.SANDBOX, v("3")], a[1]!]))).not.toBe(configRevision(h, map(a)));
    expect(configRevision(h, map(a))).toBeLessThanOrEqual(MAX_CONFIG_REVISION);
  });
});
