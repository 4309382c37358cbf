// The fetch transports bound what they read of an answer, as the Node transport's readMaxBytes
// does: connect-web itself reads a Connect unary answer whole with arrayBuffer() and never looks
// at its readMaxBytes. A unary answer (or an error's JSON) may hold the bound in all; a stream
// that much per message, however long it runs. A larger answer fails ResourceExhausted as soon
// as its size is known, and its connection is closed. Real fetch() against real sockets.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { InvalidArgumentError, createConfigClient } from "../../src/index.js";
import { OpenShell, workspaceScope } from "../../src/raw.js";
import { guardFetch } from "../../src/transport/guard-fetch.js";
import { createWebTransport } from "../../src/transport/web.js";
import { GRPC_WEB_OK, header, sandboxAnswer, watchEnvelope } from "../support/answer-bytes.js";

const DEFAULT_MAX = 64 * 1024 * 1024;

interface Gateway {
  readonly baseUrl: string;
  /** Whether each request's connection has closed, in order of arrival. */
  readonly closed: boolean[];
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** A server that answers every call as `respond` says (which may leave the answer open). */
async function serve(respond: (res: ServerResponse, req: IncomingMessage) => void | Promise<void>): Promise<Gateway> {
  const closed: boolean[] = [];
  const server = createServer((req, res) => {
    const i = closed.push(false) - 1;
    res.once("close", () => (closed[i] = true));
    req.resume();
    req.once("end", () => void respond(res, req));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, closed };
}

async function until(condition: () => boolean): Promise<void> {
  const end = Date.now() + 5_000;
  while (!condition() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

/** The call's error, or "resolved" (or "still pending" after 3 s: a bound judged late). */
async function outcome(call: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise((resolve) => (timer = setTimeout(() => resolve("still pending"), 3_000)));
  try {
    return await Promise.race([call.then(() => "resolved", (err: unknown) => err), pending]);
  } finally {
    clearTimeout(timer);
  }
}

function expectTooLarge(err: unknown, max: number, size?: number): void {
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
  expect((err as ConnectError).rawMessage).toBe(`message size ${size === undefined ? "" : `${size} `}is larger than configured readMaxBytes ${max}`);
}

const getDev = (raw: Client<typeof OpenShell>) => raw.getSandbox({ name: "dev", workspaceScope: workspaceScope() });

/** Every operation id a watch of "dev" delivers, until it ends; its error, if any, as `error`. */
async function watchAll(raw: Client<typeof OpenShell>, seen: string[] = []): Promise<{ seen: string[]; error?: unknown }> {
  try {
    for await (const res of raw.watchConfigUpdateOperations({ sandbox: "dev", workspaceScope: workspaceScope() })) seen.push(res.operation?.operationId ?? "");
    return { seen };
  } catch (error) {
    return { seen, error };
  }
}

describe("a Connect unary answer over fetch", () => {
  const raw = (baseUrl: string, readMaxBytes?: number) => createConfigClient({ transport: createWebTransport({ baseUrl, ...(readMaxBytes ? { readMaxBytes } : {}) }) }).raw(OpenShell);

  it("is read when it holds exactly readMaxBytes, sent in pieces without a length", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": "application/proto" });
      const body = sandboxAnswer(300);
      res.write(body.subarray(0, 100));
      setTimeout(() => res.end(body.subarray(100)), 20);
    });
    const answer = await getDev(raw(gw.baseUrl, 300));
    expect(answer.sandbox?.hostKeyFingerprint.length).toBeGreaterThan(280);
  });

  it("fails ResourceExhausted at its first byte past readMaxBytes, and its connection is closed", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": "application/proto" });
      const body = sandboxAnswer(301);
      res.write(body.subarray(0, 300));
      // The last byte, then nothing: a client that waited for the whole body would hang here.
      setTimeout(() => res.write(body.subarray(300)), 20);
    });
    expectTooLarge(await outcome(getDev(raw(gw.baseUrl, 300))), 300);
    await until(() => gw.closed[0] === true);
  });

  it("fails at once when its Content-Length says it is larger than the default 64 MiB, before any of it arrives", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": "application/proto", "content-length": String(DEFAULT_MAX + 1) });
      res.flushHeaders();
    });
    const client = createConfigClient({ baseUrl: gw.baseUrl }).raw(OpenShell);
    expectTooLarge(await outcome(getDev(client)), DEFAULT_MAX);
    await until(() => gw.closed[0] === true);
  });

  it("whose Content-Length is exactly the bound is read", async () => {
    const gw = await serve((res) => {
      const body = sandboxAnswer(64);
      res.writeHead(200, { "content-type": "application/proto", "content-length": String(body.length) });
      res.end(body);
    });
    expect((await getDev(raw(gw.baseUrl, 64))).sandbox).toBeDefined();
  });

  it("that is an error's JSON larger than readMaxBytes fails ResourceExhausted rather than being read whole", async () => {
    const gw = await serve((res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.write(`{"code":"unavailable","message":"${"x".repeat(2_000)}`);
    });
    expectTooLarge(await outcome(getDev(raw(gw.baseUrl, 1_000))), 1_000);
  });
});

