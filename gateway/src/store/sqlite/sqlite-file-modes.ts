// Who may read the database on disk: its owner only. The providers table holds credentials, and
// SQLite creates a new database file 0644 (less the umask), so without this any local user could
// read them. SQLite gives the -wal, -shm and -journal files it creates the main file's mode (on
// Unix it copies the mode and fchmods a new file to it, whatever the umask), so a main file that
// is 0600 before SQLite opens it is enough for every file SQLite makes; files left from an
// earlier run, or made group- or world-readable by hand, are tightened at open.

import { chmodSync, closeSync, constants, fchmodSync, openSync, statSync } from "node:fs";

/** What the store says about its files (a pino logger fits). */
export interface SqliteStoreLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** The mode of a database file the store creates: read and write for its owner only. */
export const DATABASE_FILE_MODE = 0o600;

/** The files SQLite keeps beside a database, by suffix. */
const COMPANIONS = ["", "-wal", "-shm", "-journal"] as const;

const octal = (mode: number) => `0${(mode & 0o777).toString(8).padStart(3, "0")}`;

/**
 * Creates `path` empty with mode 0600 if it does not exist (SQLite takes an empty file for a new
 * database), so that the database is never readable by others, not even for a moment. Anything
 * else that goes wrong here (no such directory, no permission) is left for SQLite to report when
 * it opens the file, in its usual words.
 */
export function createDatabaseFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, DATABASE_FILE_MODE);
  } catch {
    return;
  }
  try {
    // The umask only removes bits, but one that removes the owner's would leave SQLite unable to
    // write the file it was asked to create.
    fchmodSync(fd, DATABASE_FILE_MODE);
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the group and other bits from the database file and each companion that exists (never
 * adding a bit: a read-only file stays read-only), and says so for each file it changed. A file
 * the store may not chmod (another owner, a read-only filesystem) is used as it is, with a
 * warning: refusing would stop a gateway that was running until now, over a mode its operator
 * chose.
 */
export function tightenDatabaseFiles(file: string, log: SqliteStoreLog | undefined): void {
  for (const suffix of COMPANIONS) {
    const path = file + suffix;
    let mode: number;
    try {
      mode = statSync(path).mode;
    } catch {
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    const tightened = mode & 0o700;
    try {
      chmodSync(path, tightened);
      log?.warn({ file: path, mode: octal(mode), now: octal(tightened) }, "database file was readable by group or others: permissions tightened to the owner's only");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      log?.warn({ file: path, mode: octal(mode), code }, "database file is readable by group or others and its permissions could not be tightened: it holds provider credentials, make it readable by its owner only (chmod 600)");
    }
  }
}
