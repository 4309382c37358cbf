// Opens a transport's TLS connections, HTTP/2 sessions and HTTP/1.1 sockets alike, with its one
// secure context, and records on a socket that fails what the error mapping (tls-classify.ts)
// needs to say what to do: the host, whether a client certificate was configured, and the gateway's
// certificate dates (an expired certificate's error carries no date of its own). Node only;
// imported by transport/node.ts alone.

import type { SecureClientSessionOptions } from "node:http2";
import * as https from "node:https";
import * as tls from "node:tls";
import { TLS_CONNECTION, type TlsConnectionInfo } from "./tls-classify.js";
import type { TlsSettings } from "./tls-options.js";

/** connect-node `nodeOptions` for HTTP/2 (passed to `http2.connect`). */
export function http2TlsOptions(settings: TlsSettings): SecureClientSessionOptions {
  return {
    createConnection: (authority: URL) => {
      const host = authority.hostname.replace(/^\[|\]$/g, "");
      const port = Number(authority.port || 443);
      const socket = tls.connect({ host, port, ALPNProtocols: ["h2"], ...connectionOptions(settings) });
      return observe(socket, authority.port ? authority.host : `${authority.host}:443`, settings.clientCertificate);
    },
  };
}

/**
 * connect-node `nodeOptions` for HTTP/1.1: an agent of this transport's own, so that its
 * connections (with its client certificate, or without verification) are never shared with
 * another transport to the same host. Keeps idle sockets like Node's global agent.
 */
export function httpsTlsOptions(settings: TlsSettings): https.RequestOptions {
  const agent = new ObservingAgent(
    { keepAlive: true, timeout: 5_000, scheduling: "lifo", ...connectionOptions(settings) },
    settings.clientCertificate,
  );
  return { agent };
}

class ObservingAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly clientCertificate: boolean,
  ) {
    super(options);
  }

  override createConnection(...args: Parameters<https.Agent["createConnection"]>): ReturnType<https.Agent["createConnection"]> {
    const socket = super.createConnection(...args);
    if (socket instanceof tls.TLSSocket) {
      const o = args[0] as { host?: string; port?: number | string };
      const host = o.host ?? "localhost";
      observe(socket, `${host.includes(":") ? `[${host}]` : host}:${o.port ?? 443}`, this.clientCertificate);
    }
    return socket;
  }
}

function connectionOptions(settings: TlsSettings): tls.ConnectionOptions {
  return {
    secureContext: settings.secureContext,
    rejectUnauthorized: settings.rejectUnauthorized,
    // An empty servername stops Node's HTTP/1.1 agent from deriving one from the host.
    servername: settings.servername ?? "",
    checkServerIdentity: settings.checkServerIdentity,
  };
}

function observe<S extends tls.TLSSocket>(socket: S, host: string, clientCertificate: boolean): S {
  const info: { -readonly [K in keyof TlsConnectionInfo]: TlsConnectionInfo[K] } = { host, clientCertificate, secured: false };
  socket.once("secureConnect", () => (info.secured = true));
  // "secure" is the socket's own event, on which it checks the gateway's certificate and, when
  // the check fails, destroys itself: listening first is the last chance to read the certificate.
  // (Should a Node release rename it, messages only lose the date.)
  socket.prependOnceListener("secure", () => {
    const cert = socket.getPeerCertificate();
    if (cert && typeof cert.valid_to === "string") info.peer = { validFrom: cert.valid_from, validTo: cert.valid_to };
  });
  socket.prependOnceListener("error", (err: unknown) => {
    if (typeof err === "object" && err !== null && !Object.isFrozen(err)) {
      Object.defineProperty(err, TLS_CONNECTION, { value: info, configurable: true, enumerable: false });
    }
  });
  return socket;
}
