// Issue 8 §2, database faults on SQLite: a disk that fills up, and a database file the gateway may
// not write. A full disk is a file-size limit on the gateway process (prlimit --fsize: writes past
// it fail with EFBIG, as on a full filesystem, with no root or mount needed). A read-only file is
// one whose mode, and its directory's, forbid writing; under root, which writes any file whatever
// its mode, the gateway runs without that power (CAP_DAC_OVERRIDE), still as root, so it reads
// the checkout wherever it lives and whatever its folder's permissions. Either way the answer is
// a clear error, and the file afterwards passes PRAGMA integrity_check and holds every acknowledged
// update.

import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { FaultStack, until } from "./fault-stack.js";
import { basePolicy } from "./update-load.js";

const FILE_LIMIT_BYTES = 3 * 1024 * 1024;

/** A policy of about 20 KB, unique to `key`. */
function bigPolicy(key: string): SandboxPolicy {
  const rules = Array.from({ length: 150 }, (_, i) => [`r${i}-${key}`, { name: `r${i}-${key}`, endpoints: [{ host: `h${i}-${key}.example.com`, ports: [443] }], binaries: [{ path: "/usr/bin/git" }] }]);
  return create(SandboxPolicySchema, { version: 1, filesystem: basePolicy().filesystem, networkPolicies: Object.fromEntries(rules) });
}

/**
 * Whether this process writes files whatever their mode: it holds CAP_DAC_OVERRIDE (capability 1),
 * as root normally does. Without /proc (not Linux), whether it is root.
 */
function writesAnyFile(): boolean {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"));
    if (m) return (BigInt(`0x${m[1]}`) & 2n) !== 0n;
  } catch {
    // no /proc
  }
  return process.getuid?.() === 0;
}

/**
 * The gateway's command prefix that takes CAP_DAC_OVERRIDE away (bounding and inheritable sets, so
 * the exec'd node has it in no set). The gateway keeps its uid and CAP_DAC_READ_SEARCH: it reads
 * anything, and writes only what the file modes allow.
 */
const WITHOUT_DAC_OVERRIDE = ["setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override", "--"];

function integrity(path: string): string {
  const db = new Database(path);
  try {
    return (db.pragma("integrity_check") as { integrity_check: string }[]).map((r) => r.integrity_check).join("; ");
  } finally {
    db.close();
  }
}

async function storedVersions(stack: FaultStack, sandbox: string): Promise<Map<number, string>> {
  const page = await stack.raw.listSandboxPolicies({ sandbox, pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(page.revisions.map((r) => [r.version, r.policyHash]));
}

/** A raw client that never retries: it shows each answer as the gateway gave it. */
function probeOf(stack: FaultStack) {
  return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken, retry: { retries: 0 } }).raw(OpenShell);
}

let stack: FaultStack | undefined;
afterEach(async () => {
  if (stack) chmodSync(stack.dir, 0o700);
  await stack?.stop();
  stack = undefined;
});

