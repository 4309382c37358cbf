// Which principal a verified client certificate stands for: the auth file's "clientCertificates"
// entries (matched by exact subject or by SHA-256 fingerprint), else "defaultClientCertificate":
// "admin" (the default, as upstream's local mode: the platform admin) or "none" (the certificate
// only opens the connection; a bearer token must name the principal).

import { entryPrincipal, isObject, type Fail } from "./principal-entry.js";
import type { PeerCertificate } from "./peer-certificate.js";
import type { Principal } from "./principal.js";

/** The auth file's certificate sections, validated. */
export interface CertificatePrincipals {
  /** Canonical subject (`CN=a\nO=b`, attributes sorted) → principal. */
  readonly bySubject: ReadonlyMap<string, Principal>;
  /** Fingerprint (`AB:CD:…`) → principal. Looked up before the subject. */
  readonly byFingerprint: ReadonlyMap<string, Principal>;
  /** What a verified certificate without an entry grants. */
  readonly defaultPrincipal: "admin" | "none";
}

/** No entries; every verified certificate is the platform admin. */
export const DEFAULT_CERTIFICATE_PRINCIPALS: CertificatePrincipals = Object.freeze({
  bySubject: new Map(),
  byFingerprint: new Map(),
  defaultPrincipal: "admin",
});

/** The principal of a verified certificate, or undefined when it grants none. */
export function certificatePrincipal(rules: CertificatePrincipals, cert: Extract<PeerCertificate, { status: "verified" }>): Principal | undefined {
  const configured = rules.byFingerprint.get(cert.fingerprint256) ?? rules.bySubject.get(canonicalSubject(cert.subject));
  if (configured) return configured;
  if (rules.defaultPrincipal === "none") return undefined;
  return Object.freeze({ name: `cert:${cert.commonName ?? cert.fingerprint256}`, role: "admin", workspaces: "*" });
}

/** Validates `clientCertificates` and `defaultClientCertificate` of a parsed auth file. */
export function parseCertificatePrincipals(entries: unknown, defaultValue: unknown, fail: Fail): CertificatePrincipals {
  if (defaultValue !== undefined && defaultValue !== "admin" && defaultValue !== "none") {
    fail(`"defaultClientCertificate": must be "admin" or "none"`);
  }
  if (entries !== undefined && !Array.isArray(entries)) fail(`"clientCertificates" must be an array`);
  const bySubject = new Map<string, Principal>();
  const byFingerprint = new Map<string, Principal>();
  const seen = new Map<string, number>();
  ((entries ?? []) as unknown[]).forEach((raw, i) => {
    const at = (field: string) => `clientCertificates[${i}].${field}`;
    if (!isObject(raw)) fail(`clientCertificates[${i}]: expected an object`);
    const e = raw as Record<string, unknown>;
    const hasSubject = e.subject !== undefined;
    if (hasSubject === (e.fingerprint256 !== undefined)) fail(`${at("subject")}: exactly one of "subject" and "fingerprint256" is required`);
    const key = hasSubject ? `s:${subjectKey(e.subject, at("subject"), fail)}` : `f:${fingerprintKey(e.fingerprint256, at("fingerprint256"), fail)}`;
    const previous = seen.get(key);
    if (previous !== undefined) fail(`${at(hasSubject ? "subject" : "fingerprint256")}: same certificate as clientCertificates[${previous}]`);
    seen.set(key, i);
    const principal = entryPrincipal(e, at, fail, `certificate-${hasSubject ? "subject" : "sha256"}:${key.slice(2)}`);
    (hasSubject ? bySubject : byFingerprint).set(key.slice(2), principal);
  });
  return { bySubject, byFingerprint, defaultPrincipal: (defaultValue as "admin" | "none" | undefined) ?? "admin" };
}

/** `CN=openshell-user, O=Example` → canonical form; a comma inside a value is written `\,`. */
function subjectKey(value: unknown, field: string, fail: Fail): string {
  if (typeof value !== "string" || value.trim() === "") fail(`${field}: must be a subject such as "CN=openshell-user" or "CN=ci, O=Example"`);
  const parts = (value as string).split(/(?<!\\),/).map((p) => p.trim());
  const attrs: [string, string][] = [];
  for (const part of parts) {
    const m = /^([A-Za-z][A-Za-z0-9.]*)\s*=\s*(.+)$/.exec(part);
    if (!m) fail(`${field}: "${part}" is not KEY=value (expected a subject such as "CN=openshell-user")`);
    attrs.push([m![1]!.toUpperCase(), m![2]!.replaceAll("\\,", ",")]);
  }
  return canonicalSubject(attrs);
}

/** Upper-case hex pairs joined by colons; colons in the input are optional. */
function fingerprintKey(value: unknown, field: string, fail: Fail): string {
  const hex = typeof value === "string" ? value.replaceAll(":", "") : "";
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) fail(`${field}: must be a SHA-256 fingerprint, 32 hexadecimal bytes such as "AB:CD:…"`);
  return hex.toUpperCase().match(/../g)!.join(":");
}

/** Attributes sorted, one `KEY=value` per line: the same set in any order matches. */
function canonicalSubject(attrs: readonly (readonly [string, string])[]): string {
  return attrs
    .map(([k, v]) => `${k.toUpperCase()}=${v}`)
    .sort()
    .join("\n");
}
