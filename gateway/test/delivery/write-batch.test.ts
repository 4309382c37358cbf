// Ready messages go out in one write (delivery/write-batch.ts): corked writes reach the stream
// together, a write past the high-water mark still drains, and a policy change's two pushes reach
// a supervisor in one HTTP/2 DATA frame.

import * as http2 from "node:http2";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome as Outcome,
  ConfigComponent,
  ConfigurationAdmissionState as Admission,
  GatewayMessageSchema,
  SupervisorMessageSchema,
  type GatewayMessage,
} from "openshell-config/raw";
import { corkUntilTick } from "../../src/delivery/write-batch.js";
import { startTestGateway, TOKENS, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy } from "../rpc/fixtures.js";
import { envelope } from "../reliability/raw-wire.js";
import { CONNECT_SUPERVISOR, helloFrame } from "./raw-supervisor-stream.js";

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
    await new Promise((resolve) => setTimeout(resolve, 5));
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

describe("a supervisor stream", () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startTestGateway();
    await createSandbox(gw, "dev");
  });
  afterEach(async () => {
    await gw.close();
  });

  it("gets a policy change's two pushes (sandbox snapshot, provider environment) in one DATA frame", async () => {
    const session = http2.connect(gw.url);
    session.on("error", () => undefined);
    const stream = session.request({ ":method": "POST", ":path": CONNECT_SUPERVISOR, "content-type": "application/grpc+proto", te: "trailers", authorization: `Bearer ${TOKENS.supervisor}` });
    stream.on("error", () => undefined);
    // Each 'data' event is one DATA frame's payload (small frames are never split); the envelopes in it.
    const frames: string[][] = [];
    const messages: GatewayMessage[] = [];
    let waiting: (() => void) | undefined;
    stream.on("data", (chunk: Buffer) => {
      const inFrame: string[] = [];
      for (let at = 0; at + 5 <= chunk.length; ) {
        const len = chunk.readUInt32BE(at + 1);
        const msg = fromBinary(GatewayMessageSchema, chunk.subarray(at + 5, at + 5 + len));
        messages.push(msg);
        inFrame.push(msg.payload.case === "configUpdate" ? String(msg.payload.value.component.case) : String(msg.payload.case));
        at += 5 + len;
      }
      frames.push(inFrame);
      waiting?.();
    });
    const until = async (n: number) => {
      while (frames.flat().length < n) await new Promise<void>((resolve) => (waiting = resolve));
    };
    stream.write(helloFrame("dev"));
    try {
      await until(1);
      expect(frames).toEqual([["sessionAccepted"]]);
      // The bootstrap answered, so that live pushes flow (the double's answer, by hand).
      const first = frames.length;
      stream.write(envelope(toBinary(SupervisorMessageSchema, bootstrapResult(messages[0]!))));
      await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }), wait: false });
      await until(3);
      expect(frames.slice(first)).toEqual([["sandboxConfig", "providerEnvironment"]]);
    } finally {
      stream.close();
      session.close();
    }
  });
});

/** The ConfigBootstrapResult a supervisor sends for the bootstrap in `accepted` (both components applied). */
function bootstrapResult(accepted: GatewayMessage) {
  if (accepted.payload.case !== "sessionAccepted") throw new Error(`expected sessionAccepted, got ${accepted.payload.case}`);
  const snap = accepted.payload.value.bootstrap!.sandboxConfig!;
  const provider = accepted.payload.value.bootstrap!.providerEnvironment!;
  const sandboxRevision = { component: { case: "sandboxConfig" as const, value: { configRevision: snap.configRevision, policyVersion: snap.version, policySource: snap.policySource, settingsRevision: snap.settingsRevision } } };
  const providerRevision = { component: { case: "providerEnvironment" as const, value: provider.providerEnvRevision } };
  return create(SupervisorMessageSchema, {
    payload: {
      case: "configBootstrapResult",
      value: {
        results: [
          { component: ConfigComponent.SANDBOX_CONFIG, requestedRevision: sandboxRevision, appliedRevision: sandboxRevision, outcome: Outcome.APPLIED },
          { component: ConfigComponent.PROVIDER_ENVIRONMENT, requestedRevision: providerRevision, appliedRevision: providerRevision, outcome: Outcome.APPLIED },
        ],
        admission: { instanceId: "batch-test", state: Admission.ACCEPTED, policyVersion: snap.version, policyHash: snap.policyHash, configRevision: snap.configRevision, providerEnvRevision: snap.providerEnvRevision },
      },
    },
  });
}
