// Polling helper for tests: retries an assertion until it passes or the time is up; and readers
// of JSON files and of what a sandbox enforces.

import { readFileSync } from "node:fs";
import { readEffective, type EffectiveDocument } from "../../src/effective-state.js";

export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 5_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
}

/** What `sandbox` enforces under the state directory `root`; throws (so `eventually` retries) before it has one. */
export function effectiveOf(root: string, sandbox: string): EffectiveDocument {
  const doc = readEffective(root, sandbox);
  if (doc === undefined) throw new Error(`no effective document for ${sandbox} under ${root} yet`);
  return doc;
}
