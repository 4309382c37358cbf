// Recognises a TLS failure in any error an RPC can end with, and says in one line what to do about
// it: toSdkError and the retry rule consult tlsFailureOf on every path. Browser-safe and nearly
// empty on purpose: only a Node process presents or verifies certificates itself, so the Node
// transport installs the classifier (transport/tls-classify.ts: Node's TLS errors and the
// gateway's own answers, UNAUTHENTICATED `client certificate required` / `client certificate
// rejected: <why>`) when it loads, and browser bundles carry none of those texts. In a browser
// the gateway's answer stays an UnauthenticatedError whose message says the same.

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

type Classifier = (chain: readonly object[]) => TlsFailureFound | undefined;
// On globalThis under a registry symbol: every copy of this package shares the one installed.
const CLASSIFIER = Symbol.for("openshell-config.tls.classifier");

/** Installs the classifier of transport errors (the Node transport's). */
export function setTlsClassifier(classifier: Classifier): void {
  (globalThis as { [CLASSIFIER]?: Classifier })[CLASSIFIER] = classifier;
}

/**
 * The TLS failure `err` (or one of its causes) reports, with its one-line message; else
 * undefined. Without an installed classifier (a browser bundle), nothing is one.
 */
export function tlsFailureOf(err: unknown): TlsFailureFound | undefined {
  const classify = (globalThis as { [CLASSIFIER]?: Classifier })[CLASSIFIER];
  if (classify === undefined) return undefined;
  const chain: object[] = [];
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 6; e = (e as { cause?: unknown }).cause, depth++) chain.push(e);
  return classify(chain);
}
