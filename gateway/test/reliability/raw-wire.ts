// Sends arbitrary bytes as the body of an RPC, framed the way each protocol frames a request
// (gRPC over HTTP/2; gRPC-Web, Connect binary and Connect JSON over HTTP/1.1), and reads back
// the status the gateway answered, however that protocol carries it. No client library in the
// way: the point is to reach the server with what no well-behaved client would send.

import * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import type { Protocol } from "./reliability-gateway.js";

export interface RawAnswer {
  /** undefined = the call succeeded (or a stream was still open when we stopped listening). */
  readonly code: Code | undefined;
  readonly message: string;
}

/** Prefixes `payload` with the 5-byte envelope (flags, big-endian length) of gRPC and Connect streams. */
export function envelope(payload: Uint8Array, flags = 0): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

const CONNECT_CODES: Record<string, Code> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [k.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`)), v as Code]),
);

function connectCode(name: unknown): Code {
  return typeof name === "string" && name in CONNECT_CODES ? CONNECT_CODES[name]! : Code.Unknown;
}

/** Reads envelopes from a Connect streaming response body; the end-stream one carries the error. */
function connectStreamAnswer(body: Uint8Array): RawAnswer {
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at]!;
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    const payload = body.subarray(at + 5, at + 5 + len);
    at += 5 + len;
    if (flags & 0x02) {
      const end = JSON.parse(Buffer.from(payload).toString("utf8") || "{}") as { error?: { code?: string; message?: string } };
      return end.error ? { code: connectCode(end.error.code), message: end.error.message ?? "" } : { code: undefined, message: "" };
    }
  }
  return { code: undefined, message: "" };
}

/** gRPC-Web puts the trailers in a final frame with flag 0x80 (or in headers for trailers-only). */
function grpcWebAnswer(headers: Headers, body: Uint8Array): RawAnswer {
  let status = headers.get("grpc-status");
  let message = headers.get("grpc-message") ?? "";
  let at = 0;
  while (status === null && at + 5 <= body.length) {
    const flags = body[at]!;
    const len = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    const payload = body.subarray(at + 5, at + 5 + len);
    at += 5 + len;
    if (flags & 0x80) {
      for (const line of Buffer.from(payload).toString("utf8").split("\r\n")) {
        const i = line.indexOf(":");
        const k = line.slice(0, i).trim().toLowerCase();
        if (k === "grpc-status") status = line.slice(i + 1).trim();
        if (k === "grpc-message") message = decodeURIComponent(line.slice(i + 1).trim());
      }
    }
  }
  return status === null || status === "0" ? { code: undefined, message } : { code: Number(status) as Code, message };
}

export interface RawCall {
  readonly url: string;
  readonly protocol: Protocol;
  /** `openshell.v1.OpenShell/UpdateConfig` */
  readonly path: string;
  readonly streaming: boolean;
  readonly body: Uint8Array;
  readonly token: string | undefined;
  /** Stop listening after this long (an accepted stream may stay open). */
  readonly timeoutMs?: number;
}

/** Sends one raw call and reports the status it got. */
export async function sendRaw(call: RawCall): Promise<RawAnswer> {
  const timeoutMs = call.timeoutMs ?? 1_000;
  if (call.protocol === "grpc") return sendGrpc(call, timeoutMs);
  const json = call.protocol === "connect-json";
  const contentType =
    call.protocol === "grpc-web"
      ? "application/grpc-web+proto"
      : call.streaming
        ? json ? "application/connect+json" : "application/connect+proto"
        : json ? "application/json" : "application/proto";
  const headers: Record<string, string> = { "content-type": contentType };
  if (call.protocol !== "grpc-web") headers["connect-protocol-version"] = "1";
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  let res: Response;
  try {
    res = await fetch(`${call.url}/${call.path}`, { method: "POST", headers, body: new Uint8Array(call.body), signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    if ((err as Error).name === "TimeoutError") return { code: undefined, message: "still open" };
    throw err;
  }
  let body: Uint8Array;
  try {
    body = new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    if ((err as Error).name === "TimeoutError" || (err as Error).name === "AbortError") return { code: undefined, message: "still open" };
    throw err;
  }
  if (call.protocol === "grpc-web") return grpcWebAnswer(res.headers, body);
  if (call.streaming && res.status === 200) return connectStreamAnswer(body);
  if (res.status === 200) return { code: undefined, message: "" };
  // Bidirectional streams need HTTP/2; over HTTP/1.1 connect-node answers 505 before reading.
  if (res.status === 505) return { code: Code.Unimplemented, message: "HTTP 505: this method needs HTTP/2" };
  let parsed: { code?: string; message?: string } = {};
  try {
    parsed = JSON.parse(Buffer.from(body).toString("utf8")) as typeof parsed;
  } catch {
    return { code: Code.Unknown, message: `HTTP ${res.status} without a Connect error body` };
  }
  return { code: connectCode(parsed.code), message: parsed.message ?? "" };
}

function sendGrpc(call: RawCall, timeoutMs: number): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(call.url);
    session.on("error", reject);
    const headers: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":path": `/${call.path}`,
      "content-type": "application/grpc+proto",
      te: "trailers",
    };
    if (call.token) headers.authorization = `Bearer ${call.token}`;
    const stream = session.request(headers);
    let status: string | undefined;
    let message = "";
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) message = decodeURIComponent(String(h["grpc-message"]));
    };
    const finish = (answer: RawAnswer) => {
      clearTimeout(timer);
      stream.close();
      session.close();
      resolve(answer);
    };
    const timer = setTimeout(() => finish({ code: undefined, message: "still open" }), timeoutMs);
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", () => undefined);
    stream.on("error", () => undefined);
    stream.on("close", () => {
      if (status === undefined) finish({ code: Code.Unknown, message: `stream closed without grpc-status (rst ${stream.rstCode})` });
      else finish({ code: status === "0" ? undefined : (Number(status) as Code), message });
    });
    stream.end(call.body);
  });
}
