// Recognises the TLS failures Node reports (certificate checks, TLS alerts, handshakes that are
// not TLS at all) in the errors connect-node raises, and the gateway's own answers about client
// certificates, and says in one line what to do. Installed
// into tls-failure.ts (which toSdkError and the retry rule consult) when the Node transport loads,
// so that browser bundles, which never see these errors, do not carry their texts. The socket
// observer (tls-connection.ts) attaches what it knows about the connection under TLS_CONNECTION.
// Node only; imported by transport/node.ts and tls-connection.ts alone.

import { setTlsClassifier, type TlsFailureFound } from "../tls-failure.js";

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

const UNAUTHENTICATED = 16; // Code.Unauthenticated, matched on the number: any copy of Connect

/** The gateway's own answer when it checks client certificates after the handshake, if `e` is one. */
function gatewayAnswer(e: object): TlsFailureFound | undefined {
  const { code, rawMessage } = e as { code?: unknown; rawMessage?: unknown };
  if (code !== UNAUTHENTICATED || typeof rawMessage !== "string") return undefined;
  if (/^client certificate required\b/.test(rawMessage)) return { reason: "client-certificate-required", message: CERTIFICATE_REQUIRED };
  const m = /^client certificate rejected(?::\s*(.*))?/.exec(rawMessage);
  return m ? rejected(oneLine(m[1] || "the gateway gave no reason")) : undefined;
}

/** What the Node transport attaches to a failed TLS socket's error. */
export interface TlsConnectionInfo {
  /** `host:port` connected to. */
  readonly host: string;
  /** True when a client certificate was configured (and so offered when asked for). */
  readonly clientCertificate: boolean;
  /** The gateway's leaf certificate, when the handshake got that far. */
  readonly peer?: { readonly validFrom: string; readonly validTo: string } | undefined;
  /** False until the TLS handshake completed: a failure before that means nothing was sent. */
  readonly secured?: boolean;
}

/** The property (a registry symbol, shared by every copy of this package) holding TlsConnectionInfo. */
export const TLS_CONNECTION: unique symbol = Symbol.for("openshell-config.tls.connection") as never;

/** Makes tlsFailureOf (and so toSdkError and the retry rule) recognise Node's TLS errors. Idempotent. */
export function installTlsClassifier(): void {
  setTlsClassifier(classifyNodeTlsFailure);
}

/** The TLS failure a Node error chain reports, with its one-line message; else undefined. */
export function classifyNodeTlsFailure(chain: readonly object[]): TlsFailureFound | undefined {
  let info: TlsConnectionInfo | undefined;
  for (const e of chain) info ??= (e as { [TLS_CONNECTION]?: TlsConnectionInfo })[TLS_CONNECTION];
  for (const e of chain) {
    const found = gatewayAnswer(e) ?? classify(e, info);
    if (found) return found;
  }
  return undefined;
}

const UNKNOWN_CA = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
]);
// The rest of OpenSSL's verification results, as Node names them: the certificate was refused.
const OTHER_VERIFY = /^(?:CERT_|CRL_|ERROR_IN_|UNABLE_TO_|INVALID_(?:CA|PURPOSE)$|PATH_LENGTH_EXCEEDED$)/;
// Alerts a server sends about the client's certificate (OpenSSL's names, as in ERR_SSL_*_ALERT_*).
const REJECTED_ALERTS = new Set([
  "UNKNOWN_CA",
  "BAD_CERTIFICATE",
  "CERTIFICATE_UNKNOWN",
  "CERTIFICATE_REVOKED",
  "CERTIFICATE_EXPIRED",
  "UNSUPPORTED_CERTIFICATE",
  "ACCESS_DENIED",
  "DECRYPT_ERROR",
]);

