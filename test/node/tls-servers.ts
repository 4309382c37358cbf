// Real TLS servers for the SDK's TLS tests, in the test process: node:http2 secure servers that
// also speak HTTP/1.1 (ALPN h2 and http/1.1), serving the fake gateway through connect-node, with
// client certificates checked either by TLS itself or by the gateway's answer; a server that
// answers the TLS handshake with one fatal alert; and `openssl s_server`, which (unlike Node)
// sends an alert when it refuses a client certificate. The Node ones count the connections they accepted.

import { spawn } from "node:child_process";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { TLSSocket } from "node:tls";
import { Code, ConnectError, createContextKey, createContextValues, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createFakeGateway, type FakeGateway } from "../support/fake-gateway.js";
import type { Pem } from "../../examples/tls/pki.js";

/** Every protocol the Node transport offers, and what the gateway sees of each. */
export const PROTOCOLS = [
  { protocol: "grpc", httpVersion: "2", seen: { httpVersion: "2.0", contentType: "application/grpc+proto" } },
  { protocol: "connect", httpVersion: "2", seen: { httpVersion: "2.0", contentType: "application/proto" } },
  { protocol: "grpc-web", httpVersion: "2", seen: { httpVersion: "2.0", contentType: "application/grpc-web+proto" } },
  { protocol: "connect", httpVersion: "1.1", seen: { httpVersion: "1.1", contentType: "application/proto" } },
  { protocol: "grpc-web", httpVersion: "1.1", seen: { httpVersion: "1.1", contentType: "application/grpc-web+proto" } },
] as const;

export interface TestServer {
  readonly url: string;
  /** TCP connections accepted so far (each TLS handshake attempt is one). */
  connections(): number;
  close(): Promise<void>;
}

export interface TlsGatewayOptions {
  /** The server's certificate and key. */
  readonly server: Pem;
  /** Ask for client certificates signed by this CA. */
  readonly clientCa?: string;
  /**
   * With `clientCa`: "tls" refuses a missing or unknown client certificate in the handshake (Node
   * sends the TLS 1.3 `certificate required` alert for a missing one, and closes without an alert
   * for an unknown one); "gateway" completes the handshake and answers each call UNAUTHENTICATED
   * `client certificate required` / `client certificate rejected: <why>`, as the reference gateway does.
   */
  readonly clientCheck?: "tls" | "gateway";
  readonly maxVersion?: "TLSv1.2" | "TLSv1.3";
  /** The gateway to serve; a fresh one with sandbox `dev` by default. */
  readonly gateway?: FakeGateway;
}

const kSocket = createContextKey<TLSSocket | undefined>(undefined);

// The reference gateway's answer when it checks the client certificate after the handshake.
const checkClientCertificate: Interceptor = (next) => async (req) => {
  const socket = req.contextValues.get(kSocket);
  if (socket && !socket.authorized) {
    const cert = socket.getPeerCertificate();
    if (!cert || Object.keys(cert).length === 0) throw new ConnectError("client certificate required", Code.Unauthenticated);
    throw new ConnectError(`client certificate rejected: ${String(socket.authorizationError)}`, Code.Unauthenticated);
  }
  return next(req);
};

/** A TLS gateway on 127.0.0.1 (HTTP/2 and HTTP/1.1). */
export async function startTlsGateway(options: TlsGatewayOptions): Promise<TlsGateway> {
  const gateway = options.gateway ?? createFakeGateway();
  if (options.gateway === undefined) gateway.addSandbox("dev");
  const check = options.clientCa !== undefined ? (options.clientCheck ?? "tls") : undefined;
  const handler = connectNodeAdapter({
    routes: gateway.routes,
    interceptors: check === "gateway" ? [checkClientCertificate] : [],
    contextValues: (req) => createContextValues().set(kSocket, req.socket as TLSSocket),
  });
  const server = http2.createSecureServer(
    {
      allowHTTP1: true,
      ALPNProtocols: ["h2", "http/1.1"],
      cert: options.server.cert,
      key: options.server.key,
      ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
      ...(options.clientCa !== undefined ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: check === "tls" } : {}),
    },
    handler,
  );
  // Handshake failures are what these servers are for; they are not errors of the server.
  server.on("tlsClientError", () => {});
  const requests: SeenRequest[] = [];
  const handshakes: Handshake[] = [];
  server.on("request", (req: http2.Http2ServerRequest) => {
    requests.push({ httpVersion: req.httpVersion, contentType: String(req.headers["content-type"] ?? "") });
  });
  server.on("secureConnection", (socket: TLSSocket) => {
    const cert = socket.getPeerCertificate();
    const cn = cert?.subject?.CN;
    handshakes.push({ servername: socket.servername || undefined, clientName: Array.isArray(cn) ? cn.join(",") : cn, alpn: socket.alpnProtocol || undefined });
  });
  return { ...(await listen(server)), gateway, requests: () => requests, handshakes: () => handshakes };
}

/** A request as the TLS gateway received it. */
export interface SeenRequest {
  /** "2.0" or "1.1". */
  readonly httpVersion: string;
  readonly contentType: string;
}

/** A completed TLS handshake as the TLS gateway saw it. */
export interface Handshake {
  /** The SNI the client sent, if any. */
  readonly servername: string | undefined;
  /** The CN of the client certificate, if one was presented. */
  readonly clientName: string | undefined;
  readonly alpn: string | undefined;
}

/** What startTlsGateway returns. */
export interface TlsGateway extends TestServer {
  readonly gateway: FakeGateway;
  requests(): readonly SeenRequest[];
  handshakes(): readonly Handshake[];
}

/** A server that answers every ClientHello with one fatal TLS alert (`description`, RFC 8446 §6). */
export async function startAlertServer(description: number): Promise<TestServer> {
  const server = net.createServer((socket) => {
    socket.on("error", () => {});
    socket.once("data", () => socket.end(Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description])));
  });
  return listen(server);
}

/** True when an `openssl` command is installed. */
export async function hasOpenssl(): Promise<boolean> {
  return new Promise((resolve) => {
    const p = spawn("openssl", ["version"], { stdio: "ignore" });
    p.on("error", () => resolve(false));
    p.on("exit", (code) => resolve(code === 0));
  });
}

/**
 * `openssl s_server` requiring a client certificate signed by the CA in `caFile`, with ALPN h2 and
 * http/1.1: it refuses an unknown certificate with a TLS alert, as non-Node servers do.
 */
export async function startOpensslServer(files: { cert: string; key: string; ca: string }): Promise<Omit<TestServer, "connections">> {
  const child = spawn(
    "openssl",
    ["s_server", "-accept", "127.0.0.1:0", "-cert", files.cert, "-key", files.key, "-CAfile", files.ca, "-Verify", "1", "-verify_return_error", "-alpn", "h2,http/1.1", "-www"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`openssl s_server exited (${code}): ${out}`)));
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /ACCEPT 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.stderr.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
  });
  return {
    url: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        child.removeAllListeners("exit");
        child.once("exit", () => resolve());
        child.kill();
      }),
  };
}

async function listen(server: net.Server): Promise<TestServer> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  server.on("connection", (socket: net.Socket) => {
    connections++;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    connections: () => connections,
    // Clients keep idle HTTP/2 sessions open for minutes: end them, or close() would wait for them.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
