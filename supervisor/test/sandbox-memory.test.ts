// What a simulated sandbox keeps in memory (sandbox.ts): the configuration in force, not the
// snapshots it replaced. The configuration in force once held the whole apply input, which held
// the configuration before it, and so on: every snapshot a sandbox ever applied stayed alive.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { ConfigApplyOutcome } from "openshell-config/raw";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.js";
import { StateDir } from "../src/runtime.js";
import { SimulatedSandbox } from "../src/sandbox.js";
import { policy, providerSnapshot, sandboxSnapshot } from "./support/snapshots.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "osc-sandbox-memory-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** How many of `refs` a full collection leaves alive (after the current task, which keeps WeakRef targets). */
async function alive(refs: readonly WeakRef<object>[]): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return refs.filter((r) => r.deref() !== undefined).length;
}

describe("a simulated sandbox's memory", () => {
  it("keeps no sandbox or provider snapshot it has replaced", async () => {
    const stateDir = new StateDir(dir);
    const sandbox = new SimulatedSandbox({ name: "s1", stateDir, logger: createLogger({ level: "warn", sink: () => {} }) });
    await sandbox.start();
    const snapshots: WeakRef<object>[] = [];
    const providers: WeakRef<object>[] = [];
    const updates = 60;
    for (let i = 1; i <= updates; i++) {
      const snap = sandboxSnapshot({ version: i, policy: policy({ [`rule-${i}`]: [{ host: `h${i}.example.com`, port: 443 }] }) });
      // A policy change resends the provider environment with the new policy hash only.
      const provider = providerSnapshot(1n, { REGION: "eu" });
      provider.policyHash = snap.policyHash;
      snapshots.push(new WeakRef(snap));
      providers.push(new WeakRef(provider));
      expect((await sandbox.applySandboxConfig(snap)).outcome).toBe(ConfigApplyOutcome.APPLIED);
      expect((await sandbox.applyProviderEnvironment(provider)).outcome).toBe(ConfigApplyOutcome.APPLIED);
    }
    expect(sandbox.activeRevision?.policyVersion).toBe(updates);
    // At most the latest of each may still be referenced (the configuration in force).
    expect(await alive(snapshots.slice(0, -1))).toBe(0);
    expect(await alive(providers.slice(0, -1))).toBe(0);
    await stateDir.close();
  });
});
