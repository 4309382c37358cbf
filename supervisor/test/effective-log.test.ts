// The effective log: each apply appends one line to <sandbox>/effective.log, folded into
// effective.json at a byte bound, after an idle moment, past the open-log bound and at close;
// readers always get the newest complete document.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EffectiveLogs } from "../src/effective-log.js";
import { readEffective } from "../src/effective-state.js";
import { atomicWriteJson, StateDir } from "../src/runtime.js";
import { eventually, readJson } from "./support/eventually.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "osc-effective-log-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const doc = (v: number, sandbox = "s1") => ({ sandbox, source: "gateway", revision: { policyVersion: v }, policy: { version: v } });
const lines = (path: string) => readFileSync(path, "utf8").split("\n").filter((l) => l !== "");
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  ["a memory file system (synchronous appends)", false],
  ["a disk (each append fdatasync'ed)", true],
])("effective log on %s", (_, durable) => {
  it("records each apply as one line of effective.log, and a reader gets the newest before any fold", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 60_000 } });
    for (const v of [1, 2, 3]) await state.appendEffective("s1", doc(v));
    expect(lines(state.effectiveLogPath("s1")).map((l) => JSON.parse(l))).toEqual([doc(1), doc(2), doc(3)]);
    expect(existsSync(state.effectivePath("s1"))).toBe(false);
    expect(state.readEffective("s1")).toEqual(doc(3));
    expect(readEffective(dir, "s1")).toEqual(doc(3));
    await state.close();
  });

  it("folds the log into effective.json at its byte bound, so it never holds more than the bound and one line", async () => {
    const bound = 300;
    const state = new StateDir(dir, { durable, effectiveLog: { compactBytes: bound, idleMs: 60_000 } });
    const lineBytes = Buffer.byteLength(`${JSON.stringify(doc(10))}\n`);
    let folds = 0;
    for (let v = 10; v < 40; v++) {
      await state.appendEffective("s1", doc(v));
      const log = state.effectiveLogPath("s1");
      const size = existsSync(log) ? statSync(log).size : 0;
      expect(size).toBeLessThan(bound + lineBytes);
      if (size === 0) {
        folds++;
        expect(readJson(state.effectivePath("s1"))).toEqual(doc(v));
      }
      expect(state.readEffective("s1")).toEqual(doc(v));
    }
    expect(folds).toBeGreaterThanOrEqual(5);
    await state.close();
  });

  it("folds and closes an idle sandbox's log, leaving only an up-to-date effective.json", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 50 } });
    await state.appendEffective("s1", doc(1));
    await state.appendEffective("s1", doc(2));
    await eventually(() => expect(readdirSync(join(dir, "s1"))).toEqual(["effective.json"]), 5_000);
    expect(readJson(state.effectivePath("s1"))).toEqual(doc(2));
    // Pretty-printed, as a person reads it.
    expect(readFileSync(state.effectivePath("s1"), "utf8")).toBe(`${JSON.stringify(doc(2), null, 2)}\n`);
    await state.appendEffective("s1", doc(3));
    expect(state.readEffective("s1")).toEqual(doc(3));
    await state.close();
    expect(readdirSync(join(dir, "s1"))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("s1"))).toEqual(doc(3));
  });

  it("keeps at most the bound of logs open: past it, an apply replaces effective.json directly", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { maxOpen: 2, idleMs: 60_000 } });
    for (const name of ["a", "b", "c", "a", "c"]) await state.appendEffective(name, doc(name.charCodeAt(0), name));
    expect(existsSync(state.effectiveLogPath("a"))).toBe(true);
    expect(existsSync(state.effectiveLogPath("b"))).toBe(true);
    expect(readdirSync(join(dir, "c"))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("c"))).toEqual(doc(99, "c"));
    for (const name of ["a", "b", "c"]) expect(state.readEffective(name)).toEqual(doc(name.charCodeAt(0), name));
    await state.close();
    for (const name of ["a", "b", "c"]) expect(readdirSync(join(dir, name))).toEqual(["effective.json"]);
  });

  it("folds a log a killed process left when the sandbox starts, skipping a last line cut short", async () => {
    mkdirSync(join(dir, "s1"), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "s1", "effective.json"), `${JSON.stringify(doc(1))}\n`);
    // Version 2 was written whole; version 3 was being written when the power went.
    writeFileSync(join(dir, "s1", "effective.log"), `${JSON.stringify(doc(2))}\n${JSON.stringify(doc(3)).slice(0, 25)}`);
    expect(readEffective(dir, "s1")).toEqual(doc(2));
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 60_000 } });
    await state.ensure("s1");
    expect(readdirSync(join(dir, "s1"))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("s1"))).toEqual(doc(2));
    await state.appendEffective("s1", doc(4));
    expect(lines(state.effectiveLogPath("s1")).map((l) => JSON.parse(l))).toEqual([doc(4)]);
    expect(state.readEffective("s1")).toEqual(doc(4));
    await state.close();
    expect(readJson(state.effectivePath("s1"))).toEqual(doc(4));
  });

  it("appends after a log left without one whole line: the damaged bytes stay one skipped line", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 60_000 } });
    await state.ensure("s1");
    // Left by a process killed in the middle of its first write, after this one's start.
    writeFileSync(state.effectiveLogPath("s1"), JSON.stringify(doc(1)).slice(0, 10));
    await state.appendEffective("s1", doc(2));
    expect(readFileSync(state.effectiveLogPath("s1"), "utf8").split("\n")).toEqual([JSON.stringify(doc(1)).slice(0, 10), JSON.stringify(doc(2)), ""]);
    expect(state.readEffective("s1")).toEqual(doc(2));
    await state.close();
  });

  it("after a folded log's directory is removed, the next apply makes it again and every later one succeeds", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 50 } });
    await state.appendEffective("s1", doc(1));
    await eventually(() => expect(readdirSync(join(dir, "s1"))).toEqual(["effective.json"]), 5_000);
    rmSync(join(dir, "s1"), { recursive: true, force: true });
    for (let v = 2; v < 6; v++) {
      await state.appendEffective("s1", doc(v));
      expect(readEffective(dir, "s1")).toEqual(doc(v));
    }
    await state.close();
  });

  it("once closed, nothing comes later to make a removed state directory again", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 30 } });
    await state.appendEffective("s1", doc(1));
    await state.close();
    rmSync(dir, { recursive: true, force: true });
    await settle(100);
    expect(existsSync(dir)).toBe(false);
  });

  it("close() folds every log, including folds an idle timer already began, and later applies leave no log", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 30 } });
    for (let i = 0; i < 50; i++) await state.appendEffective(`s${i}`, doc(i, `s${i}`));
    await settle(31);
    const closing = state.close();
    // An apply still in flight when the process stops.
    const late = state.appendEffective("s0", doc(100, "s0"));
    await closing;
    await late;
    for (let i = 0; i < 50; i++) expect(readdirSync(join(dir, `s${i}`))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("s0"))).toEqual(doc(100, "s0"));
  });

  it("makes a removed state directory again, with the newest document, by the next fold", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 50 } });
    await state.appendEffective("s1", doc(1));
    rmSync(dir, { recursive: true, force: true });
    await state.appendEffective("s1", doc(2));
    await eventually(() => expect(readEffective(dir, "s1")).toEqual(doc(2)), 5_000);
    expect(statSync(join(dir, "s1")).mode & 0o777).toBe(0o700);
    await state.close();
  });
});

