// Tells HTTP/2 prior-knowledge (h2c) connections from HTTP/1.1 ones on a shared cleartext port:
// reads until the first bytes match or rule out the HTTP/2 client preface, then puts them back.

import type { Socket } from "node:net";

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/**
 * Calls `onDetected` once with the connection's protocol, with the bytes read so far unshifted
 * back into the (paused) socket so the next consumer sees the whole stream. Sockets that close
 * or error before a decision are destroyed quietly; `timeoutMs` bounds how long a silent client
 * may hold a connection.
 */
export function sniffProtocol(socket: Socket, timeoutMs: number, onDetected: (protocol: "h2" | "http/1.1") => void): void {
  let seen: Buffer = Buffer.alloc(0);
  const done = () => {
    socket.removeListener("data", onData);
    socket.removeListener("error", onError);
    socket.removeListener("end", onEnd);
    socket.setTimeout(0);
    socket.removeListener("timeout", onTimeout);
  };
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const matches = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (matches && n < PREFACE.length) return; // could still be HTTP/2: need more bytes
    done();
    socket.pause();
    socket.unshift(seen);
    onDetected(matches ? "h2" : "http/1.1");
  };
  const onError = () => {
    done();
    socket.destroy();
  };
  const onEnd = onError;
  const onTimeout = onError;
  socket.on("data", onData);
  socket.on("error", onError);
  socket.on("end", onEnd);
  socket.setTimeout(timeoutMs, onTimeout);
}
