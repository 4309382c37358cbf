// Bearer tokens: where they come from (a string or an async provider, e.g. a refreshing OIDC
// token) and where they may go. A token is never sent in clear text to another machine unless
// the caller says so explicitly.

import { InsecureTransportError } from "./errors.js";

/** A bearer token, or a function returning one (called before every request). */
export type TokenSource = string | (() => string | Promise<string>);

/** The `authorization` header value for a token source, or `undefined` when there is no token. */
export async function authorizationHeader(token: TokenSource | undefined): Promise<string | undefined> {
  if (token === undefined) return undefined;
  const value = typeof token === "function" ? await token() : token;
  return value === "" ? undefined : `Bearer ${value}`;
}

/**
 * True for hosts that never leave this machine: `localhost`, 127.0.0.0/8 and ::1. Not other
 * `*.localhost` names: browsers map them to loopback, but Node asks the system resolver, which
 * need not (a token or a client secret could go to whatever a DNS server says).
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Throws InsecureTransportError when a token would travel over plain http to a non-loopback host,
 * unless `allowInsecure` is set.
 */
export function assertTokenTransportSafe(baseUrl: string | undefined, allowInsecure: boolean | undefined): void {
  if (baseUrl === undefined || allowInsecure) return;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return; // relative URL in a browser: same origin as the page, whose scheme the page chose
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    throw new InsecureTransportError(
      `refusing to send a bearer token over plain http to ${url.host}; use https, or set allowInsecureToken: true`,
    );
  }
}
