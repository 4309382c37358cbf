// A TCP proxy that loses an answer: on an armed connection it forwards every byte the client sends
// and everything the gateway sends about the connection itself (HTTP/2 SETTINGS, PING,
// WINDOW_UPDATE), and cuts both sides the moment the gateway starts answering a request: the first
// HEADERS or DATA frame of a stream (HTTP/2), or the first byte (HTTP/1.1). The gateway has then
// read the whole request and done its work; the client never learns what came of it. Connections
// accepted while not armed pass through untouched.

import { connect, createServer, type Server, type Socket } from "node:net";

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const FRAME_HEADER = 9;
const DATA = 0x0;
const HEADERS = 0x1;

export interface ResponseDropProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Answers lost so far (armed connections cut). */
  readonly dropped: number;
  /** The next connection accepted loses the first answer the gateway sends on it. */
  armNextConnection(): void;
  /** Resolves once an armed connection has been cut (at once if one was). */
  untilDropped(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 (a free port) in front of `targetPort` on 127.0.0.1. */
export async function startResponseDropProxy(targetPort: number): Promise<ResponseDropProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let armed = false;
  let accepted = 0;
  let dropped = 0;
  const onDrop: (() => void)[] = [];

  const close = (pair: [Socket, Socket]) => {
    if (!pairs.delete(pair)) return;
    for (const s of pair) s.destroy();
  };

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) {
      s.on("error", () => close(pair));
      s.on("close", () => close(pair));
    }
    client.pipe(upstream);
    if (!armed) {
      upstream.pipe(client);
      return;
    }
    armed = false;
    const cut = () => {
      dropped++;
      // A reset, as a crashed middlebox or a dropped route would leave it, not a polite FIN.
      client.resetAndDestroy();
      close(pair);
      for (const resolve of onDrop.splice(0)) resolve();
    };
    // HTTP/2 or HTTP/1.1: told by the client's first bytes. An HTTP/2 gateway may send its
    // SETTINGS before they arrive: what it sends is held until then.
    let h2: boolean | undefined;
    let head = Buffer.alloc(0);
    let pending = Buffer.alloc(0);
    const forward = () => {
      if (!pairs.has(pair) || h2 === undefined || pending.length === 0) return;
      if (!h2) return cut();
      while (pending.length >= FRAME_HEADER) {
        const type = pending[3]!;
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        if (stream !== 0 && (type === HEADERS || type === DATA)) return cut();
        const size = FRAME_HEADER + pending.readUIntBE(0, 3);
        if (pending.length < size) break;
        client.write(pending.subarray(0, size));
        pending = pending.subarray(size);
      }
    };
    client.on("data", (chunk: Buffer) => {
      if (h2 !== undefined) return;
      head = Buffer.concat([head, chunk]);
      if (head.length >= H2_PREFACE.length || !H2_PREFACE.subarray(0, head.length).equals(head)) {
        h2 = head.subarray(0, H2_PREFACE.length).equals(H2_PREFACE);
        forward();
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;

  return {
    url: `http://127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    get dropped() {
      return dropped;
    },
    armNextConnection() {
      armed = true;
    },
    untilDropped() {
      return dropped > 0 ? Promise.resolve() : new Promise<void>((resolve) => onDrop.push(resolve));
    },
    async stop() {
      for (const p of [...pairs]) close(p);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
