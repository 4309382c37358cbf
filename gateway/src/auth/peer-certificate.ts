// What the TLS layer learned about a caller's client certificate (`--tls-client-ca`): none sent,
// sent but not verified (and why), or verified (subject and fingerprint). The server reads it once
// per connection, after the handshake, and hands it to the auth interceptor in the call context.

import { createContextKey } from "@connectrpc/connect";
import type { TLSSocket } from "node:tls";

/** A connection's client certificate, as verified against the client CA during the handshake. */
export type PeerCertificate =
  | { readonly status: "none" }
  | {
      readonly status: "rejected";
      /** OpenSSL's verification error code, e.g. `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `CERT_HAS_EXPIRED`. */
      readonly reason: string;
    }
  | {
      readonly status: "verified";
      /** Subject attributes in order, e.g. `[["CN", "openshell-user"], ["O", "Example"]]`. */
      readonly subject: readonly (readonly [string, string])[];
      /** The subject's common name, when it has one. */
      readonly commonName: string | undefined;
      /** SHA-256 of the certificate (DER), `AB:CD:…` (upper case, as node and openssl print it). */
      readonly fingerprint256: string;
    };

/**
 * The call's client certificate: `undefined` on a listener that does not ask for one (no
 * `--tls-client-ca`, or the sandbox listener).
 */
export const peerCertificateKey = createContextKey<PeerCertificate | undefined>(undefined, { description: "client certificate" });

/** Reads what the handshake of `socket` (a server socket with `requestCert`) established. */
export function describePeerCertificate(socket: TLSSocket): PeerCertificate {
  const x509 = socket.getPeerX509Certificate();
  if (x509 === undefined) return { status: "none" };
  if (!socket.authorized) return { status: "rejected", reason: String(socket.authorizationError ?? "UNKNOWN") };
  const subject = parseSubject(x509.subject);
  return {
    status: "verified",
    subject,
    commonName: subject.find(([k]) => k === "CN")?.[1],
    fingerprint256: x509.fingerprint256,
  };
}

/** node prints a subject one `KEY=value` per line. */
export function parseSubject(text: string): (readonly [string, string])[] {
  const out: (readonly [string, string])[] = [];
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out.push([line.slice(0, eq), line.slice(eq + 1)] as const);
  }
  return out;
}
