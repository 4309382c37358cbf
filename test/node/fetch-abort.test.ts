// The fetch transport in Node: an abort or a deadline ends the call and closes its connection even
// after a garbage collection. Node 20's fetch follows the caller's signal through a weak reference
// to its internal Request, so without the SDK's own abort (src/transport/guard-fetch.ts) a
// collection between the headers and the abort left the watch reading on until the server ended
// it: the dashboard's e2e test saw an aborted watch still open after 10 s on a busy machine.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { createConfigClient } from "../../src/index.js";
import { OpenShell, WatchConfigUpdateOperationsResponseSchema, workspaceScope } from "../../src/raw.js";
import { guardFetch } from "../../src/transport/guard-fetch.js";
import { createWebTransport } from "../../src/transport/web.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** A full collection, after the current task (which keeps WeakRef targets alive). */
async function collect(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
}

/** One Connect stream envelope holding a watch response for `operationId`. */
function envelope(operationId: string): Buffer {
  const data = toBinary(WatchConfigUpdateOperationsResponseSchema, create(WatchConfigUpdateOperationsResponseSchema, { operation: { operationId } }));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

interface Stalling {
  readonly baseUrl: string;
  /** Requests that arrived, and whether each one's connection has closed. */
  readonly requests: { closed: boolean }[];
  readonly server: Server;
}

/** A server that answers every call as `respond` says and then never ends it. */
async function stalling(respond: (req: IncomingMessage, res: ServerResponse) => void): Promise<Stalling> {
  const requests: { closed: boolean }[] = [];
  const server = createServer((req, res) => {
    const seen = { closed: false };
    requests.push(seen);
    res.once("close", () => (seen.closed = true));
    req.resume();
    req.once("end", () => respond(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, server };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** How `promise` settles within `ms`: "resolved", the rejection, or "still pending". */
async function settleWithin(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise((resolve) => (timer = setTimeout(() => resolve("still pending"), ms)));
  try {
    return await Promise.race([promise.then(() => "resolved", (err: unknown) => err), pending]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(condition: () => boolean): Promise<void> {
  const end = Date.now() + 5_000;
  while (!condition() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A watch of sandbox "dev" on `raw`: the operation ids it has seen, and its end (its error, if any). */
function watchDev(raw: Client<typeof OpenShell>, options: { signal?: AbortSignal; timeoutMs?: number }): { seen: string[]; watch: Promise<void> } {
  const seen: string[] = [];
  const watch = (async () => {
    for await (const res of raw.watchConfigUpdateOperations({ sandbox: "dev", workspaceScope: workspaceScope() }, options)) {
      seen.push(res.operation?.operationId ?? "");
    }
  })();
  return { seen, watch };
}

const PROTOCOLS = [
  { name: "Connect", transport: (baseUrl: string) => createWebTransport({ baseUrl }), contentType: "application/connect+proto" },
  { name: "gRPC-Web", transport: (baseUrl: string) => createWebTransport({ baseUrl, protocol: "grpc-web" }), contentType: "application/grpc-web+proto" },
];

describe.each(PROTOCOLS)("the fetch transport in Node ($name)", ({ transport, contentType }) => {
  it("an aborted watch ends with Canceled and its connection closes, even after a garbage collection", async () => {
    const gateway = await stalling((_req, res) => {
      res.writeHead(200, { "content-type": contentType });
      res.write(envelope("op-1"));
    });
    const raw = createConfigClient({ transport: transport(gateway.baseUrl) }).raw(OpenShell);
    const watching = new AbortController();
    const { seen, watch } = watchDev(raw, { signal: watching.signal });
    await until(() => seen.length === 1);
    expect(seen).toEqual(["op-1"]);
    await collect();
    watching.abort();
    const outcome = await settleWithin(watch, 2_000);
    expect(outcome).toBeInstanceOf(ConnectError);
    expect((outcome as ConnectError).code).toBe(Code.Canceled);
    await until(() => gateway.requests[0]!.closed);
    expect(gateway.requests.map((r) => r.closed)).toEqual([true]);
  });

  it("a watch aborted before the gateway answers ends with Canceled, even after a garbage collection", async () => {
    const gateway = await stalling(() => {});
    const raw = createConfigClient({ transport: transport(gateway.baseUrl) }).raw(OpenShell);
    const watching = new AbortController();
    const { watch } = watchDev(raw, { signal: watching.signal });
    await until(() => gateway.requests.length === 1);
    await collect();
    watching.abort();
    const outcome = await settleWithin(watch, 2_000);
    expect(outcome).toBeInstanceOf(ConnectError);
    expect((outcome as ConnectError).code).toBe(Code.Canceled);
  });

  it("a call's deadline ends it with DeadlineExceeded when the body stalls after the headers, even after a garbage collection", async () => {
    const gateway = await stalling((_req, res) => {
      res.writeHead(200, { "content-type": contentType });
      res.write(envelope("op-1"));
    });
    const raw = createConfigClient({ transport: transport(gateway.baseUrl) }).raw(OpenShell);
    const { seen, watch } = watchDev(raw, { timeoutMs: 500 });
    await until(() => seen.length === 1);
    await collect();
    const outcome = await settleWithin(watch, 3_000);
    expect(outcome).toBeInstanceOf(ConnectError);
    expect((outcome as ConnectError).code).toBe(Code.DeadlineExceeded);
    await until(() => gateway.requests[0]!.closed);
    expect(gateway.requests.map((r) => r.closed)).toEqual([true]);
  });
});

describe("a unary call over fetch in Node", () => {
  it("ends with DeadlineExceeded and closes its connection when the body stalls after the headers, even after a garbage collection", async () => {
    const gateway = await stalling((_req, res) => {
      res.writeHead(200, { "content-type": "application/proto" });
      res.write(Buffer.from([0x0a]));
    });
    const raw = createConfigClient({ baseUrl: gateway.baseUrl }).raw(OpenShell);
    const call = raw.getSandbox({ name: "dev", workspaceScope: workspaceScope() }, { timeoutMs: 500 });
    await until(() => gateway.requests.length === 1);
    await collect();
    const outcome = await settleWithin(call, 3_000);
    expect(outcome).toBeInstanceOf(ConnectError);
    expect((outcome as ConnectError).code).toBe(Code.DeadlineExceeded);
    await until(() => gateway.requests[0]!.closed);
    expect(gateway.requests.map((r) => r.closed)).toEqual([true]);
  });

  it("ends with Canceled when aborted while its body stalls, even after a garbage collection", async () => {
    const gateway = await stalling((_req, res) => {
      res.writeHead(200, { "content-type": "application/proto" });
      res.write(Buffer.from([0x0a]));
    });
    const raw = createConfigClient({ baseUrl: gateway.baseUrl }).raw(OpenShell);
    const aborting = new AbortController();
    const call = raw.getSandbox({ name: "dev", workspaceScope: workspaceScope() }, { signal: aborting.signal });
    await until(() => gateway.requests.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await collect();
    aborting.abort();
    const outcome = await settleWithin(call, 2_000);
    expect((outcome as ConnectError).code).toBe(Code.Canceled);
    await until(() => gateway.requests[0]!.closed);
  });
});

describe("createConfigClient({ baseUrl }) in Node", () => {
  it("uses the fetch transport whose aborted watch ends after a garbage collection", async () => {
    const gateway = await stalling((_req, res) => {
      res.writeHead(200, { "content-type": "application/connect+proto" });
      res.write(envelope("op-2"));
    });
    const raw = createConfigClient({ baseUrl: gateway.baseUrl }).raw(OpenShell);
    const watching = new AbortController();
    const { seen, watch } = watchDev(raw, { signal: watching.signal });
    await until(() => seen.length === 1);
    await collect();
    watching.abort();
    expect(((await settleWithin(watch, 2_000)) as ConnectError).code).toBe(Code.Canceled);
  });
});

describe("guardFetch", () => {
  const chunks = () => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array([1, 2, 3])), c.close()) });

  it("keeps a response whose reason phrase is not Latin-1 readable, as Node's fetch decodes it", async () => {
    const upstream = { status: 200, statusText: "Gut ✓", headers: new Headers({ "content-type": "application/proto" }), body: chunks() } as unknown as Response;
    const fetch = guardFetch(async () => upstream);
    const res = await fetch("http://127.0.0.1:1/x", { signal: new AbortController().signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/proto");
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([1, 2, 3]);
  });

  it("leaves alone a response of a caller's fetch whose body is not a web stream", async () => {
    const upstream = { status: 200, headers: new Headers(), body: { pipe: () => undefined }, arrayBuffer: async () => new ArrayBuffer(0) } as unknown as Response;
    const fetch = guardFetch(async () => upstream);
    expect(await fetch("http://127.0.0.1:1/x", { signal: new AbortController().signal })).toBe(upstream);
  });
});
