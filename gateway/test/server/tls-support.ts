// Test support for the TLS tests: certificates made once per file, Connect-Node transports of every
// protocol and HTTP version with a CA and optionally a client certificate, and raw HTTP/1.1 and
// HTTP/2 requests over TLS.

import * as http2 from "node:http2";
import * as https from "node:https";
import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { createTestPki, type Pem, type TestPki } from "../../../examples/tls/pki.js";
import type { TlsMaterial } from "../../src/http/tls-files.js";

export type { Pem, TestPki };

let pki: Promise<TestPki> | undefined;
/** One set of certificates per test file. */
export function testPki(): Promise<TestPki> {
  return (pki ??= createTestPki());
}

/** The server side: the PKI's server certificate, and with `clientCa` the CA of client certificates. */
export function serverTls(p: TestPki, options: { clientCa?: boolean } = {}): TlsMaterial {
  return { cert: p.server.cert, key: p.server.key, ...(options.clientCa ? { clientCa: p.ca.cert } : {}) };
}

/** What a client presents: the CA it trusts and optionally a certificate. */
export interface ClientCredentials {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
}

export function credentials(p: TestPki, client?: Pem): ClientCredentials {
  return { ca: p.ca.cert, ...(client ? { cert: client.cert, key: client.key } : {}) };
}

/** gRPC, Connect and gRPC-Web over HTTP/2 and HTTP/1.1 (gRPC: HTTP/2 only), each with its own connections. */
export function tlsTransports(baseUrl: string, creds: ClientCredentials): Record<string, Transport> {
  const nodeOptions = { ...creds };
  return {
    "gRPC over HTTP/2": createGrpcTransport({ baseUrl, nodeOptions }),
    "Connect over HTTP/2": createConnectTransport({ baseUrl, httpVersion: "2", nodeOptions }),
    "Connect over HTTP/1.1": createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions }),
    "gRPC-Web over HTTP/2": createGrpcWebTransport({ baseUrl, httpVersion: "2", nodeOptions }),
    "gRPC-Web over HTTP/1.1": createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions }),
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP/1.1 request over TLS on a fresh connection. */
export function h1Request(
  url: string,
  creds: ClientCredentials,
  init: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(init.path, url), { method: init.method ?? "GET", headers: init.headers, agent: false, ...creds }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** One HTTP/2 request over TLS on a fresh session. */
export async function h2Request(
  url: string,
  creds: ClientCredentials,
  init: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  const session = http2.connect(url, { ...creds });
  session.on("error", () => undefined);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ":method": init.method ?? "GET", ":path": init.path, ...init.headers });
      let headers: Record<string, string | string[] | undefined> = {};
      let body = "";
      req.on("response", (h) => (headers = h));
      req.setEncoding("utf8");
      req.on("data", (c: string) => (body += c));
      req.on("end", () => resolve({ status: Number(headers[":status"]), headers, body }));
      req.on("error", reject);
      req.end(init.body);
    });
  } finally {
    session.close();
  }
}
