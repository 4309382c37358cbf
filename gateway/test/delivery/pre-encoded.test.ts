// Messages the gateway encodes once and hands to connect as stand-ins (model/pre-encoded.ts): what
// a supervisor reads off the wire is byte for byte what toBinary writes for the message it decodes
// to, the policy in it is the one committed, and a stream with a JSON codec still gets real
// messages.

import * as http2 from "node:http2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  GatewayMessageSchema,
  ListSandboxesRequestSchema,
  ListSandboxesResponseSchema,
  OpenShell,
  SandboxConfigSnapshotSchema,
  SandboxPolicySchema,
  SupervisorMessageSchema,
  type GatewayMessage,
  type SupervisorMessage,
  workspaceScope,
} from "openshell-config/raw";
import { encodeMessage } from "../../src/model/binary-encoder.js";
import { rememberPolicyBytes, snapshotBytes, snapshotStandIn, standIn } from "../../src/model/pre-encoded.js";
import { isBinaryCodec, preEncodeResponses } from "../../src/rpc/pre-encode-responses.js";
import { isStandIn } from "../../src/model/pre-encoded.js";
import { createAsyncQueue } from "../../src/delivery/queue.js";
import { startTestGateway, TOKENS, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy, policyMessage } from "../rpc/fixtures.js";
import { bootstrapResultFrame, CONNECT_SUPERVISOR, helloFrame } from "./raw-supervisor-stream.js";

/** A policy of about `rules` × 60 bytes: rule names, hosts and binaries of every length class. */
function bigPolicy(rules: number) {
  const hosts: Record<string, string> = {};
  for (let i = 0; i < rules; i++) hosts[`rule-${i}`] = `host-${i}.example.com`;
  return policyMessage(hosts);
}

describe("stand-ins", () => {
  it("a stand-in serializes, through toBinary and the fast encoder alike, to the bytes it was made from", () => {
    const snap = create(SandboxConfigSnapshotSchema, { policy: bigPolicy(40), version: 7, policyHash: "sha256:x", configRevision: 12n, workspace: "default" });
    const msg = create(GatewayMessageSchema, { payload: { case: "configUpdate", value: { updateId: "u-1", componentSequence: 3n, component: { case: "sandboxConfig", value: snap } } } });
    const bytes = toBinary(GatewayMessageSchema, msg);
    const s = standIn(GatewayMessageSchema, bytes);
    expect(s.payload.case).toBeUndefined();
    expect(toBinary(GatewayMessageSchema, s)).toEqual(bytes);
    expect(encodeMessage(GatewayMessageSchema, s)).toEqual(bytes);
    expect(equals(GatewayMessageSchema, fromBinary(GatewayMessageSchema, toBinary(GatewayMessageSchema, s)), msg)).toBe(true);
  });

  for (const [label, p] of [
    ["an empty policy", create(SandboxPolicySchema)],
    ["a small policy", policyMessage()],
    ["a policy over 127 bytes (a two-byte length)", bigPolicy(5)],
    ["a policy over 16 KiB (a three-byte length)", bigPolicy(400)],
  ] as const) {
    it(`a snapshot with ${label} placed from its stored bytes equals toBinary of the whole snapshot`, () => {
      const snap = create(SandboxConfigSnapshotSchema, { policy: p, version: 3, policyHash: "sha256:y", configRevision: 99n, settingsRevision: 4n, workspace: "team-a" });
      const expected = toBinary(SandboxConfigSnapshotSchema, snap);
      rememberPolicyBytes(snap, toBinary(SandboxPolicySchema, p));
      expect(snapshotBytes(snap)).toEqual(expected);
      const inMessage = create(GatewayMessageSchema, { payload: { case: "configUpdate", value: { updateId: "u", component: { case: "sandboxConfig", value: snapshotStandIn(snap) } } } });
      const real = create(GatewayMessageSchema, { payload: { case: "configUpdate", value: { updateId: "u", component: { case: "sandboxConfig", value: snap } } } });
      expect(encodeMessage(GatewayMessageSchema, inMessage)).toEqual(toBinary(GatewayMessageSchema, real));
    });
  }
});

