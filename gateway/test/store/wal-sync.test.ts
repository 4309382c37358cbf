// When a COMMIT's WAL fsync blocks the main thread and when it goes to the thread pool.
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { INLINE_SYNC_MAX_MS, RECENT, createWalSync } from "../../src/store/sqlite/wal-sync.js";

/** A clock the fake syncs advance by the time each one "takes". */
function harness(durations: { inline?: number; async?: number } = {}) {
  let t = 0;
  const calls: string[] = [];
  const failNext = { inline: false, async: false };
  const sync = createWalSync({
    now: () => t,
    syncInline: () => {
      calls.push("inline");
      t += durations.inline ?? 0.2;
      if (failNext.inline) throw new Error("EIO: i/o error");
    },
    syncAsync: async () => {
      calls.push("async");
      t += durations.async ?? 0.3;
      if (failNext.async) throw new Error("EIO: i/o error");
    },
  });
  return { sync, calls, failNext, setDurations: (d: typeof durations) => Object.assign(durations, d) };
}

describe("WAL sync", () => {
  it("a lone commit on a fast disk syncs on the main thread", async () => {
    const h = harness();
    await h.sync.sync(3, true);
    await h.sync.sync(3, true);
    expect(h.calls).toEqual(["inline", "inline"]);
  });

  it("a commit with other work queued syncs on the thread pool", async () => {
    const h = harness();
    await h.sync.sync(3, false);
    expect(h.calls).toEqual(["async"]);
  });

  it("after one slow fsync, lone commits go to the thread pool until the last few were all fast", async () => {
    const h = harness({ inline: 20, async: 0.1 });
    await h.sync.sync(3, true);
    expect(h.calls).toEqual(["inline"]);
    // One 20 ms fsync: the loop must not block again until RECENT fast ones in a row.
    h.setDurations({ inline: 0.2 });
    for (let i = 0; i < RECENT + 1; i++) await h.sync.sync(3, true);
    expect(h.calls).toEqual(["inline", ...Array(RECENT).fill("async"), "inline"]);
  });

  it("a slow fsync among fast ones starts the count again", async () => {
    const h = harness({ inline: 20, async: 0.1 });
    await h.sync.sync(3, true);
    for (let i = 0; i < RECENT - 1; i++) await h.sync.sync(3, true);
    h.setDurations({ async: 5 });
    await h.sync.sync(3, true);
    h.setDurations({ async: 0.1, inline: 0.2 });
    for (let i = 0; i < RECENT; i++) await h.sync.sync(3, true);
    expect(h.calls.filter((c) => c === "inline")).toHaveLength(1);
    await h.sync.sync(3, true);
    expect(h.calls.at(-1)).toBe("inline");
  });

  it("fsyncs just under the bound stay inline and those at it do not", async () => {
    const under = harness({ inline: INLINE_SYNC_MAX_MS * 0.99 });
    for (let i = 0; i < 20; i++) await under.sync.sync(3, true);
    expect(new Set(under.calls)).toEqual(new Set(["inline"]));
    const at = harness({ inline: INLINE_SYNC_MAX_MS, async: INLINE_SYNC_MAX_MS });
    for (let i = 0; i < 20; i++) await at.sync.sync(3, true);
    expect(at.calls.filter((c) => c === "inline")).toHaveLength(1);
  });

  it("a failed fsync rejects, inline or on the thread pool", async () => {
    const h = harness();
    h.failNext.inline = true;
    await expect(h.sync.sync(3, true)).rejects.toThrow(/EIO/);
    h.failNext.async = true;
    await expect(h.sync.sync(3, false)).rejects.toThrow(/EIO/);
  });

  it("without a main-thread sync, every fsync goes to the thread pool", async () => {
    const calls: string[] = [];
    const sync = createWalSync({ syncInline: null, syncAsync: async () => void calls.push("async") });
    await sync.sync(3, true);
    expect(calls).toEqual(["async"]);
  });

  const dir = mkdtempSync(join(tmpdir(), "osc-wal-sync-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the default syncs a real file both ways, and a descriptor that is not open fails both ways", async () => {
    const file = join(dir, "wal");
    writeFileSync(file, "x");
    const fd = openSync(file, "r");
    try {
      const sync = createWalSync();
      await sync.sync(fd, true);
      await sync.sync(fd, false);
      // Far above any descriptor this process opens, so never some other test's file.
      await expect(sync.sync(2 ** 30, true)).rejects.toThrow(/EBADF/);
      await expect(sync.sync(2 ** 30, false)).rejects.toThrow(/EBADF/);
    } finally {
      closeSync(fd);
    }
  });
});