function classify(
  e: { code?: unknown; message?: unknown; host?: unknown; cert?: unknown },
  info: TlsConnectionInfo | undefined,
): TlsFailureFound | undefined {
  if (typeof e.code !== "string") return undefined;
  const code = e.code;
  const text = typeof e.message === "string" ? e.message : "";
  // A gateway that refuses a client certificate during a TLS 1.2 handshake may just close the
  // connection, without an alert (node's own TLS server does): a reset before the handshake
  // completed, with a certificate offered, is that refusal far more often than a crash.
  if (info?.secured === false && info.clientCertificate && (code === "ECONNRESET" || code === "EPIPE")) {
    return {
      reason: "client-certificate-rejected",
      message: `the gateway (${info.host}) closed the connection during the TLS handshake, after the client certificate was offered: it most likely refused the certificate; pass a certificate and key issued by a CA the gateway trusts (the mTLS bundle's tls.crt and tls.key)`,
    };
  }
  const gateway = info ? `the gateway's certificate (${info.host})` : "the gateway's certificate";
  if (UNKNOWN_CA.has(code)) {
    return {
      reason: "unknown-ca",
      message: `${gateway} is not signed by a trusted CA (${oneLine(text)}): pass its CA as tls.ca (the mTLS bundle's ca.crt)`,
    };
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID" || code === "HOSTNAME_MISMATCH") {
    const host = typeof e.host === "string" ? e.host : info?.host;
    const names = namesIn(e.cert);
    return {
      reason: "name-mismatch",
      message:
        `the gateway's certificate does not name ${host ?? "the host connected to"}` +
        (names ? ` (it names ${names})` : "") +
        ": connect by a name it holds, or set tls.serverName to one",
    };
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    const expired = code === "CERT_HAS_EXPIRED";
    const when = dateOf(expired ? info?.peer?.validTo : info?.peer?.validFrom);
    // The date is the leaf's; when the leaf is within its dates, another certificate of the chain is the one out of them.
    const leafOut = when !== undefined && (expired ? Date.parse(when) < Date.now() : Date.parse(when) > Date.now());
    return {
      reason: "expired",
      message: expired
        ? `${gateway} ${leafOut ? `expired on ${when}` : "or one in its chain has expired"}: renew the gateway's certificate`
        : `${gateway} ${leafOut ? `is not valid before ${when}` : "or one in its chain is not valid yet"}: check this machine's clock, or reissue the certificate`,
    };
  }
  if (OTHER_VERIFY.test(code)) {
    return { reason: "handshake", message: `${gateway} was refused (${oneLine(text)}, ${code}): reissue it, or pass the CA that signed it as tls.ca` };
  }
  const alert = alertIn(code, text);
  if (alert === "CERTIFICATE_REQUIRED" || alert === "NO_CERTIFICATE" || (alert === "HANDSHAKE_FAILURE" && info?.clientCertificate === false)) {
    return { reason: "client-certificate-required", message: CERTIFICATE_REQUIRED };
  }
  if (alert !== undefined && REJECTED_ALERTS.has(alert)) return rejected(`TLS alert ${alert.toLowerCase().replace(/_/g, " ")}`);
  if (code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_") || code === "EPROTO") {
    const detail = oneLine(opensslReason(text));
    return {
      reason: "handshake",
      message: /wrong version number|packet length too long|http request/.test(detail)
        ? `${info?.host ?? "the gateway"} does not answer in TLS (${detail}): use an http:// baseUrl if the gateway serves plain HTTP`
        : `the TLS handshake${info ? ` with ${info.host}` : ""} failed (${detail}): check the baseUrl and the gateway's TLS settings`,
    };
  }
  return undefined;
}

// ERR_SSL_TLSV1_ALERT_UNKNOWN_CA → UNKNOWN_CA; over HTTP/1.1 the same arrives as EPROTO whose
// message holds OpenSSL's text: "...:ssl3_read_bytes:tlsv1 alert unknown ca:...".
function alertIn(code: string, text: string): string | undefined {
  const byCode = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_([A-Z0-9_]+)$/.exec(code);
  if (byCode) return byCode[1];
  const byText = /\b(?:sslv3|tlsv1|tlsv13) alert ([a-z0-9 ]+?)(?::|$)/i.exec(text);
  return byText ? byText[1]!.toUpperCase().replace(/ /g, "_") : undefined;
}

// "80CC…:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:../deps/…" → "tlsv1 alert unknown ca"
function opensslReason(text: string): string {
  return /SSL routines:[^:]*:([^:]+)/.exec(text)?.[1] ?? (text || "no detail");
}

// Node's peer certificate: subjectaltname "DNS:gateway.example.com, IP Address:10.0.0.1", else the subject's CN.
function namesIn(cert: unknown): string | undefined {
  const c = cert as { subjectaltname?: unknown; subject?: { CN?: unknown } } | undefined;
  if (typeof c?.subjectaltname === "string" && c.subjectaltname !== "") {
    return c.subjectaltname
      .split(/,\s*/)
      .map((n) => n.replace(/^(?:DNS|IP Address):/, ""))
      .join(", ");
  }
  return typeof c?.subject?.CN === "string" ? c.subject.CN : undefined;
}

// "Dec  2 07:47:57 2026 GMT" → ISO 8601.
function dateOf(text: string | undefined): string | undefined {
  const ms = text === undefined ? NaN : Date.parse(text);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString().replace(".000Z", "Z");
}
