// What each sandbox enforces, written as an append-only log with folding. An apply appends one
// JSON line to `<sandbox>/effective.log` (one write on a descriptor kept open) instead of
// replacing effective.json (create a temp file, write, close, rename: about 12% of the
// supervisor's CPU in the probe's profile). A log is folded into effective.json, by the same
// atomic replacement as before, when it reaches a byte bound, when its sandbox has been idle for
// a moment and when the process stops; a sandbox at rest therefore has an up-to-date
// effective.json and no log. Readers take the log's newest complete line when there is one,
// else effective.json (effective-state.ts). Open logs are bounded: past the bound, an apply of a
// sandbox without one replaces effective.json as before (no eviction, so no churn).
//
// Durability is as before: a line is written (and, off memory file systems, fdatasync'ed) before
// the apply it records is reported. A process killed between two folds leaves its log; readers
// carry on from it, and the next process to host the sandbox folds it when it starts the sandbox.
// A line cut short by a power loss is not a JSON document: readers skip it.
//
// Ordering: on a memory file system everything here is synchronous, so nothing interleaves. Off
// it, every step for one sandbox (append, fold, recovery) runs on that sandbox's chain, and a
// fold checks, when its turn comes, that its log is still the sandbox's current one.
//
// A sandbox directory removed under a running supervisor while its log is open takes that log's
// lines with it until the next fold (at most the byte bound or the idle time), which makes the
// directory again with the newest document.

import { closeSync, fstatSync, openSync, readFileSync, readSync, unlinkSync, writeSync } from "node:fs";
import { open, readFile, unlink, type FileHandle } from "node:fs/promises";
import { lastDocument } from "./effective-state.js";

export interface EffectiveLogLimits {
  /** Fold a log into effective.json once it holds this many bytes. */
  readonly compactBytes: number;
  /** Fold and close a sandbox's log when it has not been written for this long (ms). */
  readonly idleMs: number;
  /** Logs open at once in one process; past it, applies replace effective.json directly. */
  readonly maxOpen: number;
}

export const DEFAULT_EFFECTIVE_LOG_LIMITS: EffectiveLogLimits = { compactBytes: 32 * 1024, idleMs: 1_000, maxOpen: 512 };

/** How the logs reach the rest of the state directory. */
export interface EffectiveLogHost {
  logPath(sandbox: string): string;
  /** Replaces effective.json with `doc` atomically: synchronously on a memory file system, else durably. */
  replaceEffective(sandbox: string, doc: unknown): Promise<void> | void;
  /** Makes a new directory entry of the sandbox's directory durable (off memory file systems). */
  syncDirectory(sandbox: string): Promise<void>;
}

interface OpenLog {
  readonly sandbox: string;
  readonly path: string;
  /** Memory file systems: a descriptor; elsewhere a handle. */
  fd: number | undefined;
  fh: FileHandle | undefined;
  bytes: number;
  /** The newest document appended, not yet folded. */
  last: unknown;
  timer: NodeJS.Timeout | undefined;
}

export class EffectiveLogs {
  /** Each sandbox's open log. */
  private readonly open = new Map<string, OpenLog>();
  /** Off memory file systems: each sandbox's steps, in order. */
  private readonly chains = new Map<string, Promise<void>>();
  private closed = false;

  constructor(
    private readonly host: EffectiveLogHost,
    private readonly limits: EffectiveLogLimits = DEFAULT_EFFECTIVE_LOG_LIMITS,
  ) {}

  /** Logs open now (for tests of the bound). */
  get openCount(): number {
    return this.open.size;
  }

