// Reading what a sandbox enforces from a supervisor's state directory: the last complete line of
// `<sandbox>/effective.log` when there is one (applies since the last fold, effective-log.ts),
// else `<sandbox>/effective.json`. For tests, tools and people: `openshell-supervisor
// --print-effective SANDBOX --state-dir DIR` prints the same document.

import { readFileSync } from "node:fs";
import { join } from "node:path";

export const EFFECTIVE_FILE = "effective.json";
export const EFFECTIVE_LOG = "effective.log";

/** One effective document: policy and settings in proto JSON, the revision, the source (sandbox.ts). */
export type EffectiveDocument = Record<string, unknown>;

/**
 * The effective document of `sandbox` under the state directory `root`, or undefined before the
 * supervisor wrote one. A last line cut short (a power loss) is skipped for the one before it.
 */
export function readEffective(root: string, sandbox: string): EffectiveDocument | undefined {
  const dir = join(root, sandbox);
  const log = readIfThere(join(dir, EFFECTIVE_LOG));
  if (log !== undefined) {
    const doc = lastDocument(log);
    if (doc !== undefined) return doc;
  }
  const file = readIfThere(join(dir, EFFECTIVE_FILE));
  return file === undefined ? undefined : (JSON.parse(file) as EffectiveDocument);
}

/**
 * The newest complete document of an effective log's text. What follows the last newline is a
 * write in progress or one a crash cut short; a damaged line (a power loss) yields the one before.
 */
export function lastDocument(text: string): EffectiveDocument | undefined {
  const lines = text.split("\n");
  lines.pop();
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i] === "") continue;
    try {
      return JSON.parse(lines[i]!) as EffectiveDocument;
    } catch {
      // the one before it
    }
  }
  return undefined;
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as { code?: unknown }).code === "ENOENT") return undefined;
    throw err;
  }
}
