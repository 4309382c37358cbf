// Reading the small files of the command line's configuration (the config file, the gateway
// registry) with a bound: a regular file of at most `maxBytes`, never a FIFO, a device or a
// directory that would block or stream forever; and directory listings cut at a number of entries.
// The files are in the user's hands, but also in an installer's (/etc/openshell) and may be
// anything a mistake or an attacker put there.

import { closeSync, constants, fstatSync, opendirSync, openSync, readSync, statSync } from "node:fs";

/** A file that is absent (`missing`), or present but unusable (`problem`, one phrase). */
export type ReadResult = { readonly text: string; readonly mode: number } | { readonly missing: true } | { readonly problem: string };

/**
 * The file's text (UTF-8) and its permission bits, `{ missing: true }` when it does not exist, or
 * `{ problem }` when it is not a regular file, is larger than `maxBytes`, or cannot be read.
 */
export function readBounded(path: string, maxBytes: number): ReadResult {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { missing: true };
    return { problem: code === "EACCES" ? "permission denied" : code === "EISDIR" ? "it is a directory" : (err as Error).message };
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) return { problem: "it is a directory" };
    if (!st.isFile()) return { problem: "it is not a regular file" };
    if (st.size > maxBytes) return { problem: `it is larger than ${formatBytes(maxBytes)} (${st.size} bytes)` };
    // Read one byte more than allowed: the file may have grown since fstat.
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > maxBytes) return { problem: `it is larger than ${formatBytes(maxBytes)}` };
    }
    return { text: buf.subarray(0, n).toString("utf8"), mode: st.mode & 0o777 };
  } catch (err) {
    return { problem: (err as Error).message };
  } finally {
    closeSync(fd);
  }
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  return n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`;
}

/** Whether `path` exists (following symbolic links), and is a directory / a regular file. */
export function kindOf(path: string): "file" | "directory" | "other" | "missing" {
  try {
    const st = statSync(path);
    return st.isFile() ? "file" : st.isDirectory() ? "directory" : "other";
  } catch {
    return "missing";
  }
}

/**
 * The names of the subdirectories of `dir` (symbolic links to directories included), at most
 * `max` of them read; `truncated` when there were more entries. A missing directory has none.
 */
export function listDirectories(dir: string, max: number): { readonly names: string[]; readonly truncated: boolean; readonly problem?: string } {
  let handle;
  try {
    handle = opendirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { names: [], truncated: false };
    return { names: [], truncated: false, problem: code === "EACCES" ? "permission denied" : (err as Error).message };
  }
  const names: string[] = [];
  let truncated = false;
  try {
    for (let seen = 0; ; seen++) {
      const entry = handle.readSync();
      if (entry === null) break;
      // Every entry counts toward the bound, files too: it bounds the work, not the answer.
      if (seen >= max) {
        truncated = true;
        break;
      }
      if (entry.isDirectory() || (entry.isSymbolicLink() && kindOf(`${dir}/${entry.name}`) === "directory")) names.push(entry.name);
    }
  } finally {
    handle.closeSync();
  }
  return { names: names.sort(), truncated };
}