  /** Folds a log an earlier process left for `sandbox` (synchronously, a memory file system). */
  recoverSync(sandbox: string): void {
    if (this.open.has(sandbox)) return;
    const path = this.host.logPath(sandbox);
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as { code?: unknown }).code === "ENOENT") return;
      throw err;
    }
    const doc = lastDocument(text);
    if (doc !== undefined) this.host.replaceEffective(sandbox, doc);
    unlinkIfThere(path);
  }

  /** The same off memory file systems. */
  recover(sandbox: string): Promise<void> {
    return this.serial(sandbox, async () => {
      if (this.open.has(sandbox)) return;
      const path = this.host.logPath(sandbox);
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (err) {
        if ((err as { code?: unknown }).code === "ENOENT") return;
        throw err;
      }
      const doc = lastDocument(text);
      if (doc !== undefined) await this.host.replaceEffective(sandbox, doc);
      await unlinkAsyncIfThere(path);
    });
  }

  /**
   * Records `doc` for `sandbox`, synchronously (a memory file system). The sandbox's directory
   * must exist (ENOENT otherwise, with nothing written).
   */
  appendSync(sandbox: string, doc: unknown): void {
    let log = this.open.get(sandbox);
    if (log === undefined) {
      if (this.closed || this.open.size >= this.limits.maxOpen) {
        this.host.replaceEffective(sandbox, doc);
        return;
      }
      const fd = openSync(this.host.logPath(sandbox), "a+", 0o644);
      let bytes: number;
      try {
        bytes = endLine(fd);
      } catch (err) {
        closeSync(fd);
        throw err;
      }
      log = { sandbox, path: this.host.logPath(sandbox), fd, fh: undefined, bytes, last: undefined, timer: undefined };
      this.open.set(sandbox, log);
    }
    try {
      log.bytes += writeString(log.fd!, `${JSON.stringify(doc)}\n`);
    } catch (err) {
      // Whatever part of the line got out is ended by the next open's newline and skipped.
      this.drop(log);
      throw err;
    }
    log.last = doc;
    if (log.bytes >= this.limits.compactBytes) this.retireSync(log);
    else this.arm(log);
  }

  /** The same off memory file systems: written and fdatasync'ed before it resolves. */
  append(sandbox: string, doc: unknown): Promise<void> {
    const line = Buffer.from(`${JSON.stringify(doc)}\n`);
    return this.serial(sandbox, async () => {
      let log = this.open.get(sandbox);
      if (log === undefined) {
        if (this.closed || this.open.size >= this.limits.maxOpen) {
          await this.host.replaceEffective(sandbox, doc);
          return;
        }
        log = { sandbox, path: this.host.logPath(sandbox), fd: undefined, fh: undefined, bytes: 0, last: undefined, timer: undefined };
        this.open.set(sandbox, log);
      }
      try {
        if (log.fh === undefined) {
          const opened = await openAsync(log.path);
          log.fh = opened.fh;
          log.bytes = opened.bytes;
          if (opened.bytes === 0) await this.host.syncDirectory(sandbox);
        }
        // A short write (a full disk) must not count as a whole line.
        for (let off = 0; off < line.length; ) off += (await log.fh.write(line, off, line.length - off)).bytesWritten;
        await log.fh.datasync();
      } catch (err) {
        this.drop(log);
        throw err;
      }
      log.bytes += line.length;
      log.last = doc;
      if (log.bytes >= this.limits.compactBytes) await this.fold(log);
      else this.arm(log);
    });
  }

  /** Folds every open log into its effective.json; later applies replace effective.json directly. */
  async close(): Promise<void> {
    this.closed = true;
    for (const log of [...this.open.values()]) void this.retire(log).catch(() => {});
    while (this.chains.size > 0) await Promise.all(this.chains.values());
  }

  private arm(log: OpenLog): void {
    if (log.timer !== undefined) {
      log.timer.refresh();
      return;
    }
    log.timer = setTimeout(() => void this.retire(log).catch(() => {}), this.limits.idleMs);
    log.timer.unref();
  }

  /** Folds `log` if it is still its sandbox's open log (idle, or the process stopping). */
  private retire(log: OpenLog): Promise<void> {
    if (log.fd !== undefined) {
      if (this.open.get(log.sandbox) === log) this.retireSync(log);
      return Promise.resolve();
    }
    return this.serial(log.sandbox, async () => {
      if (this.open.get(log.sandbox) === log) await this.fold(log);
    });
  }

  /**
   * Writes the log's newest document to effective.json, then removes the log and closes it (the
   * next append opens a new one). Once the log is gone effective.json already holds its newest
   * document, so a reader sees the same document either way. If the replacement fails the log
   * stays on disk, whole, and readers take it; the next append opens it again.
   */
  private retireSync(log: OpenLog): void {
    this.forget(log);
    const fd = log.fd!;
    log.fd = undefined;
    try {
      this.host.replaceEffective(log.sandbox, log.last);
      unlinkIfThere(log.path);
    } catch {
      // see above
    } finally {
      closeSync(fd);
    }
  }

  /** The same off memory file systems (on the sandbox's chain). */
  private async fold(log: OpenLog): Promise<void> {
    this.forget(log);
    const fh = log.fh;
    log.fh = undefined;
    try {
      await this.host.replaceEffective(log.sandbox, log.last);
      await unlinkAsyncIfThere(log.path);
    } catch {
      // as in retireSync
    } finally {
      await fh?.close().catch(() => {});
    }
  }

  /** After a failed write: the log is forgotten and closed (the next append opens it again). */
  private drop(log: OpenLog): void {
    this.forget(log);
    if (log.fd !== undefined) {
      try {
        closeSync(log.fd);
      } catch {
        // already failing
      }
      log.fd = undefined;
    }
    const fh = log.fh;
    log.fh = undefined;
    void fh?.close().catch(() => {});
  }

  private forget(log: OpenLog): void {
    if (this.open.get(log.sandbox) === log) this.open.delete(log.sandbox);
    if (log.timer !== undefined) clearTimeout(log.timer);
    log.timer = undefined;
  }

  private serial(sandbox: string, op: () => Promise<void>): Promise<void> {
    const run = (this.chains.get(sandbox) ?? Promise.resolve()).then(op);
    const tail = run.catch(() => {});
    this.chains.set(sandbox, tail);
    void tail.then(() => {
      if (this.chains.get(sandbox) === tail) this.chains.delete(sandbox);
    });
    return run;
  }
}

function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as { code?: unknown }).code !== "ENOENT") throw err;
  }
}

async function unlinkAsyncIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as { code?: unknown }).code !== "ENOENT") throw err;
  }
}

/** Writes all of `text`; returns its length in bytes. */
function writeString(fd: number, text: string): number {
  const written = writeSync(fd, text);
  const total = Buffer.byteLength(text);
  if (written < total) {
    const bytes = Buffer.from(text);
    for (let off = written; off < total; ) off += writeSync(fd, bytes, off, total - off);
  }
  return total;
}

/**
 * The size of a log opened for appending, after making sure the next line starts on a line of
 * its own: a last line cut short is ended with a newline, so it stays one unreadable line that
 * readers skip instead of spoiling the next document.
 */
function endLine(fd: number): number {
  const size = fstatSync(fd).size;
  if (size === 0) return 0;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  if (last[0] === 0x0a) return size;
  writeSync(fd, "\n");
  return size + 1;
}

async function openAsync(path: string): Promise<{ fh: FileHandle; bytes: number }> {
  const fh = await open(path, "a+", 0o644);
  try {
    const size = (await fh.stat()).size;
    if (size === 0) return { fh, bytes: 0 };
    const last = Buffer.alloc(1);
    await fh.read(last, 0, 1, size - 1);
    if (last[0] === 0x0a) return { fh, bytes: size };
    await fh.write("\n");
    return { fh, bytes: size + 1 };
  } catch (err) {
    await fh.close().catch(() => {});
    throw err;
  }
}
