// The TLS failure mapping on error shapes the live tests cannot all produce on demand (a
// certificate not valid yet, OpenSSL text with line breaks, alerts wrapped in other codes), and
// the retry rule's side of it: a TLS failure is never transient, whatever code carries it. The
// first test runs before the Node classifier is installed, as in a browser bundle.

import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { RpcError, TlsError, UnauthenticatedError, UnavailableError } from "../../src/index.js";
import { toSdkError } from "../../src/errors.js";
import { isNetworkFailure, isTransient } from "../../src/retry.js";
import { installTlsClassifier, TLS_CONNECTION, type TlsConnectionInfo } from "../../src/transport/tls-classify.js";
import { tlsFailureOf } from "../../src/tls-failure.js";

/** A Node-style error (string `code`), optionally carrying what the Node transport attaches. */
function nodeError(code: string, message: string, info?: TlsConnectionInfo): Error {
  const err = Object.assign(new Error(message), { code });
  if (info) Object.defineProperty(err, TLS_CONNECTION, { value: info });
  return err;
}

/** As connect-node reports a failed connection: INTERNAL, caused by the Node error. */
function viaConnect(cause: Error, code = Code.Internal): ConnectError {
  const ce = new ConnectError(cause.message, code);
  ce.cause = cause;
  return ce;
}

describe("without the Node transport (a browser bundle)", () => {
  it("recognises no TLS failure until the Node transport installs its classifier: browsers present no certificates, and carry none of the texts", () => {
    const required = new ConnectError("client certificate required", Code.Unauthenticated);
    const unknownCa = viaConnect(nodeError("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate"));
    expect(tlsFailureOf(required)).toBeUndefined();
    expect(tlsFailureOf(unknownCa)).toBeUndefined();
    installTlsClassifier();
    expect(tlsFailureOf(required)?.reason).toBe("client-certificate-required");
    expect(tlsFailureOf(unknownCa)?.reason).toBe("unknown-ca");
  });
});

