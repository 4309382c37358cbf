// The browser project's Chromium setup (test/setup/chromium.ts) with a fake machine: when it
// installs, what it runs, and the one line it fails with otherwise.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CHROMIUM, ChromiumSetupError, ensureChromium, planChromium, withLockFile, type ChromiumHost } from "../setup/chromium.js";

interface Fake extends ChromiumHost {
  readonly runs: string[];
  readonly said: string[];
  locked: number;
  /** Times the install output was removed. */
  discarded: number;
}

function fakeHost(o: { present?: boolean; uid?: number | undefined; aptGet?: boolean; env?: Record<string, string>; exitCodes?: (number | null)[]; installs?: boolean; presentAfterLock?: boolean }): Fake {
  let present = o.present ?? false;
  const codes = [...(o.exitCodes ?? [])];
  const host: Fake = {
    runs: [],
    said: [],
    locked: 0,
    discarded: 0,
    present: () => present,
    uid: () => ("uid" in o ? o.uid : 0),
    aptGet: () => o.aptGet ?? true,
    env: (name) => o.env?.[name],
    run: async (command, args, env) => {
      host.runs.push(`${Object.entries(env).map(([k, v]) => `${k}=${v} `).join("")}${command} ${args.join(" ")}`);
      const code = codes.length > 0 ? codes.shift()! : 0;
      if (code === 0 && args.includes("install") && (o.installs ?? true)) present = true;
      return { code, signal: code === null ? "SIGTERM" : null };
    },
    log: { path: "/tmp/install.log", tail: () => "E: Unable to locate package chromium", discard: () => void host.discarded++ },
    withLock: async (fn) => {
      host.locked++;
      if (o.presentAfterLock) present = true;
      return fn();
    },
    say: (line) => host.said.push(line),
    now: () => 0,
  };
  return host;
}

async function failure(host: ChromiumHost): Promise<ChromiumSetupError> {
  const err = await ensureChromium(host).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChromiumSetupError);
  // A failure's message points at the install output: it stays.
  expect((host as Partial<Fake>).discarded ?? 0).toBe(0);
  const e = err as ChromiumSetupError;
  // One line, and the stack Vitest prints is that line too.
  expect(e.message).not.toContain("\n");
  expect(e.stack).toBe(`ChromiumSetupError: ${e.message}`);
  return e;
}

