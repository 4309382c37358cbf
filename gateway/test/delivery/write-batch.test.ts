// Ready messages go out in one write (delivery/write-batch.ts): corked writes reach the stream
// together and a write past the high-water mark still drains. That a policy change's two pushes
// reach a supervisor in one HTTP/2 DATA frame is in pre-encoded.test.ts, with what else a
// supervisor reads off the wire.

import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { corkUntilTick } from "../../src/delivery/write-batch.js";

/** A writable that records each call that reached it: one entry per _write or _writev, with its chunks. */
function recorder(highWaterMark = 16 * 1024) {
  const calls: string[][] = [];
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _enc, cb) {
      calls.push([chunk.toString()]);
      setImmediate(cb);
    },
    writev(chunks, cb) {
      calls.push(chunks.map((c) => (c.chunk as Buffer).toString()));
      setImmediate(cb);
    },
  });
  return { stream, calls };
}

describe("corkUntilTick", () => {
  it("writes made in the same microtasks reach the stream in one call", async () => {
    const { stream, calls } = recorder();
    corkUntilTick(stream);
    stream.write("a");
    await Promise.resolve();
    stream.write("b");
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([["a", "b"]]);
  });

  it("(Node's own behaviour, for reference: without it the second write waits for the first, which is what it exists to change)", async () => {
    const { stream, calls } = recorder();
    stream.write("a");
    stream.write("b");
    // Waits for the stream to finish rather than for a timer: on a loaded machine a timer can
    // fire before the first write's callback, and the test would then see only "a".
    const finished = new Promise((resolve) => stream.once("finish", resolve));
    stream.end();
    await finished;
    expect(calls).toEqual([["a"], ["b"]]);
  });

  it("a write over the high-water mark still drains: a writer waiting for 'drain' is never stuck", async () => {
    const { stream, calls } = recorder(4);
    corkUntilTick(stream);
    const flushed = stream.write("more than four bytes");
    expect(flushed).toBe(false);
    await new Promise<void>((resolve) => stream.once("drain", resolve));
    expect(calls).toEqual([["more than four bytes"]]);
  });

  it("leaves alone what cannot be corked or is destroyed", () => {
    expect(() => corkUntilTick(undefined)).not.toThrow();
    expect(() => corkUntilTick({ closed: false })).not.toThrow();
    const { stream } = recorder();
    stream.destroy();
    corkUntilTick(stream);
    expect(stream.writableCorked).toBe(0);
  });
});