/** Reads gRPC envelopes off a raw stream; each message's bytes, as sent. */
function envelopes(stream: http2.ClientHttp2Stream) {
  let buffered = Buffer.alloc(0);
  const q = createAsyncQueue<Uint8Array>();
  stream.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 5) {
      const len = buffered.readUInt32BE(1);
      if (buffered.length < 5 + len) break;
      q.push(new Uint8Array(buffered.subarray(5, 5 + len)));
      buffered = buffered.subarray(5 + len);
    }
  });
  const it = q[Symbol.asyncIterator]();
  return async () => (await it.next()).value as Uint8Array;
}

let gw: TestGateway;
beforeEach(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterEach(async () => {
  await gw.close();
});

describe("what a supervisor reads off the wire", () => {
  it("the bootstrap and each push are toBinary's bytes of the message they decode to, carrying the committed policy", async () => {
    const first = bigPolicy(30);
    await gw.sdk().updatePolicy({ sandbox: "dev", policy: first });
    const session = http2.connect(gw.url);
    session.on("error", () => undefined);
    const stream = session.request({ ":method": "POST", ":path": CONNECT_SUPERVISOR, "content-type": "application/grpc+proto", te: "trailers", authorization: `Bearer ${TOKENS.supervisor}` });
    stream.on("error", () => undefined);
    const next = envelopes(stream);
    stream.write(helloFrame("dev"));
    try {
      const sameAsToBinary = (bytes: Uint8Array): GatewayMessage => {
        const decoded = fromBinary(GatewayMessageSchema, bytes);
        expect(toBinary(GatewayMessageSchema, decoded)).toEqual(bytes);
        return decoded;
      };
      const accepted = sameAsToBinary(await next());
      if (accepted.payload.case !== "sessionAccepted") throw new Error(`expected sessionAccepted, got ${accepted.payload.case}`);
      const snap = accepted.payload.value.bootstrap!.sandboxConfig!;
      expect(equals(SandboxPolicySchema, snap.policy!, first)).toBe(true);
      stream.write(bootstrapResultFrame(accepted));
      const second = bigPolicy(300); // over 16 KiB encoded
      await gw.sdk().updatePolicy({ sandbox: "dev", policy: second });
      const pushed: GatewayMessage[] = [sameAsToBinary(await next()), sameAsToBinary(await next())];
      const components = pushed.map((m) => (m.payload.case === "configUpdate" ? m.payload.value.component.case : m.payload.case));
      expect(components.sort()).toEqual(["providerEnvironment", "sandboxConfig"]);
      const update = pushed.find((m) => m.payload.case === "configUpdate" && m.payload.value.component.case === "sandboxConfig")!;
      if (update.payload.case !== "configUpdate" || update.payload.value.component.case !== "sandboxConfig") throw new Error("unreachable");
      expect(update.payload.value.component.value.version).toBe(snap.version + 1);
      expect(equals(SandboxPolicySchema, update.payload.value.component.value.policy!, second)).toBe(true);
    } finally {
      stream.close();
      session.close();
    }
  });

  it("a policy change's two pushes (sandbox snapshot, provider environment) arrive in one DATA frame (delivery/write-batch.ts)", async () => {
    const session = http2.connect(gw.url);
    session.on("error", () => undefined);
    const stream = session.request({ ":method": "POST", ":path": CONNECT_SUPERVISOR, "content-type": "application/grpc+proto", te: "trailers", authorization: `Bearer ${TOKENS.supervisor}` });
    stream.on("error", () => undefined);
    // Each 'data' event is one DATA frame's payload (small frames are never split); the messages in it.
    const frames: GatewayMessage[][] = [];
    let waiting: (() => void) | undefined;
    stream.on("data", (chunk: Buffer) => {
      const inFrame: GatewayMessage[] = [];
      for (let at = 0; at + 5 <= chunk.length; at += 5 + chunk.readUInt32BE(at + 1)) {
        inFrame.push(fromBinary(GatewayMessageSchema, chunk.subarray(at + 5, at + 5 + chunk.readUInt32BE(at + 1))));
      }
      frames.push(inFrame);
      waiting?.();
    });
    const until = async (n: number) => {
      while (frames.flat().length < n) await new Promise<void>((resolve) => (waiting = resolve));
    };
    const kinds = (f: GatewayMessage[]) => f.map((m) => (m.payload.case === "configUpdate" ? String(m.payload.value.component.case) : String(m.payload.case)));
    stream.write(helloFrame("dev"));
    try {
      await until(1);
      expect(frames.map(kinds)).toEqual([["sessionAccepted"]]);
      stream.write(bootstrapResultFrame(frames[0]![0]!));
      await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }), wait: false });
      await until(3);
      expect(frames.slice(1).map(kinds)).toEqual([["sandboxConfig", "providerEnvironment"]]);
    } finally {
      stream.close();
      session.close();
    }
  });

  it("a supervisor stream with the Connect protocol's JSON codec gets the whole bootstrap, not stand-ins", async () => {
    const committed = policy({ pypi: "pypi.org" });
    await gw.sdk().updatePolicy({ sandbox: "dev", policy: committed });
    const transport = createConnectTransport({ baseUrl: gw.url, httpVersion: "2", useBinaryFormat: false });
    const client = createClient(OpenShell, transport);
    const out = createAsyncQueue<SupervisorMessage>();
    out.push(create(SupervisorMessageSchema, { payload: { case: "hello", value: { sandboxId: "dev", instanceId: "json-1", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } } }));
    const abort = new AbortController();
    const stream = client.connectSupervisor(out, { signal: abort.signal, headers: { authorization: `Bearer ${TOKENS.supervisor}` } })[Symbol.asyncIterator]();
    try {
      const first = (await stream.next()).value as GatewayMessage;
      if (first.payload.case !== "sessionAccepted") throw new Error(`expected sessionAccepted, got ${first.payload.case}`);
      const snap = first.payload.value.bootstrap!.sandboxConfig!;
      expect(equals(SandboxPolicySchema, snap.policy!, create(SandboxPolicySchema, committed))).toBe(true);
    } finally {
      abort.abort();
      out.close();
    }
  });
});

