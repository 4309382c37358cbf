// Every ConnectSupervisor stream ends, even one whose bootstrap cannot be written (its peer
// grants no flow-control window): when a write makes no progress within the bound, when a newer
// stream of its sandbox replaces it, when its peer resets it or goes away, and when no hello
// comes. Ending means the session leaves the registry, the stream is no longer counted, and the
// HTTP/2 stream is closed. And the caps: per token, per gateway, per sandbox.

import { constants } from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { startTestGateway, TOKENS, type TestGateway } from "../rpc/harness.js";
import { workspaceScope } from "openshell-config/raw";
import { policy } from "../rpc/fixtures.js";
import { openSupervisorStream, readingSession, zeroWindowSession } from "./raw-supervisor-stream.js";
import type { ClientHttp2Session } from "node:http2";

let gw: TestGateway | undefined;
const sessions: ClientHttp2Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) s.destroy();
  await gw?.close();
  gw = undefined;
});

const track = (s: ClientHttp2Session) => (sessions.push(s), s);
const open = (url: string, options: { zeroWindow?: boolean; hello?: boolean } = {}) => {
  const session = track(options.zeroWindow === false ? readingSession(url) : zeroWindowSession(url));
  return { session, ...openSupervisorStream(session, TOKENS.supervisor, "dev", { hello: options.hello ?? true, read: options.zeroWindow === false }) };
};
/**
 * A sandbox "dev" whose bootstrap (about 30 KiB) is larger than an HTTP/2 stream's write buffer
 * (16 KiB): a smaller one would be taken whole by the buffer, and the write would not wait.
 */
async function createSandbox(g: TestGateway) {
  const rules = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`rule-${i}`, `host-${i}.example.com`]));
  await g.raw("admin").createSandbox({ name: "dev", spec: { policy: policy(rules) }, workspaceScope: workspaceScope() });
}
const counts = () => ({ registered: gw!.gateway.sessions.size, open: gw!.gateway.supervisorStreams.size });

describe("a supervisor stream whose peer reads nothing", () => {
  it("is reset once a message has gone unwritten for the write bound, and leaves nothing behind", async () => {
    gw = await startTestGateway("sqlite", { session: { writeTimeoutMs: 300 } });
    await createSandbox(gw);
    const a = open(gw.url);
    await a.headers;
    expect(counts()).toEqual({ registered: 1, open: 1 });
    const end = await a.ended;
    expect(end).toEqual({ status: undefined, message: "", rstCode: constants.NGHTTP2_CANCEL });
    await expect.poll(counts).toEqual({ registered: 0, open: 0 });
    expect(gw.logs()).toMatch(/the supervisor did not read a message within 0\.3 s; the stream is reset/);
  });

  it("is reset at once when a newer stream of its sandbox replaces it, long before the write bound", async () => {
    gw = await startTestGateway("sqlite", { session: { writeTimeoutMs: 60_000 } });
    await createSandbox(gw);
    const a = open(gw.url);
    await a.headers;
    const b = open(gw.url);
    await b.headers;
    expect((await a.ended).rstCode).toBe(constants.NGHTTP2_CANCEL);
    await expect.poll(counts).toEqual({ registered: 1, open: 1 });
    b.session.destroy();
    await expect.poll(counts).toEqual({ registered: 0, open: 0 });
  });

  it("ends when its peer drops the connection mid-bootstrap", async () => {
    gw = await startTestGateway("sqlite", { session: { writeTimeoutMs: 60_000 } });
    await createSandbox(gw);
    const a = open(gw.url);
    await a.headers;
    expect(counts()).toEqual({ registered: 1, open: 1 });
    a.session.destroy();
    await expect.poll(counts).toEqual({ registered: 0, open: 0 });
    expect(gw.logs()).toMatch(/supervisor stream closed/);
  });

  it("ends when its peer resets the stream mid-bootstrap", async () => {
    gw = await startTestGateway("sqlite", { session: { writeTimeoutMs: 60_000 } });
    await createSandbox(gw);
    const a = open(gw.url);
    await a.headers;
    a.stream.close(constants.NGHTTP2_CANCEL);
    await expect.poll(counts).toEqual({ registered: 0, open: 0 });
  });
});

describe("a supervisor stream that sends no hello", () => {
  it("ends DEADLINE_EXCEEDED after the hello bound", async () => {
    gw = await startTestGateway("sqlite", { session: { helloTimeoutMs: 300 } });
    await createSandbox(gw);
    const a = open(gw.url, { zeroWindow: false, hello: false });
    expect(await a.ended).toEqual({ status: Code.DeadlineExceeded, message: "no SupervisorHello within 0.3 s of opening the stream", rstCode: 0 });
    await expect.poll(counts).toEqual({ registered: 0, open: 0 });
  });
});

describe("caps on supervisor streams", () => {
  it("a token with as many streams open as its cap is refused RESOURCE_EXHAUSTED naming the cap until one ends", async () => {
    gw = await startTestGateway("sqlite", { supervisorStreams: { perToken: 2 } });
    await createSandbox(gw);
    const first = open(gw.url, { zeroWindow: false, hello: false });
    open(gw.url, { zeroWindow: false, hello: false });
    await expect.poll(counts).toEqual({ registered: 0, open: 2 });
    const third = open(gw.url, { zeroWindow: false, hello: false });
    expect(await third.ended).toEqual({
      status: Code.ResourceExhausted,
      message: "this supervisor token already has 2 ConnectSupervisor streams open, the most one token may hold (2); end one first",
      rstCode: 0,
    });
    first.session.destroy();
    await expect.poll(counts).toEqual({ registered: 0, open: 1 });
    const fourth = open(gw.url, { zeroWindow: false });
    await fourth.headers;
    expect(fourth.isEnded()).toBe(false);
    await expect.poll(counts).toEqual({ registered: 1, open: 2 });
  });

  it("a gateway serving its cap of supervisor streams refuses one more", async () => {
    gw = await startTestGateway("sqlite", { supervisorStreams: { maxStreams: 1 } });
    await createSandbox(gw);
    open(gw.url, { zeroWindow: false, hello: false });
    await expect.poll(counts).toEqual({ registered: 0, open: 1 });
    const second = open(gw.url, { zeroWindow: false, hello: false });
    expect(await second.ended).toEqual({
      status: Code.ResourceExhausted,
      message: "this gateway already serves 1 supervisor stream, its limit; try again later",
      rstCode: 0,
    });
  });

  it("a sandbox's stream over the per-sandbox cap ends the oldest with ABORTED", async () => {
    gw = await startTestGateway("sqlite", { supervisorStreams: { perSandbox: 1 } });
    await createSandbox(gw);
    const a = open(gw.url, { zeroWindow: false });
    await a.headers;
    await expect.poll(counts).toEqual({ registered: 1, open: 1 });
    const b = open(gw.url, { zeroWindow: false });
    expect(await a.ended).toEqual({ status: Code.Aborted, message: "replaced by a newer stream of the same sandbox (at most 1 per sandbox)", rstCode: 0 });
    await b.headers;
    await expect.poll(counts).toEqual({ registered: 1, open: 1 });
  });
});
