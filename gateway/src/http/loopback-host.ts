// Whether a request is addressed to this machine by a loopback name: what a gateway without
// authentication (--no-auth) answers. A browser page of any site can make its own name resolve to
// 127.0.0.1 (DNS rebinding) and then call a local gateway as that site, same-origin, with no CORS
// check in the way; the Host (HTTP/1.1) or :authority (HTTP/2) header still carries the site's
// name, so refusing every other name closes that door.

import { isIPv4, isIPv6 } from "node:net";

/** `localhost`, an address in 127.0.0.0/8, or ::1 (also as an IPv4-mapped address). */
export function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  if (h === "localhost") return true;
  if (isIPv4(h)) return h.startsWith("127.");
  if (isIPv6(h)) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (mapped) return mapped[1]!.startsWith("127.");
    return h === "::1" || /^0{0,4}(:0{0,4}){6}:0{0,3}1$/.test(h);
  }
  return false;
}

/** The host part of a Host or :authority value (`name:port`, `[v6]:port`, `name`); undefined if malformed. */
export function hostOfAuthority(authority: string): string | undefined {
  const a = authority.trim();
  if (a === "") return undefined;
  if (a.startsWith("[")) {
    const end = a.indexOf("]");
    if (end < 0) return undefined;
    const rest = a.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return undefined;
    return a.slice(1, end);
  }
  const colon = a.indexOf(":");
  if (colon < 0) return a;
  if (a.indexOf(":", colon + 1) >= 0) return undefined; // an IPv6 address must be bracketed
  return /^\d{1,5}$/.test(a.slice(colon + 1)) ? a.slice(0, colon) : undefined;
}

/** Why a --no-auth gateway refuses a request with this Host / :authority, or undefined if it is loopback. */
export function nonLoopbackAuthority(authority: string | undefined): string | undefined {
  const host = authority === undefined ? undefined : hostOfAuthority(authority);
  if (host !== undefined && isLoopbackName(host)) return undefined;
  const shown = authority === undefined ? "no Host header" : `Host ${JSON.stringify(authority.slice(0, 100))}`;
  return `${shown} is not a loopback name: this gateway runs without authentication (--no-auth) and answers only requests addressed to localhost, 127.0.0.1 or [::1]`;
}
