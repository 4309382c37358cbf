// Sends one large request without credentials, the way a client that streams its body would, and
// reports when the gateway answered and how much of the body it had taken by then. Over HTTP/2 a
// server that reads nothing grants no more than the stream's initial window (64 KiB); over
// HTTP/1.1 it stops draining the socket, so the sender's writes stall. Either way a gateway that
// authenticates from the headers answers long before the body is through.

import * as http from "node:http";
import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { UpdateConfigRequestSchema } from "openshell-config/raw";
import { envelope } from "./raw-wire.js";

export interface BodyAnswer {
  /** The gRPC status (HTTP/2) or the HTTP status (HTTP/1.1 Connect) of the answer. */
  readonly status: number;
  readonly message: string;
  /** Milliseconds from the first byte sent to the answer's headers. */
  readonly answeredAfterMs: number;
  /** Body bytes the gateway had accepted when it answered (HTTP/2: flow-controlled; HTTP/1.1: written to the socket). */
  readonly bodyBytesTaken: number;
  readonly bodyBytes: number;
}

/** An UpdateConfig request whose setting value is a string of `bytes` bytes. */
export function largeUpdateConfig(bytes: number): Uint8Array {
  return toBinary(
    UpdateConfigRequestSchema,
    create(UpdateConfigRequestSchema, { sandbox: "dev", settingKey: "blob", settingValue: { value: { case: "stringValue", value: "x".repeat(bytes) } } }),
  );
}

const PATH = "/openshell.v1.OpenShell/UpdateConfig";

/** gRPC over HTTP/2, one connection of its own. `token` undefined sends no authorization. */
export function sendOverHttp2(url: string, message: Uint8Array, token?: string): Promise<BodyAnswer> {
  return sendGrpcBody(url, envelope(message), token);
}

/** Like sendOverHttp2, with the body already enveloped (senders of many copies frame it once). */
export function sendGrpcBody(url: string, body: Uint8Array, token?: string): Promise<BodyAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const started = performance.now();
    const stream = session.request({
      ":method": "POST",
      ":path": PATH,
      "content-type": "application/grpc",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    let taken = 0;
    let answeredAfterMs = -1;
    let headers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => {
      answeredAfterMs = performance.now() - started;
      headers = h;
      // What the peer acknowledged by flow control: sent minus what is still queued here.
      taken = stream.bufferSize === undefined ? taken : Math.max(0, written - stream.bufferSize);
    });
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("trailers", (t) => (trailers = t));
    stream.on("error", () => undefined);
    stream.resume();
    const finish = () => {
      session.close();
      const status = Number(headers["grpc-status"] ?? trailers["grpc-status"] ?? -1);
      const message = decodeURIComponent(String(headers["grpc-message"] ?? trailers["grpc-message"] ?? ""));
      resolve({ status, message, answeredAfterMs, bodyBytesTaken: taken, bodyBytes: body.length });
    };
    stream.on("close", finish);
    // Written in 64 KiB pieces, each after the previous one drained: what is taken is what the
    // server's window let through.
    let written = 0;
    const CHUNK = 64 * 1024;
    const pump = () => {
      while (written < body.length && !stream.destroyed && answeredAfterMs < 0) {
        const piece = body.subarray(written, written + CHUNK);
        written += piece.length;
        taken = written;
        if (!stream.write(piece)) {
          taken = written - piece.length;
          stream.once("drain", () => {
            taken = written;
            pump();
          });
          return;
        }
      }
      if (written >= body.length && !stream.destroyed) stream.end();
    };
    pump();
  });
}

/** Connect binary over HTTP/1.1 on a connection of its own. */
export function sendOverHttp1(url: string, message: Uint8Array, token?: string): Promise<BodyAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const agent = new http.Agent({ keepAlive: false });
    const req = http.request(`${url}${PATH}`, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/proto",
        "content-length": String(message.length),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
    });
    let written = 0;
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const answeredAfterMs = performance.now() - started;
      const taken = Math.max(0, written - (req.socket?.writableLength ?? 0));
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        agent.destroy();
        let text = Buffer.concat(chunks).toString("utf8");
        try {
          text = (JSON.parse(text) as { message?: string }).message ?? text;
        } catch {
          // plain text
        }
        resolve({ status: res.statusCode ?? -1, message: text, answeredAfterMs, bodyBytesTaken: taken, bodyBytes: message.length });
      });
    });
    req.on("error", (err) => (answered ? undefined : reject(err)));
    // The gateway closes the connection after answering: the rest of the body meets a closed socket.
    req.on("socket", (socket) => socket.on("error", () => undefined));
    const CHUNK = 64 * 1024;
    const pump = () => {
      while (written < message.length && !answered && !req.destroyed) {
        const piece = message.subarray(written, written + CHUNK);
        written += piece.length;
        if (!req.write(piece)) {
          req.once("drain", pump);
          return;
        }
      }
      if (written >= message.length) req.end();
    };
    pump();
  });
}
