// The effective log: each apply appends one line to <sandbox>/effective.log, folded into
// effective.json at a byte bound, after an idle moment, past the open-log bound and at close;
// readers always get the newest complete document.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readEffective } from "../src/effective-state.js";
import { StateDir } from "../src/runtime.js";
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

  it("keeps at most the bound of logs open, folding the least recently written first", async () => {
    const state = new StateDir(dir, { durable, effectiveLog: { maxOpen: 2, idleMs: 60_000 } });
    for (const name of ["a", "b", "a", "c"]) await state.appendEffective(name, doc(name.charCodeAt(0), name));
    await settle(20);
    // "b" was written least recently when "c" opened.
    expect(readdirSync(join(dir, "b"))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("b"))).toEqual(doc(98, "b"));
    expect(existsSync(state.effectiveLogPath("a"))).toBe(true);
    expect(existsSync(state.effectiveLogPath("c"))).toBe(true);
    for (const name of ["a", "b", "c"]) expect(state.readEffective(name)).toEqual(doc(name.charCodeAt(0), name));
    await state.close();
    for (const name of ["a", "b", "c"]) expect(readdirSync(join(dir, name))).toEqual(["effective.json"]);
  });

  it("carries on from a log a killed process left, skipping a last line cut short", async () => {
    mkdirSync(join(dir, "s1"), { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "s1", "effective.json"), `${JSON.stringify(doc(1))}\n`);
    // Version 2 was written whole; version 3 was being written when the power went.
    writeFileSync(join(dir, "s1", "effective.log"), `${JSON.stringify(doc(2))}\n${JSON.stringify(doc(3)).slice(0, 25)}`);
    expect(readEffective(dir, "s1")).toEqual(doc(2));
    const state = new StateDir(dir, { durable, effectiveLog: { idleMs: 60_000 } });
    await state.appendEffective("s1", doc(4));
    const raw = lines(state.effectiveLogPath("s1"));
    expect(raw).toHaveLength(3);
    expect(JSON.parse(raw[2]!)).toEqual(doc(4));
    expect(state.readEffective("s1")).toEqual(doc(4));
    await state.close();
    expect(readdirSync(join(dir, "s1"))).toEqual(["effective.json"]);
    expect(readJson(state.effectivePath("s1"))).toEqual(doc(4));
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