const STREAMS = [
  { name: "Connect", transport: (baseUrl: string, readMaxBytes?: number) => createWebTransport({ baseUrl, ...(readMaxBytes ? { readMaxBytes } : {}) }), contentType: "application/connect+proto" },
  { name: "gRPC-Web", transport: (baseUrl: string, readMaxBytes?: number) => createWebTransport({ baseUrl, protocol: "grpc-web", ...(readMaxBytes ? { readMaxBytes } : {}) }), contentType: "application/grpc-web+proto" },
  // The same protocol under the content type without a suffix, which gRPC-Web servers may send.
  { name: "gRPC-Web (application/grpc-web)", transport: (baseUrl: string, readMaxBytes?: number) => createWebTransport({ baseUrl, protocol: "grpc-web", ...(readMaxBytes ? { readMaxBytes } : {}) }), contentType: "application/grpc-web" },
];

describe.each(STREAMS)("a $name stream over fetch", ({ transport, contentType }) => {
  it("reads on past readMaxBytes in all, each message within it, its headers split byte by byte", async () => {
    const gw = await serve(async (res) => {
      res.writeHead(200, { "content-type": contentType });
      for (let i = 0; i < 20; i++) {
        const envelope = watchEnvelope(`op-${i}`);
        // Every fifth envelope trickles out a byte at a time, so its header spans five chunks.
        if (i % 5 === 0) {
          for (const byte of envelope) {
            res.write(Buffer.from([byte]));
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        } else res.write(envelope);
      }
      res.end(contentType.includes("grpc-web") ? GRPC_WEB_OK : Buffer.concat([header(2, 0x02), Buffer.from("{}")]));
    });
    const raw = createConfigClient({ transport: transport(gw.baseUrl, 64) }).raw(OpenShell);
    const { seen, error } = await watchAll(raw);
    expect(error).toBeUndefined();
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `op-${i}`));
  });

  it("fails ResourceExhausted as soon as a message's length is past readMaxBytes, without waiting for its body", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": contentType });
      res.write(watchEnvelope("op-1"));
      res.write(header(65).subarray(0, 2));
      setTimeout(() => res.write(header(65).subarray(2)), 20);
    });
    const raw = createConfigClient({ transport: transport(gw.baseUrl, 64) }).raw(OpenShell);
    const { seen, error } = await watchAll(raw);
    expect(seen).toEqual(["op-1"]);
    expectTooLarge(error, 64, 65);
    await until(() => gw.closed[0] === true);
  });

  it("under the default bound fails a message of 64 MiB + 1 byte from its header alone", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": contentType });
      res.write(header(DEFAULT_MAX + 1));
    });
    const raw = createConfigClient({ transport: transport(gw.baseUrl) }).raw(OpenShell);
    const { error } = await watchAll(raw);
    expectTooLarge(error, DEFAULT_MAX, DEFAULT_MAX + 1);
  });
});

