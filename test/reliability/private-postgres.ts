// A private PostgreSQL 15 cluster for the database-fault tests: initdb into a temp directory,
// pg_ctl on a free port with its socket in that directory, so a test can stop and restart the
// server under load without touching the shared server on 5432. PostgreSQL refuses to run as
// root, so under root the cluster runs as the `postgres` user.

import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./fault-stack.js";

const run = promisify(execFile);
const BIN = process.env.OSC_PG_BIN ?? "/usr/lib/postgresql/15/bin";

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  if (!line) throw new Error("running as root, and there is no postgres user to run a private cluster as");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

export class PrivateCluster {
  readonly dataDir: string;
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly as: { uid: number; gid: number } | undefined,
  ) {
    this.dataDir = join(dir, "data");
  }

  /** The URL of database `name` on this cluster. */
  url(name = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${name}`;
  }

  private exec(tool: string, args: readonly string[]) {
    return run(join(BIN, tool), args, { ...(this.as ?? {}), cwd: this.dir, timeout: 60_000 });
  }

  static async create(): Promise<PrivateCluster> {
    const as = postgresUser();
    const dir = mkdtempSync(join(tmpdir(), "osc-pg-"));
    if (as) chownSync(dir, as.uid, as.gid);
    const c = new PrivateCluster(dir, await freePort(), as);
    await c.exec("initdb", ["-D", c.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"]);
    await c.start();
    return c;
  }

  async start(): Promise<void> {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c max_connections=100`;
    await this.exec("pg_ctl", ["-D", this.dataDir, "-l", join(this.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"]);
  }

  /** `immediate` is a crash (recovery from the WAL at the next start); `fast` a clean shutdown. */
  async stop(mode: "immediate" | "fast" = "immediate"): Promise<void> {
    await this.exec("pg_ctl", ["-D", this.dataDir, "-m", mode, "-w", "-t", "60", "stop"]);
  }

  async destroy(): Promise<void> {
    await this.stop("immediate").catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}
