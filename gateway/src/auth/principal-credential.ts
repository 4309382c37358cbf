// Which credential a principal was configured for, as a key that is not a secret: `token-sha256:`
// and the hex SHA-256 of a bearer token, `certificate-sha256:` and a certificate's fingerprint, or
// `certificate-subject:` and its canonical subject. A supervisor's binding to the sandbox
// instance it serves is stored under this key (rpc/supervisor-identity.ts), so it follows the
// credential, not the principal's name, which several entries may share.
//
// Kept beside the principal rather than in it: a principal is plain data that tests and logs
// compare and print, and the key is bookkeeping that only the supervisor identity reads.

import type { Principal } from "./principal.js";

const credentials = new WeakMap<Principal, string>();

/** Records that `principal` (one auth-file entry's) stands for the credential `key`; returns it. */
export function withCredential<P extends Principal>(principal: P, key: string): P {
  credentials.set(principal, key);
  return principal;
}

/** The credential key of an auth-file principal; undefined for others (OIDC, --no-auth, certificates' default admin). */
export function credentialOf(principal: Principal): string | undefined {
  return credentials.get(principal);
}

/** The key of a bearer token, from its SHA-256 digest. */
export function tokenCredential(digest: Buffer): string {
  return `token-sha256:${digest.toString("hex")}`;
}
