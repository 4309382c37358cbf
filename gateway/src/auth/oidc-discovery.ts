// OIDC discovery for the gateway: reads `<issuer>/.well-known/openid-configuration`, checks that it
// names the configured issuer and a usable `jwks_uri`, with every fetch bounded in time and size
// (the issuer is configured, but a misbehaving one must not hang or flood the gateway).

/** Discovery and JWKS responses larger than this are refused (real ones are a few KiB). */
export const MAX_OIDC_RESPONSE_BYTES = 512 * 1024;

/** Why discovery failed, in one line (logged; the issuer and URLs are not secrets). */
export class OidcDiscoveryError extends Error {
  override readonly name = "OidcDiscoveryError";
}

/** The parts of a discovery document the gateway uses. */
export interface OidcDiscovery {
  readonly issuer: string;
  readonly jwksUri: URL;
}

/**
 * An issuer or JWKS URL the gateway may fetch: https, or http on a loopback host (a local issuer
 * in tests and demos). Returns the reason it may not, or undefined.
 */
export function oidcUrlProblem(url: URL): string | undefined {
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && isLoopback(url.hostname)) return undefined;
  return "must be https (http only on 127.0.0.1, ::1 or localhost)";
}

/** Fetches and checks the discovery document of `issuer`. */
export async function discoverIssuer(issuer: string, timeoutMs: number): Promise<OidcDiscovery> {
  const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  let doc: unknown;
  try {
    const res = await boundedFetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "error", headers: { accept: "application/json" } });
    if (res.status !== 200) throw new OidcDiscoveryError(`${url} answered HTTP ${res.status}`);
    doc = await res.json();
  } catch (err) {
    if (err instanceof OidcDiscoveryError) throw err;
    throw new OidcDiscoveryError(`${url}: ${describeFetchError(err, timeoutMs)}`);
  }
  if (typeof doc !== "object" || doc === null) throw new OidcDiscoveryError(`${url}: not a JSON object`);
  const { issuer: named, jwks_uri: jwks } = doc as Record<string, unknown>;
  // OpenID Connect Discovery 1.0 §4.3: the issuer in the document must be identical to the one used.
  if (named !== issuer) throw new OidcDiscoveryError(`${url} names issuer ${JSON.stringify(named)}, not ${JSON.stringify(issuer)}`);
  let jwksUri: URL;
  try {
    jwksUri = new URL(String(jwks));
  } catch {
    throw new OidcDiscoveryError(`${url}: jwks_uri ${JSON.stringify(jwks)} is not a URL`);
  }
  const problem = oidcUrlProblem(jwksUri);
  if (problem) throw new OidcDiscoveryError(`${url}: jwks_uri ${jwksUri.href} ${problem}`);
  return { issuer, jwksUri };
}

/**
 * `fetch`, with the body read up to MAX_OIDC_RESPONSE_BYTES into a fresh Response. Also the fetch
 * given to jose for the JWKS, whose own fetch would read any size.
 */
export async function boundedFetch(url: string, init: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  const reader = res.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_OIDC_RESPONSE_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw new OidcDiscoveryError(`response larger than ${MAX_OIDC_RESPONSE_BYTES} bytes`);
      }
      chunks.push(value);
    }
  }
  // A Response for these statuses may not have a body at all.
  const body = [101, 204, 205, 304].includes(res.status) ? null : Buffer.concat(chunks);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return `no answer within ${timeoutMs} ms`;
  if (err instanceof SyntaxError) return "not valid JSON";
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `${err instanceof Error ? err.message : String(err)}${cause}`;
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || hostname === "::1" || /^127(\.\d{1,3}){3}$/.test(hostname);
}