describe("effective log ordering off memory file systems", () => {
  it("an idle fold that comes due while an append is still syncing never puts an older document back", async () => {
    // A slow directory sync (a loaded disk) keeps the append of version 1 in flight past the idle time.
    let slowSync = false;
    const state = new StateDir(dir, { durable: true });
    await state.ensure("s1");
    const logs = new EffectiveLogs(
      {
        logPath: (s) => state.effectiveLogPath(s),
        replaceEffective: (s, d) => atomicWriteJson(state.effectivePath(s), d, { durable: true }),
        syncDirectory: async () => {
          if (slowSync) await settle(300);
        },
      },
      { compactBytes: 100, idleMs: 100, maxOpen: 256 },
    );
    await logs.append("s1", { v: 0, pad: "x".repeat(200) }); // past the byte bound: folded at once
    slowSync = true;
    await logs.append("s1", { v: 1 });
    slowSync = false;
    await settle(20);
    await logs.append("s1", { v: 2 });
    await settle(60);
    await logs.append("s1", { v: 3 });
    await settle(60);
    // Version 3 was reported written: it is what a reader (or a process killed now) finds.
    expect(readEffective(dir, "s1")).toEqual({ v: 3 });
    expect(existsSync(state.effectiveLogPath("s1"))).toBe(true);
    await logs.close();
    expect(readJson(state.effectivePath("s1"))).toEqual({ v: 3 });
  });
});

describe("effective log readers", () => {
  it("prefer the log's newest complete line, then effective.json, and have nothing before either", () => {
    expect(readEffective(dir, "s1")).toBeUndefined();
    mkdirSync(join(dir, "s1"));
    writeFileSync(join(dir, "s1", "effective.json"), JSON.stringify(doc(1), null, 2));
    expect(readEffective(dir, "s1")).toEqual(doc(1));
    // An empty log (folded and not yet removed) defers to effective.json.
    writeFileSync(join(dir, "s1", "effective.log"), "");
    expect(readEffective(dir, "s1")).toEqual(doc(1));
    // A damaged last line (zeros after a power loss, ended by the next process's newline) is skipped.
    writeFileSync(join(dir, "s1", "effective.log"), `${JSON.stringify(doc(2))}\n\0\0\0\0\n`);
    expect(readEffective(dir, "s1")).toEqual(doc(2));
  });
});