describe("tlsFailureOf", () => {
  beforeAll(() => installTlsClassifier());

  it("leaves failures that are not TLS alone", () => {
    for (const err of [
      viaConnect(nodeError("ECONNRESET", "socket hang up"), Code.Aborted),
      viaConnect(nodeError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"), Code.Unavailable),
      new ConnectError("missing or invalid bearer token", Code.Unauthenticated),
      new ConnectError("client certificate required", Code.PermissionDenied),
      new ConnectError("boom", Code.Internal),
      new TypeError("fetch failed"),
      "a string",
      undefined,
    ]) {
      expect(tlsFailureOf(err), String(err)).toBeUndefined();
    }
    expect(toSdkError(new ConnectError("missing or invalid bearer token", Code.Unauthenticated))).toBeInstanceOf(UnauthenticatedError);
  });

  it("a certificate not valid yet says from when, and to check the clock", () => {
    const from = new Date(Date.now() + 86_400_000);
    const err = toSdkError(viaConnect(nodeError("CERT_NOT_YET_VALID", "certificate is not yet valid", {
      host: "gw.example.com:443",
      clientCertificate: false,
      peer: { validFrom: from.toUTCString(), validTo: new Date(Date.now() + 9e9).toUTCString() },
    })));
    expect(err).toBeInstanceOf(TlsError);
    expect(err).toMatchObject({ reason: "expired", connectCode: Code.Internal });
    expect(err.message).toBe(
      `the gateway's certificate (gw.example.com:443) is not valid before ${from.toISOString().replace(/\.\d{3}Z$/, "Z")}: check this machine's clock, or reissue the certificate`,
    );
  });

  it("an expired certificate whose leaf is still valid blames the chain instead of giving the leaf's date", () => {
    const info = { host: "gw:443", clientCertificate: false, peer: { validFrom: "Jan 1 00:00:00 2020 GMT", validTo: "Jan 1 00:00:00 2999 GMT" } };
    expect(tlsFailureOf(nodeError("CERT_HAS_EXPIRED", "certificate has expired", info))?.message).toBe(
      "the gateway's certificate (gw:443) or one in its chain has expired: renew the gateway's certificate",
    );
    expect(tlsFailureOf(nodeError("CERT_HAS_EXPIRED", "certificate has expired"))?.message).toBe(
      "the gateway's certificate or one in its chain has expired: renew the gateway's certificate",
    );
  });

  it.each([
    ["SELF_SIGNED_CERT_IN_CHAIN", "self-signed certificate in certificate chain"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate"],
    ["UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "unable to get local issuer certificate"],
    ["UNABLE_TO_GET_ISSUER_CERT", "unable to get issuer certificate"],
  ])("%s is unknown-ca", (code, message) => {
    expect(tlsFailureOf(viaConnect(nodeError(code, message)))).toEqual({
      reason: "unknown-ca",
      message: `the gateway's certificate is not signed by a trusted CA (${message}): pass its CA as tls.ca (the mTLS bundle's ca.crt)`,
    });
  });

  it("other certificate checks are handshake failures that name the check", () => {
    expect(tlsFailureOf(nodeError("CERT_SIGNATURE_FAILURE", "certificate signature failure"))?.message).toBe(
      "the gateway's certificate was refused (certificate signature failure, CERT_SIGNATURE_FAILURE): reissue it, or pass the CA that signed it as tls.ca",
    );
  });

  it("an alert inside an EPROTO message (HTTP/1.1), OpenSSL's line breaks and all, is one line", () => {
    const text = "write EPROTO 80CC5324A67F0000:error:0A000418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:1605:SSL alert number 48\n";
    expect(tlsFailureOf(viaConnect(nodeError("EPROTO", text)))).toEqual({
      reason: "client-certificate-rejected",
      message: "the gateway rejected the client certificate (TLS alert unknown ca): pass a certificate and key issued by a CA the gateway trusts (the mTLS bundle's tls.crt and tls.key)",
    });
    const other = tlsFailureOf(nodeError("EPROTO", "write EPROTO 80:error:0A00010B:SSL routines:ssl3_get_record:wrong\nversion number:x"));
    expect(other?.reason).toBe("handshake");
    expect(other?.message).not.toContain("\n");
  });

  it("handshake_failure means 'required' only when no client certificate was configured", () => {
    const alert = "80:error:0A000410:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure:x";
    const without = nodeError("ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE", alert, { host: "h:1", clientCertificate: false });
    const withCert = nodeError("ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE", alert, { host: "h:1", clientCertificate: true });
    const unknown = nodeError("ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE", alert);
    expect(tlsFailureOf(without)?.reason).toBe("client-certificate-required");
    expect(tlsFailureOf(withCert)).toEqual({ reason: "handshake", message: "the TLS handshake with h:1 failed (sslv3 alert handshake failure): check the baseUrl and the gateway's TLS settings" });
    expect(tlsFailureOf(unknown)?.reason).toBe("handshake");
  });

  it("the gateway's own answers: 'required', and 'rejected' with or without its reason", () => {
    expect(toSdkError(new ConnectError("client certificate required", Code.Unauthenticated))).toMatchObject({
      reason: "client-certificate-required",
      connectCode: Code.Unauthenticated,
    });
    expect(tlsFailureOf(new ConnectError("client certificate rejected: CERT_HAS_EXPIRED", Code.Unauthenticated))?.message).toMatch(
      /^the gateway rejected the client certificate \(CERT_HAS_EXPIRED\): /,
    );
    expect(tlsFailureOf(new ConnectError("client certificate rejected", Code.Unauthenticated))?.message).toMatch(
      /^the gateway rejected the client certificate \(the gateway gave no reason\): /,
    );
    // Another copy of Connect: recognised by its shape (numeric code, rawMessage).
    expect(tlsFailureOf({ name: "ConnectError", code: 16, rawMessage: "client certificate required" })?.reason).toBe("client-certificate-required");
  });
});

describe("retries", () => {
  beforeAll(() => installTlsClassifier());

  it("a TLS failure is never transient, whatever code carries it", () => {
    const cause = nodeError("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate");
    for (const code of [Code.Internal, Code.Unavailable, Code.Aborted, Code.Unknown]) {
      expect(isTransient(viaConnect(cause, code)), Code[code]).toBe(false);
      expect(isTransient(viaConnect(cause, code), [code]), Code[code]).toBe(false);
    }
    expect(isNetworkFailure(viaConnect(cause))).toBe(false);
    expect(isTransient(new ConnectError("client certificate required", Code.Unauthenticated), [Code.Unauthenticated])).toBe(false);
  });

  it("a broken connection still is, and maps as before", () => {
    const reset = viaConnect(nodeError("ECONNRESET", "socket hang up"), Code.Aborted);
    expect(isTransient(reset)).toBe(true);
    expect(toSdkError(reset)).toBeInstanceOf(UnavailableError);
    expect(toSdkError(new ConnectError("boom", Code.Internal))).toBeInstanceOf(RpcError);
  });
});
