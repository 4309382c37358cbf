// Hand-built request bodies over HTTP/2, for what no client library sends: bytes that are not
// UTF-8, messages nested hundreds of thousands deep, compressed bodies. Answers are read as the
// protocol frames them: a gRPC status from the trailers, a Connect error from the JSON body.

import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { Code } from "@connectrpc/connect";
import { TOKENS } from "./harness.js";

export type Protocol = "grpc" | "grpc-web" | "connect" | "connect-json";

export interface RawAnswer {
  /** The Connect code, or undefined for success. */
  readonly code: Code | undefined;
  readonly message: string;
}

const CONNECT_CODES: Record<string, Code> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [k.replace(/[A-Z]/g, (c, i) => (i > 0 ? "_" : "") + c.toLowerCase()), v as Code]),
);

function envelope(body: Uint8Array, compressed: boolean): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/**
 * Posts `body` (the message's encoding, or JSON text for connect-json) to `method` of the
 * OpenShell service as `who` (admin by default). `gzip`: compress it (the body, or each envelope).
 */
export function postRaw(
  url: string,
  method: string,
  body: Uint8Array,
  protocol: Protocol,
  options: { gzip?: boolean; who?: keyof typeof TOKENS } = {},
): Promise<RawAnswer> {
  const data = options.gzip ? gzipSync(body) : Buffer.from(body);
  const headers: http2.OutgoingHttpHeaders = {
    ":method": "POST",
    ":path": `/openshell.v1.OpenShell/${method}`,
    authorization: `Bearer ${TOKENS[options.who ?? "admin"]}`,
  };
  let payload: Buffer;
  switch (protocol) {
    case "grpc":
    case "grpc-web":
      headers["content-type"] = protocol === "grpc" ? "application/grpc+proto" : "application/grpc-web+proto";
      if (protocol === "grpc") headers.te = "trailers";
      if (options.gzip) headers["grpc-encoding"] = "gzip";
      payload = envelope(data, options.gzip === true);
      break;
    case "connect":
    case "connect-json":
      headers["content-type"] = protocol === "connect" ? "application/proto" : "application/json";
      if (options.gzip) headers["content-encoding"] = "gzip";
      payload = data;
      break;
  }
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request(headers);
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => (head = h));
    req.on("trailers", (t) => (trailers = t));
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", reject);
    req.on("end", () => {
      session.close();
      const text = Buffer.concat(chunks);
      if (protocol === "grpc" || protocol === "grpc-web") {
        let status = trailers["grpc-status"] ?? head["grpc-status"];
        let message = trailers["grpc-message"] ?? head["grpc-message"];
        if (protocol === "grpc-web" && status === undefined) {
          // gRPC-Web: the trailers are the last envelope of the body.
          const block = text.toString("latin1");
          status = /grpc-status:\s*(\d+)/.exec(block)?.[1];
          message = /grpc-message:\s*([^\r\n]*)/.exec(block)?.[1];
        }
        const code = Number(status);
        resolve({ code: code === 0 ? undefined : (code as Code), message: decodeURIComponent(String(message ?? "")) });
        return;
      }
      if (Number(head[":status"]) === 200) {
        resolve({ code: undefined, message: "" });
        return;
      }
      const err = JSON.parse(text.toString()) as { code: string; message: string };
      resolve({ code: CONNECT_CODES[err.code], message: err.message });
    });
    req.end(payload);
  });
}
