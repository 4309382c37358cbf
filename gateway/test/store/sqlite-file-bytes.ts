// What a SQLite database leaves on disk, read the way a local attacker would: the raw bytes and
// the modes of the database file and of every file SQLite keeps beside it.

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export const COMPANIONS = ["", "-wal", "-shm", "-journal"] as const;

/** Each file beside the database whose name starts with the database's, with its mode in octal. */
export function modesOf(path: string): Record<string, string> {
  const modes: Record<string, string> = {};
  for (const name of readdirSync(dirname(path)).sort()) {
    if (!name.startsWith(basename(path))) continue;
    modes[name.slice(basename(path).length) || "main"] = (statSync(join(dirname(path), name)).mode & 0o777).toString(8).padStart(4, "0");
  }
  return modes;
}

/**
 * Where any of `secrets` (or a 16-byte piece of its start or end, which a partly overwritten copy
 * keeps) appears in the database's files: "file: secret" for each find, [] if nowhere.
 */
export function secretsOnDisk(path: string, secrets: readonly string[]): string[] {
  const found: string[] = [];
  for (const suffix of COMPANIONS) {
    const file = path + suffix;
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    for (const secret of secrets) {
      const pieces = [secret, secret.slice(0, 16), secret.slice(-16)];
      if (pieces.some((p) => bytes.includes(p))) found.push(`${suffix || "main"}: ${secret.slice(0, 24)}…`);
    }
  }
  return found;
}
