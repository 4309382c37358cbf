// Polling helper for tests: retries an assertion until it passes or the time is up; and a JSON reader.

import { readFileSync } from "node:fs";

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
