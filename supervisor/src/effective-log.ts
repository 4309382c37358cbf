// What each sandbox enforces, written as an append-only log with compaction. An apply appends
// one JSON line to `<sandbox>/effective.log` (one write on a descriptor kept open) instead of
// replacing effective.json (create a temp file, write, close, rename: three more system calls,
// about 10% of the supervisor's CPU under load). The log is folded into effective.json, by the
// same atomic replacement as before, when it grows past a bound, when its sandbox has been idle
// for a moment, when too many logs are open, and when the process stops; a sandbox at rest
// therefore has an up-to-date effective.json and no log. Readers take the log's last complete
// line when there is one, else effective.json (effective-state.ts).
//
// Durability is as before: a line is written (and, off memory file systems, fdatasync'ed) before
// the apply it records is reported. A process killed between two compactions leaves its log
// behind; readers and the next process to host the sandbox carry on from it. A line cut short
// by a power loss is not a JSON document: readers skip it, and the next append starts a new line.

import { closeSync, fstatSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { open, unlink, type FileHandle } from "node:fs/promises";

export interface EffectiveLogLimits {
  /** Fold a log into effective.json once it holds this many bytes. */
  readonly compactBytes: number;
  /** Fold and close a sandbox's log when it has not been written for this long (ms). */
  readonly idleMs: number;
  /** Logs open at once in one process; the least recently written is folded and closed first. */
  readonly maxOpen: number;
}

export const DEFAULT_EFFECTIVE_LOG_LIMITS: EffectiveLogLimits = { compactBytes: 32 * 1024, idleMs: 1_000, maxOpen: 256 };

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
  /** Memory file systems: a descriptor. */
  fd: number | undefined;
  /** Elsewhere: a handle, opened by the first append. */
  fh: FileHandle | undefined;
  bytes: number;
  /** The last document appended (what a compaction writes). */
  last: unknown;
  timer: NodeJS.Timeout | undefined;
}

export class EffectiveLogs {
  /** Open logs, least recently written first. */
  private readonly open = new Map<string, OpenLog>();
  /** Off memory file systems: each sandbox's log operations, in order (across its log objects). */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly host: EffectiveLogHost,
    private readonly limits: EffectiveLogLimits = DEFAULT_EFFECTIVE_LOG_LIMITS,
  ) {}

  /** Logs open now (for tests of the bound). */
  get openCount(): number {
    return this.open.size;
  }

  /**
   * Appends `doc` to `sandbox`'s log, synchronously (a memory file system). The sandbox's
   * directory must exist (ENOENT otherwise, and the log is forgotten).
   */
  appendSync(sandbox: string, doc: unknown): void {
    const line = `${JSON.stringify(doc)}\n`;
    const log = this.touch(sandbox);
    try {
      if (log.fd === undefined) {
        log.fd = openSync(log.path, "a+", 0o644);
        log.bytes = endLine(log.fd);
      }
      log.bytes += writeString(log.fd, line);
    } catch (err) {
      this.forget(log);
      throw err;
    }
    log.last = doc;
    if (log.bytes >= this.limits.compactBytes) {
      try {
        this.foldSync(log);
      } catch {
        // The line is written and readers take it from the log; the fold is tried again next time.
      }
    }
    this.arm(log);
  }

  /** The same off memory file systems: written and fdatasync'ed before it resolves. */
  append(sandbox: string, doc: unknown): Promise<void> {
    const line = Buffer.from(`${JSON.stringify(doc)}\n`);
    const log = this.touch(sandbox);
    return this.serial(sandbox, async () => {
      try {
        if (log.fh === undefined) {
          const opened = await openAsync(log.path);
          log.fh = opened.fh;
          log.bytes = opened.bytes;
          if (opened.bytes === 0) await this.host.syncDirectory(sandbox);
        }
        await log.fh.write(line, 0, line.length);
        await log.fh.datasync();
        log.bytes += line.length;
      } catch (err) {
        this.forget(log);
        throw err;
      }
      log.last = doc;
      if (log.bytes >= this.limits.compactBytes) {
        try {
          await this.fold(log);
        } catch {
          // As above: the log still holds the line.
        }
      }
      this.arm(log);
    });
  }

  /** Folds every open log into its effective.json and closes it (at stop). */
  async close(): Promise<void> {
    await Promise.all([...this.open.values()].map((l) => this.retire(l).catch(() => {})));
  }

  /** The sandbox's open log, made the most recently written; a new one past the bound evicts the oldest. */
  private touch(sandbox: string): OpenLog {
    let log = this.open.get(sandbox);
    if (log !== undefined) {
      this.open.delete(sandbox);
      this.open.set(sandbox, log);
      return log;
    }
    log = { sandbox, path: this.host.logPath(sandbox), fd: undefined, fh: undefined, bytes: 0, last: undefined, timer: undefined };
    this.open.set(sandbox, log);
    while (this.open.size > this.limits.maxOpen) {
      const oldest = this.open.values().next().value as OpenLog;
      void this.retire(oldest).catch(() => {});
    }
    return log;
  }

  private arm(log: OpenLog): void {
    if (log.timer !== undefined) {
      log.timer.refresh();
      return;
    }
    log.timer = setTimeout(() => void this.retire(log).catch(() => {}), this.limits.idleMs);
    log.timer.unref();
  }

  /** Folds the log and forgets it (idle, evicted, or the process stopping). */
  private retire(log: OpenLog): Promise<void> {
    this.detach(log);
    if (log.fd !== undefined) {
      try {
        this.foldSync(log);
        return Promise.resolve();
      } catch (err) {
        this.forget(log);
        return Promise.reject(err);
      }
    }
    return this.serial(log.sandbox, async () => {
      try {
        await this.fold(log);
      } catch (err) {
        this.forget(log);
        throw err;
      }
    });
  }

  /**
   * Writes the log's last document to effective.json, then removes the log and closes it (the
   * next append opens a new one). Once the log is removed its latest document is in
   * effective.json, so a reader in between sees the same document either way. Failing, it leaves
   * the log as it was. A fresh file per fold also means a sandbox directory removed underneath a
   * running supervisor comes back, whole, by the next fold (the replacement makes it again).
   */
  private foldSync(log: OpenLog): void {
    if (log.last !== undefined) {
      this.host.replaceEffective(log.sandbox, log.last);
      unlinkIfThere(log.path);
    }
    const fd = log.fd;
    log.fd = undefined;
    log.bytes = 0;
    if (fd !== undefined) closeSync(fd);
  }

  private async fold(log: OpenLog): Promise<void> {
    if (log.last !== undefined) {
      await this.host.replaceEffective(log.sandbox, log.last);
      await unlink(log.path).catch((err: unknown) => {
        if ((err as { code?: unknown }).code !== "ENOENT") throw err;
      });
    }
    const fh = log.fh;
    log.fh = undefined;
    log.bytes = 0;
    await fh?.close();
  }

  private forget(log: OpenLog): void {
    this.detach(log);
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

  private detach(log: OpenLog): void {
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
 * The size of an existing log opened for appending, after making sure the next line starts on a
 * line of its own: a last line cut short (a power loss) is ended with a newline, so it stays one
 * unreadable line that readers skip instead of spoiling the next document.
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
