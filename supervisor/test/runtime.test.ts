// The state directory and crash-safe writes (runtime.ts).

import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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

describe("atomic writes without fsync (memory file systems)", () => {
  it("replaces the file, applies the mode regardless of the umask, and leaves no temp file", async () => {
    const path = join(dir, "provider-env.json");
    writeFileSync(path, "old");
    const old = process.umask(0o000);
    try {
      await atomicWriteFile(path, "secret", { mode: 0o600, durable: false });
    } finally {
      process.umask(old);
    }
    expect(readFileSync(path, "utf8")).toBe("secret");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["provider-env.json"]);
  });

  it("keeps the old content and removes the temp file when the rename fails", async () => {
    const target = join(dir, "target");
    mkdirSync(join(target, "occupied"), { recursive: true });
    await expect(atomicWriteFile(target, "new", { durable: false })).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(["target"]);
    expect(readdirSync(target)).toEqual(["occupied"]);
  });

  it("never lets a reader see a partial document while writers race", async () => {
    const path = join(dir, "effective.json");
    const big = (n: number) => ({ n, filler: "x".repeat(200_000) });
    await atomicWriteJson(path, big(0), { durable: false });
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
    for (let i = 0; i < 20; i++) {
      await atomicWriteJson(path, big(i + 1), { durable: i % 2 === 0 });
      await new Promise((r) => setImmediate(r));
    }
    stop = true;
    await reader;
    expect(reads).toBeGreaterThan(1);
    expect(JSON.parse(readFileSync(path, "utf8")).n).toBe(20);
    expect(readdirSync(dir)).toEqual(["effective.json"]);
  });
});

describe("state directory", () => {
  it("writes a sandbox's documents, making its directory again if it was removed", async () => {
    for (const durable of [true, false]) {
      const root = join(dir, `root-${durable}`);
      const state = new StateDir(root, { durable });
      await state.writeJson("s1", state.effectivePath("s1"), { a: 1 });
      expect(JSON.parse(readFileSync(state.effectivePath("s1"), "utf8"))).toEqual({ a: 1 });
      expect(statSync(join(root, "s1")).mode & 0o777).toBe(0o700);
      rmSync(root, { recursive: true, force: true });
      await state.writeJson("s1", state.providerEnvPath("s1"), { b: 2 }, { mode: 0o600 });
      expect(JSON.parse(readFileSync(state.providerEnvPath("s1"), "utf8"))).toEqual({ b: 2 });
      expect(statSync(state.providerEnvPath("s1")).mode & 0o777).toBe(0o600);
      expect(readdirSync(join(root, "s1"))).toEqual(["provider-env.json"]);
    }
  });

  it("skips fsync only on a memory file system", async () => {
    const onDisk = new StateDir(dir);
    await onDisk.ensure("s1");
    const expected = !["tmpfs", "ramfs"].includes(fsTypeOf(dir));
    expect((onDisk as unknown as { durable: boolean }).durable).toBe(expected);
    if (existsSync("/dev/shm")) {
      const shm = mkdtempSync("/dev/shm/osc-runtime-");
      try {
        const state = new StateDir(shm);
        await state.ensure("s1");
        expect((state as unknown as { durable: boolean }).durable).toBe(fsTypeOf(shm) !== "tmpfs");
      } finally {
        rmSync(shm, { recursive: true, force: true });
      }
    }
  });

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

/** The file system type of `path`, as stat(1) names it ("tmpfs", "ext2/ext3", …), or "" without stat(1). */
function fsTypeOf(path: string): string {
  try {
    return execFileSync("stat", ["-f", "-c", "%T", path], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}
