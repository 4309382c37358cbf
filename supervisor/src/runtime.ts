// The simulated sandbox's on-disk state: one directory per sandbox under the state dir, and
// crash-safe file replacement (write a temp file, fsync it, rename it over the target, fsync the
// directory) so a reader never sees a partial effective.json or provider-env.json.

import { randomUUID } from "node:crypto";
import { mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/** Names usable as one path segment: letters, digits, '.', '_' and '-', not starting with '.'. */
const SAFE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/;

export function isSafeSandboxName(name: string): boolean {
  return SAFE_SEGMENT.test(name);
}

/** Paths of one process's state directory. */
export class StateDir {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  sandboxDir(sandbox: string): string {
    if (!isSafeSandboxName(sandbox)) throw new Error(`sandbox name ${JSON.stringify(sandbox)} cannot be used as a directory name`);
    return join(this.root, sandbox);
  }

  /** The effective policy and settings in force. */
  effectivePath(sandbox: string): string {
    return join(this.sandboxDir(sandbox), "effective.json");
  }

  /** The installed provider environment (mode 0600; holds secrets). */
  providerEnvPath(sandbox: string): string {
    return join(this.sandboxDir(sandbox), "provider-env.json");
  }

  /** The gateway's desired configuration, stored but not enforced while a local override is in force. */
  gatewayDesiredPath(sandbox: string): string {
    return join(this.sandboxDir(sandbox), "gateway-desired.json");
  }

  /** Creates the sandbox directory (mode 0700). */
  async ensure(sandbox: string): Promise<string> {
    const dir = this.sandboxDir(sandbox);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }
}

export interface AtomicWriteOptions {
  /** File mode of the result, applied regardless of the umask. Default 0644. */
  readonly mode?: number;
}

/**
 * Replaces `path` with `data` atomically: readers see the old content or the new content, never a
 * mix, and after a crash the file is one or the other. The temp file is removed on failure.
 */
export async function atomicWriteFile(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const mode = options.mode ?? 0o644;
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomUUID()}.tmp`);
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
