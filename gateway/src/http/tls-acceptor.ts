// TLS for the gateway's listeners: each accepted TCP socket is handed to a node tls.Server (never
// listening itself) for the handshake, with ALPN offering h2 and http/1.1, a bound on how long the
// handshake may take, and, with a client CA, a request for a client certificate that is verified
// but never refused here: a TLS 1.3 client refused during the handshake sees only a reset, so the
// server refuses its requests instead, with a message saying why (server.ts).

import type { Socket } from "node:net";
import * as tls from "node:tls";
import type { Logger } from "../observability/logger.js";
import type { TlsMaterial } from "./tls-files.js";

export interface TlsAcceptorOptions {
  readonly material: TlsMaterial;
  /** Ask for a client certificate chaining to `material.clientCa`. */
  readonly requestClientCertificate: boolean;
  /** A connection whose handshake has not finished by then is dropped. */
  readonly handshakeTimeoutMs: number;
  readonly logger: Logger;
  /** Called once per completed handshake with the TLS socket and the TCP socket under it. */
  readonly onSecure: (secure: tls.TLSSocket, raw: Socket) => void;
}

/** Returns what to call with each accepted TCP socket. */
export function createTlsAcceptor(options: TlsAcceptorOptions): (raw: Socket) => void {
  const { material, logger } = options;
  const server = tls.createServer({
    cert: material.cert,
    key: material.key,
    ALPNProtocols: ["h2", "http/1.1"],
    handshakeTimeout: options.handshakeTimeoutMs,
    ...(options.requestClientCertificate ? { requestCert: true, rejectUnauthorized: false, ca: material.clientCa } : {}),
  });
  // node does not say which TCP socket a TLS socket runs on; the four addresses and ports of a
  // connection tell live connections apart (the peer's alone may repeat across local addresses of
  // a wildcard listener), and the TLS socket reports those of its TCP socket.
  const handshaking = new Map<string, Socket>();
  server.on("secureConnection", (secure: tls.TLSSocket) => {
    const key = peerKey(secure);
    const raw = key === undefined ? undefined : handshaking.get(key);
    if (raw === undefined) {
      secure.destroy();
      return;
    }
    handshaking.delete(key!);
    options.onSecure(secure, raw);
  });
  // With this listener attached node leaves the socket to us: destroy it, or a client that never
  // completes its handshake would keep the connection open after the timeout.
  server.on("tlsClientError", (err: NodeJS.ErrnoException, secure: tls.TLSSocket) => {
    logger.debug({ err: { code: err.code, message: err.message } }, "TLS handshake failed");
    secure.destroy();
  });
  return (raw) => {
    const key = peerKey(raw);
    if (key === undefined) {
      raw.destroy();
      return;
    }
    handshaking.set(key, raw);
    raw.once("close", () => {
      if (handshaking.get(key) === raw) handshaking.delete(key);
    });
    server.emit("connection", raw);
  };
}

function peerKey(socket: Socket): string | undefined {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (remoteAddress === undefined || remotePort === undefined || localAddress === undefined || localPort === undefined) return undefined;
  return `${remoteAddress} ${remotePort} ${localAddress} ${localPort}`;
}