describe("a gRPC-Web unary answer over fetch", () => {
  it("is bounded per message, its trailers included", async () => {
    const body = sandboxAnswer(200);
    const gw = await serve((res, req) => {
      res.writeHead(200, { "content-type": "application/grpc-web+proto" });
      const tooBig = req.url?.includes("GetSandbox") && Number(res.req.headers["x-size"] ?? 0) > 0;
      res.end(Buffer.concat([header(body.length), body, tooBig ? header(201, 0x80) : GRPC_WEB_OK]));
    });
    const ok = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl, protocol: "grpc-web", readMaxBytes: 200 }) }).raw(OpenShell);
    expect((await getDev(ok)).sandbox).toBeDefined();
    const big = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl, protocol: "grpc-web", readMaxBytes: 199 }) }).raw(OpenShell);
    expectTooLarge(await outcome(getDev(big)), 199, 200);
    const trailers = await outcome(ok.getSandbox({ name: "dev", workspaceScope: workspaceScope() }, { headers: { "x-size": "1" } }));
    expectTooLarge(trailers, 200, 201);
  });
});

describe("an answer connect-web does not read", () => {
  it("that is a unary call's HTML error page fails from its status, Unavailable, however large", async () => {
    const gw = await serve((res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end(`<html>${"x".repeat(2_000)}</html>`);
    });
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl, readMaxBytes: 1_000 }) }).raw(OpenShell);
    const err = await outcome(getDev(raw));
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).rawMessage).toBe("HTTP 502");
  });

  it.each(["application/proto", "text/plain"])("that never ends fails a watch at once from its status (503, %s)", async (type) => {
    const gw = await serve((res) => {
      res.writeHead(503, { "content-type": type });
      res.write("overloaded");
    });
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl }) }).raw(OpenShell);
    const { error } = await watchAll(raw);
    expect((error as ConnectError).code).toBe(Code.Unavailable);
    expect((error as ConnectError).rawMessage).toBe("HTTP 503");
  });

  it("that never ends fails a unary call at once from its status (503 text/plain)", async () => {
    const gw = await serve((res) => {
      res.writeHead(503, { "content-type": "text/plain" });
      res.write("overloaded");
    });
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl }) }).raw(OpenShell);
    const err = await outcome(getDev(raw));
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });
});

describe("a gRPC-Web stream whose answer has another content type", () => {
  it("is still read message by message as it arrives, and bounded per message", async () => {
    const gw = await serve((res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.write(watchEnvelope("op-1"));
      res.write(watchEnvelope("op-2"));
      setTimeout(() => res.write(header(65)), 50);
    });
    const raw = createConfigClient({ transport: createWebTransport({ baseUrl: gw.baseUrl, protocol: "grpc-web", readMaxBytes: 64 }) }).raw(OpenShell);
    const seen: string[] = [];
    const watching = watchAll(raw, seen);
    await until(() => seen.length === 2);
    const { error } = await watching;
    expect(seen).toEqual(["op-1", "op-2"]);
    expectTooLarge(error, 64, 65);
  });
});

describe("guardFetch with a fetch of the caller's own", () => {
  it("bounds a unary answer whose stream yields ArrayBuffers rather than Uint8Arrays", async () => {
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new ArrayBuffer(1_000));
        c.close();
      },
    });
    const fetch = guardFetch(async () => new Response(body, { headers: { "content-type": "application/proto" } }), 4_000);
    const err = await outcome(fetch("http://gateway.invalid/x", { method: "POST", headers: { "content-type": "application/proto" } }));
    expectTooLarge(err, 4_000);
  });
});

describe("createWebTransport's readMaxBytes", () => {
  it.each([0, -1, 1.5, 2 ** 32, Number.NaN])("refuses %s with InvalidArgumentError naming the field", (readMaxBytes) => {
    let thrown: unknown;
    try {
      createWebTransport({ baseUrl: "https://gateway.example.com", readMaxBytes });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expect((thrown as InvalidArgumentError).field).toBe("readMaxBytes");
    expect((thrown as Error).message).toContain("readMaxBytes must be a whole number of bytes from 1 to 4294967295");
  });

  it("takes the largest value, 4294967295", () => {
    expect(() => createWebTransport({ baseUrl: "https://gateway.example.com", readMaxBytes: 0xffffffff, protocol: "grpc-web" })).not.toThrow();
  });
});
