// The state directory and crash-safe writes (runtime.ts).

import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { atomicWriteFile, atomicWriteJson, isSafeSandboxName, StateDir } from "../src/runtime.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "osc-runtime-"));
});
afterEach(() => {
  chmodSync(dir, 0o755);
  rmSync(dir, { recursive: true, force: true });
});

describe("atomic writes", () => {
  it("replaces the file with the new content and leaves no temp file behind", async () => {
    const path = join(dir, "effective.json");
    writeFileSync(path, "old");
    await atomicWriteJson(path, { a: 1 });
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ a: 1 });
    expect(readdirSync(dir)).toEqual(["effective.json"]);
  });

  it("creates the file with the requested mode regardless of the umask", async () => {
    const path = join(dir, "provider-env.json");
    const old = process.umask(0o000);
    try {
      await atomicWriteFile(path, "secret", { mode: 0o600 });
    } finally {
      process.umask(old);
    }
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("keeps the old content and removes the temp file when the rename fails", async () => {
    const target = join(dir, "target");
    mkdirSync(join(target, "occupied"), { recursive: true }); // renaming a file over a non-empty directory fails
    await expect(atomicWriteFile(target, "new")).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(["target"]);
    expect(readdirSync(target)).toEqual(["occupied"]);
  });

  it("never lets a reader see a partial document while writers race", async () => {
    const path = join(dir, "effective.json");
    const big = (n: number) => ({ n, filler: "x".repeat(200_000) });
    await atomicWriteJson(path, big(0));
    let reads = 0;
    let stop = false;
    const reader = (async () => {
      while (!stop) {
        const doc = JSON.parse(readFileSync(path, "utf8")) as { n: number; filler: string };
        expect(doc.filler).toHaveLength(200_000);
        reads += 1;
        await new Promise((r) => setImmediate(r));
      }
    })();
    await Promise.all(Array.from({ length: 20 }, (_, i) => atomicWriteJson(path, big(i + 1))));
    stop = true;
    await reader;
    expect(reads).toBeGreaterThan(0);
    expect(readdirSync(dir)).toEqual(["effective.json"]);
  });
});

describe("state directory", () => {
  it("lays out one private directory per sandbox", async () => {
    const state = new StateDir(dir);
    const d = await state.ensure("fleet-0001");
    expect(d).toBe(join(dir, "fleet-0001"));
    expect(statSync(d).mode & 0o777).toBe(0o700);
    expect(state.effectivePath("fleet-0001")).toBe(join(dir, "fleet-0001", "effective.json"));
    expect(state.providerEnvPath("fleet-0001")).toBe(join(dir, "fleet-0001", "provider-env.json"));
  });

  it("refuses sandbox names that would escape the state directory", () => {
    const state = new StateDir(dir);
    for (const bad of ["..", ".", "../x", "a/b", "", ".hidden"]) {
      expect(isSafeSandboxName(bad)).toBe(false);
      expect(() => state.sandboxDir(bad)).toThrow();
    }
    expect(isSafeSandboxName("7d0c3a51-3e1b-4c77-9d7a-0b8f8f1c2d3e")).toBe(true);
  });
});