describe("SQLite disk faults", () => {
  // Fills the database under a file-size limit until a write is refused; returns what was acknowledged.
  async function fillUntilRefused(s: FaultStack) {
    const sandbox = s.sandboxes[0]!;
    await s.createSandboxes(basePolicy);
    const probe = probeOf(s);
    const acked = new Map<number, string>();
    let failure: ConnectError | undefined;
    for (let i = 0; i < 1_000 && !failure; i++) {
      try {
        const r = await probe.updateConfig({ sandbox, idempotencyKey: `fill-${i}`, policy: bigPolicy(`fill-${i}`), workspaceScope: workspaceScope() });
        acked.set(r.version, r.policyHash);
      } catch (err) {
        failure = ConnectError.from(err);
      }
    }
    return { sandbox, probe, acked, failure };
  }

  it("a write that meets a full disk is refused as UNAVAILABLE, the gateway keeps serving and recovers once there is room, and the file passes integrity_check with every acknowledged update", async () => {
    stack = await FaultStack.start({ backend: "sqlite", label: "disk-full", fleet: { prefix: "df-", count: 1 }, gatewayWrapper: ["prlimit", `--fsize=${FILE_LIMIT_BYTES}:unlimited`, "--"] });
    const s = stack;
    try {
      const { sandbox, probe, acked, failure } = await fillUntilRefused(s);
      process.stdout.write(`reliability figures (sqlite full disk): ${JSON.stringify({ limitBytes: FILE_LIMIT_BYTES, acknowledged: acked.size, code: failure && Code[failure.code], message: failure?.rawMessage })}\n`);
      expect(failure, "the file-size limit was never reached").toBeDefined();
      // Retryable and nothing committed: the same code as any database outage, never INTERNAL.
      expect(Code[failure!.code]).toBe("Unavailable");
      // Still serving: reads answer, and the gateway process is up.
      await probe.getSandbox({ name: sandbox, workspaceScope: workspaceScope() });
      expect(s.gateway.running).toBe(true);
      // Room again (the limit lifted on the running process): writes succeed without a restart.
      await new Promise<void>((res, rej) => execFile("prlimit", ["--pid", String(s.gateway.pid), "--fsize=unlimited:unlimited"], (e) => (e ? rej(e) : res())));
      const after = await probe.updateConfig({ sandbox, idempotencyKey: "after-room", policy: bigPolicy("after-room"), workspaceScope: workspaceScope() });
      acked.set(after.version, after.policyHash);

      await s.killGateway("SIGKILL");
      expect(integrity(s.sqlitePath)).toBe("ok");
      s.gatewayWrapper = [];
      await s.startGateway();
      const stored = await storedVersions(s, sandbox);
      for (const [version, hash] of acked) expect(stored.get(version), `acknowledged v${version}`).toBe(hash);
    } catch (err) {
      throw s.keepFor(err);
    }
  }, 90_000);

  // The caller only learns "unavailable"; the operator must learn why from the log.
  it("the gateway logs why a write was refused when the disk is full", async () => {
    stack = await FaultStack.start({ backend: "sqlite", label: "disk-full-log", fleet: { prefix: "dl-", count: 1 }, gatewayWrapper: ["prlimit", `--fsize=${FILE_LIMIT_BYTES}:unlimited`, "--"] });
    const s = stack;
    const { failure } = await fillUntilRefused(s);
    expect(failure).toBeDefined();
    // Past a file-size limit the write fails with EFBIG, which SQLite reports as an I/O error.
    const said = () => JSON.stringify(s.gateway.json().filter((l) => l.level === "warn" || l.level === "error" || l.level === "fatal"));
    await until(() => /SQLITE_FULL|SQLITE_IOERR/.test(said()), "the gateway to log why", 10_000).catch(() => undefined);
    expect(said()).toMatch(/SQLITE_FULL|SQLITE_IOERR/);
  }, 90_000);

  it("a database file the gateway may not write yields a clear error, and the file is left unchanged, intact and complete", async () => {
    stack = await FaultStack.start({ backend: "sqlite", label: "read-only", fleet: { prefix: "ro-", count: 1 } });
    const s = stack;
    try {
      const sandbox = s.sandboxes[0]!;
      await s.createSandboxes(basePolicy);
      const acked = new Map<number, string>();
      for (let i = 0; i < 5; i++) {
        const r = await s.client.updatePolicy({ sandbox, policy: bigPolicy(`ro-${i}`), idempotencyKey: `ro-${i}` });
        acked.set(r.policyVersion, r.policyHash);
      }
      await s.killGateway("SIGTERM");
      const db = s.sqlitePath;
      const digest = () => createHash("sha256").update(readFileSync(db)).digest("hex");
      const before = digest();
      // Neither the file nor its directory (SQLite's journal and WAL index live there) is writable.
      chmodSync(db, 0o444);
      chmodSync(dirname(db), 0o555);
      if (writesAnyFile()) s.gatewayWrapper = WITHOUT_DAC_OVERRIDE;
      const g = s.spawnGateway();
      // Either the gateway refuses to start and says why, or it starts and refuses writes clearly.
      const started = await until(
        async () => {
          if (!g.running) return "exited";
          try {
            return (await fetch(`${s.url}/healthz`)).ok ? "serving" : false;
          } catch {
            return false;
          }
        },
        "the gateway to exit or serve",
        60_000,
      );
      let answer: string;
      if (started === "exited") {
        const { code } = await g.exited;
        expect(code).not.toBe(0);
        // The gateway itself said why, in its one plain startup line (not, say, its wrapper or a
        // module it could not load).
        const said = g.lines.filter((l) => l.startsWith("openshell-gateway: cannot open the database "));
        expect(said, `the gateway's startup error line, in:\n${g.lines.join("\n")}`).toHaveLength(1);
        expect(said[0]).toContain(db);
        answer = said[0]!;
      } else {
        const err = await probeOf(s)
          .updateConfig({ sandbox, idempotencyKey: "ro-write", policy: bigPolicy("ro-write"), workspaceScope: workspaceScope() })
          .then(() => undefined, (e: unknown) => ConnectError.from(e));
        expect(err, "a write to a read-only database succeeded").toBeDefined();
        answer = `${Code[err!.code]}: ${err!.rawMessage}`;
        expect(err!.code).not.toBe(Code.Internal);
      }
      process.stdout.write(`reliability figures (sqlite read-only): ${JSON.stringify({ gateway: started, answer: answer.slice(-400) })}\n`);
      expect(answer).toMatch(/read-?only|permission|EACCES|unable to open/i);
      await g.kill("SIGKILL");

      chmodSync(dirname(db), 0o700);
      chmodSync(db, 0o644);
      expect(digest(), "the read-only file was changed").toBe(before);
      expect(integrity(db)).toBe("ok");
      s.gatewayWrapper = [];
      await s.startGateway();
      const stored = await storedVersions(s, sandbox);
      for (const [version, hash] of acked) expect(stored.get(version), `acknowledged v${version}`).toBe(hash);
    } catch (err) {
      throw s.keepFor(err);
    }
  }, 90_000);
});
