// Recognises a TLS failure in any error an RPC can end with, and says in one line what to do about
// it: toSdkError and the retry rule consult tlsFailureOf on every path. Browser-safe and small on
// purpose: the gateway's own answers (UNAUTHENTICATED `client certificate required` / `client
// certificate rejected: <why>`) are recognised here, with any transport; Node's TLS errors only
// Node produces, and the Node transport installs their classifier (transport/tls-classify.ts)
// when it loads, so that browser bundles do not carry those texts.

/** Why a TLS connection to the gateway failed, or why its TLS settings cannot be used. */
export type TlsFailure =
  /** The gateway's certificate is not signed by a CA this client trusts. */
  | "unknown-ca"
  /** The gateway's certificate does not name the host connected to. */
  | "name-mismatch"
  /** The gateway's certificate has expired (or is not valid yet). */
  | "expired"
  /** The gateway requires a client certificate and none was given. */
  | "client-certificate-required"
  /** The gateway refused the client certificate given. */
  | "client-certificate-rejected"
  /** The client key does not belong to the client certificate. */
  | "key-mismatch"
  /** A certificate or key file is missing, unreadable or not PEM (`file` names it). */
  | "bundle"
  /** Any other handshake failure. */
  | "handshake";

/** A recognised TLS failure and the one line that says what to do. */
export interface TlsFailureFound {
  readonly reason: TlsFailure;
  readonly message: string;
}

/** What to do when the gateway asks for a client certificate and got none. */
export const CERTIFICATE_REQUIRED =
  "the gateway requires a client certificate: pass tls.cert and tls.key (the mTLS bundle's tls.crt and tls.key)";

/** The failure for a client certificate the gateway refused, `why` being its reason or alert. */
export function rejected(why: string): TlsFailureFound {
  return {
    reason: "client-certificate-rejected",
    message: `the gateway rejected the client certificate (${why}): pass a certificate and key issued by a CA the gateway trusts (the mTLS bundle's tls.crt and tls.key)`,
  };
}

/** `text` on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

type Classifier = (chain: readonly object[]) => TlsFailureFound | undefined;
// On globalThis under a registry symbol: every copy of this package shares the one installed.
const CLASSIFIER = Symbol.for("openshell-config.tls.classifier");

/** Installs the classifier of transport errors (the Node transport's). */
export function setTlsClassifier(classifier: Classifier): void {
  (globalThis as { [CLASSIFIER]?: Classifier })[CLASSIFIER] = classifier;
}

const UNAUTHENTICATED = 16; // Code.Unauthenticated, matched on the number: any copy of Connect

/** The TLS failure `err` (or one of its causes) reports, with its one-line message; else undefined. */
export function tlsFailureOf(err: unknown): TlsFailureFound | undefined {
  const chain: object[] = [];
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    chain.push(e);
    // The gateway's answer when it checks client certificates itself, after the handshake.
    const { code, rawMessage } = e as { code?: unknown; rawMessage?: unknown };
    if (code === UNAUTHENTICATED && typeof rawMessage === "string") {
      if (/^client certificate required\b/.test(rawMessage)) return { reason: "client-certificate-required", message: CERTIFICATE_REQUIRED };
      const m = /^client certificate rejected(?::\s*(.*))?/.exec(rawMessage);
      if (m) return rejected(oneLine(m[1] || "the gateway gave no reason"));
    }
  }
  return (globalThis as { [CLASSIFIER]?: Classifier })[CLASSIFIER]?.(chain);
}