describe("Chromium setup of the browser tests", () => {
  it("decides: present, install (root with apt-get, allowed), or fail", () => {
    const base = { present: false, uid: 0, aptGet: true, installAllowed: true };
    expect(planChromium({ ...base, present: true, uid: 1000, aptGet: false })).toEqual({ kind: "present" });
    expect(planChromium(base)).toEqual({ kind: "install" });
    for (const s of [{ ...base, uid: 1000 }, { ...base, uid: undefined }, { ...base, aptGet: false }, { ...base, installAllowed: false }]) {
      expect(planChromium(s).kind).toBe("fail");
    }
  });

  it("does nothing when Chromium is present", async () => {
    const host = fakeHost({ present: true, uid: 1000, aptGet: false });
    expect(await ensureChromium(host)).toBe("present");
    expect(host.runs).toEqual([]);
    expect(host.said).toEqual([]);
    expect(host.locked).toBe(0);
  });

  it("as root with apt-get, installs Debian's chromium under the lock, saying so in one line", async () => {
    const host = fakeHost({});
    expect(await ensureChromium(host)).toBe("installed");
    expect(host.locked).toBe(1);
    expect(host.runs).toEqual([
      "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update",
      "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y chromium",
    ]);
    expect(host.said[0]).toMatch(/^Chromium is missing \(\/usr\/bin\/chromium\): installing Debian's chromium package/);
    expect(host.said.slice(1)).toEqual([`Chromium installed at ${CHROMIUM} in 0 s`]);
    // Its output was only for explaining a failure.
    expect(host.discarded).toBe(1);
  });

  it("installs nothing when another run installed it while this one waited for the lock", async () => {
    const host = fakeHost({ presentAfterLock: true });
    expect(await ensureChromium(host)).toBe("present");
    expect(host.runs).toEqual([]);
  });

  it("not root: fails at once with one line naming the package, running nothing", async () => {
    const host = fakeHost({ uid: 1000 });
    const e = await failure(host);
    expect(e.message).toBe("Chromium is missing: install it with `apt-get install -y chromium` (Debian package) so /usr/bin/chromium exists (this test run installs it only when it runs as root)");
    expect(host.runs).toEqual([]);
    expect(host.locked).toBe(0);
  });

  it("root without apt-get, or with OSC_CHROMIUM_INSTALL=0: fails at once, running nothing", async () => {
    const noApt = fakeHost({ aptGet: false });
    expect((await failure(noApt)).message).toMatch(/^Chromium is missing: install a Chromium so \/usr\/bin\/chromium exists \(apt-get is not available/);
    const forbidden = fakeHost({ env: { OSC_CHROMIUM_INSTALL: "0" } });
    expect((await failure(forbidden)).message).toMatch(/^Chromium is missing: install it with `apt-get install -y chromium` .*OSC_CHROMIUM_INSTALL=0/);
    expect([...noApt.runs, ...forbidden.runs]).toEqual([]);
  });

  it("a failing apt-get step ends the run with one line: the step, its exit, apt's last words and the log", async () => {
    const host = fakeHost({ exitCodes: [0, 100] });
    const e = await failure(host);
    expect(e.message).toBe(
      "Chromium is missing and `apt-get install -y chromium` exited with 100 (E: Unable to locate package chromium); install Debian's chromium package so /usr/bin/chromium exists (full output: /tmp/install.log)",
    );
    expect(host.runs).toHaveLength(2);
    expect((await failure(fakeHost({ exitCodes: [null] }))).message).toMatch(/^Chromium is missing and `apt-get update` was stopped by SIGTERM/);
  });

  it("an install that leaves no /usr/bin/chromium fails with one line", async () => {
    expect((await failure(fakeHost({ installs: false }))).message).toMatch(/^apt-get installed the chromium package, but \/usr\/bin\/chromium does not exist/);
  });
});

describe("the install lock", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("lets one holder in at a time, and removes the lock file afterwards", async () => {
    dir = mkdtempSync(join(tmpdir(), "osc-chromium-lock-"));
    const lock = join(dir, "lock");
    const said: string[] = [];
    const order: string[] = [];
    let inside = 0;
    const holder = (name: string) =>
      withLockFile(lock, async () => {
        inside++;
        expect(inside).toBe(1);
        expect(readFileSync(lock, "utf8")).toBe(String(process.pid));
        order.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 100));
        order.push(`${name} out`);
        inside--;
        return name;
      }, (l) => said.push(l));
    expect(await Promise.all([holder("a"), holder("b")])).toEqual(["a", "b"]);
    expect(order).toEqual(["a in", "a out", "b in", "b out"]);
    expect(said).toEqual([`waiting for another test run (pid ${process.pid}) that is installing Chromium (lock ${lock})`]);
    expect(() => readFileSync(lock)).toThrow(/ENOENT/);
  });

  it("takes over a lock whose owner is gone", async () => {
    dir = mkdtempSync(join(tmpdir(), "osc-chromium-lock-"));
    const lock = join(dir, "lock");
    writeFileSync(lock, "2147483646"); // no such process
    const said: string[] = [];
    expect(await withLockFile(lock, async () => "ran", (l) => said.push(l))).toBe("ran");
    expect(said).toEqual([]);
  });

  it("gives up with one line when a live owner never lets go", async () => {
    dir = mkdtempSync(join(tmpdir(), "osc-chromium-lock-"));
    const lock = join(dir, "lock");
    writeFileSync(lock, String(process.pid));
    const err = await withLockFile(lock, async () => "ran", () => {}, 600).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChromiumSetupError);
    expect((err as Error).message).toMatch(/another test run has held the install lock/);
  });
});
