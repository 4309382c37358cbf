// What the operator sees when the gateway cannot start: one plain line on stderr, never a JSON log
// line with a stack. A file, port or database the operator got wrong is named with what to do; an
// error nothing here recognises is still one line (its message), its stack in the debug log.

import { AuthFileError } from "./auth/auth-file.js";
import { TlsFileError } from "./http/tls-files.js";
import { MigrationError } from "./store/migrations/migrate.js";
import { StoreUnavailableError } from "./store/store.js";

type SystemError = NodeJS.ErrnoException & { address?: string; port?: number; code?: string };

const LISTEN: Record<string, string> = {
  EADDRINUSE: "address already in use: another process listens there (another gateway?); stop it or choose another --port",
  EACCES: "permission denied: ports below 1024 need privileges; choose another --port",
  EADDRNOTAVAIL: "address not available: --host must be an address of this machine",
};

/** The line for a startup failure (without the program's name). `known` is false for a bug. */
export function startupProblem(err: unknown, db: string): { readonly line: string; readonly known: boolean } {
  if (err instanceof AuthFileError || err instanceof TlsFileError) return { line: err.message, known: true };
  const e = err as SystemError;
  if (e?.syscall === "listen" && e.code !== undefined && e.code in LISTEN) {
    return { line: `cannot listen on ${e.address ?? "?"}:${e.port ?? "?"}: ${LISTEN[e.code]} (${e.code})`, known: true };
  }
  const where = databaseName(db);
  if (err instanceof StoreUnavailableError) return { line: `cannot open the database ${where}: ${err.message}${userHint(db, err.message)}`, known: true };
  if (err instanceof MigrationError) return { line: `the database ${where}: ${err.message}`, known: true };
  const message = err instanceof Error ? err.message : String(err);
  // better-sqlite3 and the file system, for a --db sqlite:PATH the gateway cannot open.
  if (db.startsWith("sqlite:") && (/^SQLITE_/.test(e?.code ?? "") || /^Cannot open database/.test(message) || e?.code === "EACCES" || e?.code === "EROFS")) {
    return { line: `cannot open the database ${where}: ${message}${e?.code && !message.includes(e.code) ? ` (${e.code})` : ""}`, known: true };
  }
  return { line: `failed to start: ${message}`, known: false };
}

/** The --db value without a password, e.g. `postgres://app@db:5432/openshell`. */
function databaseName(db: string): string {
  if (!/^postgres(ql)?:/.test(db)) return db;
  try {
    const url = new URL(db);
    if (url.password !== "") url.password = "***";
    return url.toString();
  } catch {
    return "(the --db URL)";
  }
}

/** For a PostgreSQL URL without a user that the server refused for it: where the user goes. */
function userHint(db: string, message: string): string {
  if (!/^postgres(ql)?:/.test(db) || !/user name/i.test(message)) return "";
  try {
    return new URL(db).username === "" ? "; name the user in the URL: postgres://USER@HOST:PORT/DATABASE" : "";
  } catch {
    return "";
  }
}
