// The simulated sandbox's on-disk state: one directory per sandbox under the state dir, and
// crash-safe file replacement (write a temp file, fsync it, rename it over the target, fsync the
// directory) so a reader never sees a partial effective.json or provider-env.json. What a
// sandbox enforces goes first to an append-only log folded into effective.json (effective-log.ts).
// On a memory file system (tmpfs, ramfs) nothing can be made durable, so the fsyncs are skipped and
// the replacement (temp file, rename) is done with synchronous calls: every one of them is a memory
// operation there, cheaper than a round trip through the thread pool. Readers still never see a
// partial file: the rename is what makes the replacement atomic.

import { randomUUID } from "node:crypto";
import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { mkdir, open, rename, rm, statfs, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { DEFAULT_EFFECTIVE_LOG_LIMITS, EffectiveLogs, type EffectiveLogLimits } from "./effective-log.js";
import { EFFECTIVE_FILE, EFFECTIVE_LOG, readEffective, type EffectiveDocument } from "./effective-state.js";

/** Names usable as one path segment: letters, digits, '.', '_' and '-', not starting with '.'. */
const SAFE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/;

export function isSafeSandboxName(name: string): boolean {
  return SAFE_SEGMENT.test(name);
}

/** statfs(2) types of file systems that live in memory only: tmpfs, ramfs. */
const MEMORY_FS_TYPES = new Set([0x01021994, 0x858458f6]);

export interface StateDirOptions {
  /** fsync each replacement. Default: yes, unless the state directory is on tmpfs or ramfs. */
  readonly durable?: boolean;
  /** Bounds of the effective logs (tests make them small). */
  readonly effectiveLog?: Partial<EffectiveLogLimits>;
}

/** The files of one sandbox directory. */
interface SandboxPaths {
  readonly dir: string;
  readonly effective: string;
  readonly effectiveLog: string;
  readonly providerEnv: string;
  readonly gatewayDesired: string;
}

/** Paths of one process's state directory. */
export class StateDir {
  readonly root: string;
  /** Sandbox directories made (or found) by this process; a write that finds one gone makes it again. */
  private readonly ensured = new Set<string>();
  private durable: boolean | undefined;
  /** Each sandbox's paths, checked and joined once. */
  private readonly paths = new Map<string, SandboxPaths>();
  /** Temp file name prefix of each target path (`<dir>/.<name>.<pid>.`). */
  private readonly tmpPrefixes = new Map<string, string>();
  private tmpSeq = 0;
  /**
   * Per file mode: whether a file this process creates with it gets exactly that mode (the umask
   * takes none of its bits), so the fchmod after creating a temp file can be left out. Learned
   * from the first file created with the mode.
   */
  private readonly createdModeExact = new Map<number, boolean>();
  /** The file system check of the first sandbox directory, shared by every ensure() waiting for it. */
  private detecting: Promise<boolean> | undefined;

  private readonly logs: EffectiveLogs;

  constructor(root: string, options: StateDirOptions = {}) {
    this.root = resolve(root);
    this.durable = options.durable;
    this.logs = new EffectiveLogs(
      {
        logPath: (sandbox) => this.pathsOf(sandbox).effectiveLog,
        replaceEffective: (sandbox, doc) => this.replaceEffective(sandbox, doc),
        syncDirectory: (sandbox) => syncDirectory(this.pathsOf(sandbox).dir),
      },
      { ...DEFAULT_EFFECTIVE_LOG_LIMITS, ...options.effectiveLog },
    );
  }

  private pathsOf(sandbox: string): SandboxPaths {
    let p = this.paths.get(sandbox);
    if (p === undefined) {
      if (!isSafeSandboxName(sandbox)) throw new Error(`sandbox name ${JSON.stringify(sandbox)} cannot be used as a directory name`);
      const dir = join(this.root, sandbox);
      p = { dir, effective: join(dir, EFFECTIVE_FILE), effectiveLog: join(dir, EFFECTIVE_LOG), providerEnv: join(dir, "provider-env.json"), gatewayDesired: join(dir, "gateway-desired.json") };
      this.paths.set(sandbox, p);
    }
    return p;
  }

  sandboxDir(sandbox: string): string {
    return this.pathsOf(sandbox).dir;
  }

  /** The effective policy and settings in force, as of the last fold of the log. */
  effectivePath(sandbox: string): string {
    return this.pathsOf(sandbox).effective;
  }

  /** The applies since the last fold, one JSON document a line. */
  effectiveLogPath(sandbox: string): string {
    return this.pathsOf(sandbox).effectiveLog;
  }

  /** What `sandbox` enforces: the log's last document, else effective.json (undefined before either). */
  readEffective(sandbox: string): EffectiveDocument | undefined {
    return readEffective(this.root, sandbox);
  }

  /**
   * Records what `sandbox` now enforces: one line appended to its log, durable (off memory file
   * systems) when this resolves. Makes the directory first if this process has not (or it has gone).
   */
  appendEffective(sandbox: string, doc: unknown): Promise<void> {
    if (this.durable === false && this.ensured.has(sandbox)) {
      try {
        this.logs.appendSync(sandbox, doc);
        return Promise.resolve();
      } catch (err) {
        if ((err as { code?: unknown }).code !== "ENOENT") return Promise.reject(err);
        this.ensured.delete(sandbox);
      }
    }
    return this.appendEffectiveAsync(sandbox, doc);
  }

  private async appendEffectiveAsync(sandbox: string, doc: unknown): Promise<void> {
    if (!this.ensured.has(sandbox) || this.durable === undefined) await this.ensure(sandbox);
    try {
      if (this.durable === false) this.logs.appendSync(sandbox, doc);
      else await this.logs.append(sandbox, doc);
    } catch (err) {
      // The directory has gone since (a failed open has written nothing): make it again, once.
      if ((err as { code?: unknown }).code !== "ENOENT") throw err;
      this.ensured.delete(sandbox);
      await this.ensure(sandbox);
      if (this.durable === false) this.logs.appendSync(sandbox, doc);
      else await this.logs.append(sandbox, doc);
    }
  }

  /** Folds every open effective log into effective.json and closes it (when the process stops). */
  close(): Promise<void> {
    return this.logs.close();
  }

  /** effective.json replaced by `doc`, the directory made again if it has gone (a fold of the log). */
  private replaceEffective(sandbox: string, doc: unknown): Promise<void> | void {
    const { dir, effective } = this.pathsOf(sandbox);
    const data = `${JSON.stringify(doc, null, 2)}\n`;
    if (!this.durable) {
      try {
        this.replace(effective, data, {});
      } catch (err) {
        if ((err as { code?: unknown }).code !== "ENOENT") throw err;
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        this.replace(effective, data, {});
      }
      return;
    }
    return atomicWriteFile(effective, data, { durable: true }).catch(async (err: unknown) => {
      if ((err as { code?: unknown }).code !== "ENOENT") throw err;
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await atomicWriteFile(effective, data, { durable: true });
    });
  }

  /** The installed provider environment (mode 0600; holds secrets). */
  providerEnvPath(sandbox: string): string {
    return this.pathsOf(sandbox).providerEnv;
  }

  /** The gateway's desired configuration, stored but not enforced while a local override is in force. */
  gatewayDesiredPath(sandbox: string): string {
    return this.pathsOf(sandbox).gatewayDesired;
  }

  /** Creates the sandbox directory (mode 0700) and folds an effective log an earlier process left in it. */
  async ensure(sandbox: string): Promise<string> {
    const dir = this.sandboxDir(sandbox);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.ensured.add(sandbox);
    if (this.durable === undefined) {
      // One statfs for all the sandboxes that start together, not one each.
      this.detecting ??= onMemoryFileSystem(dir);
      const memory = await this.detecting;
      this.durable ??= !memory;
    }
    try {
      if (this.durable) await this.logs.recover(sandbox);
      else this.logs.recoverSync(sandbox);
    } catch {
      // A log that cannot be folded stays as it is, and readers take it.
    }
    return dir;
  }

  /**
   * Replaces `path` (a file of `sandbox`'s directory) with `value` as pretty JSON, atomically,
   * making the directory first if this process has not (or it has gone since).
   */
  writeJson(sandbox: string, path: string, value: unknown, options: AtomicWriteOptions = {}): Promise<void> {
    let data: string;
    try {
      data = `${JSON.stringify(value, null, 2)}\n`;
    } catch (err) {
      return Promise.reject(err);
    }
    // On a memory file system with the directory made, the whole replacement is synchronous: no
    // async frames or extra microtask rounds on the way.
    if (this.durable === false && this.ensured.has(sandbox)) {
      try {
        this.replace(path, data, options);
        return Promise.resolve();
      } catch (err) {
        if ((err as { code?: unknown }).code !== "ENOENT") return Promise.reject(err);
        this.ensured.delete(sandbox);
      }
    }
    return this.writeJsonAsync(sandbox, path, data, options);
  }

  private async writeJsonAsync(sandbox: string, path: string, data: string, options: AtomicWriteOptions): Promise<void> {
    if (!this.ensured.has(sandbox) || this.durable === undefined) await this.ensure(sandbox);
    try {
      await this.replace(path, data, options);
    } catch (err) {
      if ((err as { code?: unknown }).code !== "ENOENT") throw err;
      this.ensured.delete(sandbox);
      await this.ensure(sandbox);
      await this.replace(path, data, options);
    }
  }

  private replace(path: string, data: string, options: AtomicWriteOptions): Promise<void> | void {
    if (this.durable) return atomicWriteFile(path, data, { ...options, durable: true });
    // A memory file system: the synchronous replacement, with a per-process counter naming the
    // temp file (created exclusively, so a leftover of an earlier process is never overwritten).
    const mode = options.mode ?? 0o644;
    let prefix = this.tmpPrefixes.get(path);
    if (prefix === undefined) {
      prefix = join(dirname(path), `.${basename(path)}.${process.pid}.`);
      this.tmpPrefixes.set(path, prefix);
    }
    const exact = this.createdModeExact.get(mode);
    const learned = replaceSync(path, `${prefix}${++this.tmpSeq}.tmp`, data, mode, exact === true ? "skip" : exact === false ? "chmod" : "learn", true);
    if (learned !== undefined) this.createdModeExact.set(mode, learned);
  }
}

async function onMemoryFileSystem(dir: string): Promise<boolean> {
  try {
    return MEMORY_FS_TYPES.has(Number((await statfs(dir)).type));
  } catch {
    return false;
  }
}

export interface AtomicWriteOptions {
  /** File mode of the result, applied regardless of the umask. Default 0644. */
  readonly mode?: number;
  /** fsync the file and its directory so the replacement survives a power loss. Default true. */
  readonly durable?: boolean;
}

/**
 * Replaces `path` with `data` atomically: readers see the old content or the new content, never a
 * mix, and after a crash the file is one or the other. The temp file is removed on failure.
 */
export async function atomicWriteFile(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const mode = options.mode ?? 0o644;
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomUUID()}.tmp`);
  if (options.durable === false) {
    replaceSync(path, tmp, data, mode, "chmod", false);
    return;
  }
  let fh: FileHandle | undefined;
  try {
    fh = await open(tmp, "wx", mode);
    await fh.chmod(mode);
    await fh.writeFile(data);
    await fh.sync();
    await fh.close();
    fh = undefined;
    await rename(tmp, path);
  } catch (err) {
    await fh?.close().catch(() => {});
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await syncDirectory(dir);
}

/**
 * The same replacement without fsyncs, in synchronous calls (for memory file systems). `chmod`:
 * "chmod" sets the mode after creating the temp file (whatever the umask took); "skip" trusts that
 * the umask takes nothing from `mode`; "learn" checks that once and returns whether it holds.
 * With `retryName`, a temp name that exists already is replaced by a random one.
 */
function replaceSync(path: string, tmp: string, data: string | Uint8Array, mode: number, chmod: "chmod" | "skip" | "learn", retryName: boolean): boolean | undefined {
  let fd: number | undefined;
  let learned: boolean | undefined;
  try {
    fd = openSync(tmp, "wx", mode);
  } catch (err) {
    if (!retryName || (err as { code?: unknown }).code !== "EEXIST") throw err;
    tmp = join(dirname(tmp), `.${basename(path)}.${process.pid}.${randomUUID()}.tmp`);
    fd = openSync(tmp, "wx", mode);
  }
  try {
    if (chmod === "learn") {
      learned = (fstatSync(fd).mode & 0o7777) === mode;
      if (!learned) fchmodSync(fd, mode);
    } else if (chmod === "chmod") fchmodSync(fd, mode);
    if (typeof data === "string") {
      // Usually one write; a short write is finished from the encoded bytes.
      const written = writeSync(fd, data);
      const total = Buffer.byteLength(data);
      if (written < total) writeAll(fd, Buffer.from(data), written);
    } else writeAll(fd, data, 0);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
    return learned;
  } catch (err) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // already failing
      }
    }
    rmSync(tmp, { force: true });
    throw err;
  }
}

function writeAll(fd: number, bytes: Uint8Array, from: number): void {
  for (let off = from; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
}

/** Makes a rename durable. Some platforms cannot fsync a directory; that is not an error. */
async function syncDirectory(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch {
    // EISDIR/EPERM/EINVAL on platforms without directory fsync.
  } finally {
    await fh?.close().catch(() => {});
  }
}

/** Writes `value` as pretty JSON with a trailing newline, atomically. */
export async function atomicWriteJson(path: string, value: unknown, options: AtomicWriteOptions = {}): Promise<void> {
  await atomicWriteFile(path, `${JSON.stringify(value, null, 2)}\n`, options);
}