describe("unary answers", () => {
  it("only protobuf content types count as binary codecs", () => {
    for (const ct of ["application/grpc", "application/grpc+proto", "application/grpc-web", "application/grpc-web+proto", "application/proto", "application/connect+proto", "application/proto; charset=utf-8"]) {
      expect(isBinaryCodec(ct), ct).toBe(true);
    }
    for (const ct of [null, "", "application/json", "application/connect+json", "application/grpc+json", "application/grpc-web+json", "application/grpc-web-text", "text/plain"]) {
      expect(isBinaryCodec(ct), String(ct)).toBe(false);
    }
  });

  it("the interceptor hands connect a stand-in for a binary POST and the message itself for JSON or GET", async () => {
    const page = create(ListSandboxesResponseSchema, { nextPageToken: "next" });
    const call = (contentType: string, requestMethod = "POST") =>
      preEncodeResponses()(async () => ({ stream: false, message: page, header: new Headers(), trailer: new Headers() }) as never)({
        header: new Headers({ "content-type": contentType }),
        requestMethod,
        method: { output: ListSandboxesResponseSchema },
      } as never);
    const binary = (await call("application/grpc")).message as object;
    expect(isStandIn(binary)).toBe(true);
    expect(toBinary(ListSandboxesResponseSchema, binary as typeof page)).toEqual(toBinary(ListSandboxesResponseSchema, page));
    expect((await call("application/json")).message).toBe(page);
    // A Connect GET names its codec in the URL (?encoding=json), whatever header it sends.
    expect((await call("application/proto", "GET")).message).toBe(page);
  });

  it("a ListSandboxes page is toBinary's bytes of what it decodes to, and JSON clients read the same page", async () => {
    for (let i = 0; i < 20; i++) await createSandbox(gw, `sb-${i}`, { labels: { n: String(i) } });
    const body = toBinary(ListSandboxesRequestSchema, create(ListSandboxesRequestSchema, { workspaceScope: workspaceScope(), pageSize: 50 }));
    const res = await fetch(`${gw.url}/openshell.v1.OpenShell/ListSandboxes`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-protocol-version": "1", authorization: `Bearer ${TOKENS.admin}` },
      body,
    });
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const page = fromBinary(ListSandboxesResponseSchema, bytes);
    expect(toBinary(ListSandboxesResponseSchema, page)).toEqual(bytes);
    expect(page.sandboxes.map((s) => s.metadata?.name).sort()).toEqual(["dev", ...Array.from({ length: 20 }, (_, i) => `sb-${i}`)].sort());
    const json = createClient(OpenShell, createConnectTransport({ baseUrl: gw.url, httpVersion: "1.1", useBinaryFormat: false }));
    const viaJson = await json.listSandboxes({ workspaceScope: workspaceScope(), pageSize: 50 }, { headers: { authorization: `Bearer ${TOKENS.admin}` } });
    expect(equals(ListSandboxesResponseSchema, viaJson, page)).toBe(true);
  });
});
