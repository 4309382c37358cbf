// A real OpenID Connect issuer for tests: a node:http server on 127.0.0.1 (port 0) that SDK token
// providers, the CLI and the gateway's JWT validation talk to over real HTTP.
//
//   const issuer = await startOidcIssuer({ clients: { svc: { secret: "s3cret" } } });
//   issuer.issuer                      // "http://127.0.0.1:PORT" (no trailing slash; `path` appends)
//   GET  /.well-known/openid-configuration   issuer, token_endpoint, jwks_uri, grant types, auth methods
//   GET  /jwks                         the public key (ES256 by default, `alg: "RS256"` for RSA)
//   POST /token                        grant_type=client_credentials (a registered client with its secret,
//                                      by client_secret_basic or client_secret_post; `scope` and `audience`
//                                      honoured) or grant_type=refresh_token (rotating: each use answers a
//                                      new refresh token and spends the old one; a spent one is 400
//                                      invalid_grant). Access tokens are JWTs: iss, aud (the requested
//                                      audience, else the client id), sub, client_id, exp, iat, jti, scope,
//                                      plus `claims` (issuer-wide) and the client's own `claims` (e.g. roles).
//   Knobs (mutable): issuer.expiresInS (token lifetime; null = no expires_in in the answer, the JWT
//     still expires after an hour), issuer.clockOffsetS (the issuer's clock against this machine's),
//     issuer.advertisedIssuer (the `issuer` the discovery document claims; default the real one).
//   issuer.failNext(kind, { times, endpoint, retryAfterS }): the next `times` (1) requests to `endpoint`
//     ("token" by default, or "discovery", "jwks") answer 503, 429 (Retry-After), 400 invalid_client,
//     hang (no answer until the client gives up or close()), or reset (socket destroyed).
//   issuer.counts.{discovery,jwks,token}: requests received per endpoint, injected failures included.
//   issuer.tokenRequests: { grant, clientId, auth, scope, audience, status, injected, at } per token
//     request: never a secret, a refresh token or an access token.
//   issuer.reusedRefreshTokens: how many times a spent refresh token was presented.
//   issuer.registerClient(id, { secret?, claims?, scopes? }): no secret = a public client (refresh only).
//   issuer.createSession({ clientId, sub?, scope?, audience?, claims?, expiresInS? }): a signed-in user's
//     { accessToken, refreshToken, expiresAt }, as a CLI would have stored it.
//   issuer.mintToken(claims, { expired?, wrongKey?, issuer?, audience?, expiresInS? }): a JWT for gateway
//     tests (expired, forged signature, wrong issuer, wrong audience).
//   issuer.rotateKeys(): a new signing key; the JWKS stops publishing the old one.
//   issuer.close(): stops the server, ending hung requests.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomBytes, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createIssuerKeys } from "./oidc-issuer-keys.js";
import type { FailureKind, IssuerClient, IssuerEndpoint, OidcIssuer, OidcIssuerOptions, TokenRequestRecord } from "./oidc-issuer-types.js";

export type { IssuerAlg, MintOptions } from "./oidc-issuer-keys.js";
export type * from "./oidc-issuer-types.js";

interface Grant {
  readonly clientId: string;
  readonly sub: string;
  readonly scope: string | undefined;
  readonly audience: string | undefined;
  readonly claims: Record<string, unknown>;
  spent: boolean;
}

interface Failure {
  readonly kind: FailureKind;
  readonly endpoint: IssuerEndpoint;
  readonly retryAfterS: number | undefined;
}

/** A token request body larger than this is refused with 413. */
const MAX_BODY_BYTES = 16 * 1024;

class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(error);
  }
}

/** Starts an issuer on 127.0.0.1 with a free port. */
export async function startOidcIssuer(options: OidcIssuerOptions = {}): Promise<OidcIssuer> {
  const keys = await createIssuerKeys(options.alg ?? "ES256");
  const clients = new Map(Object.entries(options.clients ?? { svc: { secret: "svc-secret" } }));
  const grants = new Map<string, Grant>();
  const failures: Failure[] = [];
  const basePath = (options.path ?? "").replace(/\/+$/, "");
  const defaultAudience = options.audience ?? "openshell";
  let reused = 0;

  const now = () => Math.floor(Date.now() / 1000) + state.clockOffsetS;
  const lifetime = () => state.expiresInS ?? 3600;

  async function accessToken(grant: Omit<Grant, "spent">, audience: string | undefined, expiresInS = lifetime()) {
    const iat = now();
    const scope = grant.scope;
    return keys.sign({
      ...options.claims,
      ...clients.get(grant.clientId)?.claims,
      ...grant.claims,
      iss: state.issuer,
      aud: audience ?? grant.clientId,
      sub: grant.sub,
      client_id: grant.clientId,
      iat,
      exp: iat + expiresInS,
      jti: randomUUID(),
      ...(scope === undefined ? {} : { scope }),
    });
  }

  function newRefreshToken(grant: Omit<Grant, "spent">): string {
    const token = randomBytes(32).toString("base64url");
    grants.set(token, { ...grant, spent: false });
    return token;
  }

  function authenticate(req: IncomingMessage, body: URLSearchParams, record: Partial<TokenRequestRecord>): { clientId: string; auth: TokenRequestRecord["auth"] } {
    const header = req.headers.authorization;
    // Recorded before checking, so that the log says how a refused client tried.
    record.auth = header !== undefined ? "basic" : body.has("client_secret") ? "post" : "none";
    if (header !== undefined) {
      if (body.has("client_secret")) throw new OAuthError(400, "invalid_request", "more than one client authentication method");
      const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header);
      const decoded = m ? Buffer.from(m[1]!, "base64").toString("utf8") : "";
      const colon = decoded.indexOf(":");
      const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
      const id = colon < 0 ? "" : formDecode(decoded.slice(0, colon));
      const secret = colon < 0 ? "" : formDecode(decoded.slice(colon + 1));
      record.clientId = id;
      const client = clients.get(id);
      if (client?.secret === undefined || client.secret !== secret) {
        throw new OAuthError(401, "invalid_client", "client authentication failed", { "www-authenticate": 'Basic realm="oidc-issuer"' });
      }
      return { clientId: id, auth: "basic" };
    }
    const id = body.get("client_id") ?? "";
    const client = clients.get(id);
    const secret = body.get("client_secret");
    if (client === undefined) throw new OAuthError(401, "invalid_client", "client authentication failed");
    if (client.secret === undefined) {
      if (secret !== null) throw new OAuthError(401, "invalid_client", "a public client has no secret");
      return { clientId: id, auth: "none" };
    }
    if (secret !== client.secret) throw new OAuthError(401, "invalid_client", "client authentication failed");
    return { clientId: id, auth: "post" };
  }

  function checkScope(clientId: string, scope: string | undefined, within?: string): void {
    if (scope === undefined) return;
    const allowed = within !== undefined ? within.split(" ") : clients.get(clientId)?.scopes;
    if (allowed === undefined) return;
    const extra = scope.split(" ").filter((s) => s !== "" && !allowed.includes(s));
    if (extra.length > 0) throw new OAuthError(400, "invalid_scope", `scope not allowed: ${extra.join(" ")}`);
  }

  async function token(req: IncomingMessage, body: URLSearchParams, record: Partial<TokenRequestRecord>) {
    if (!/^application\/x-www-form-urlencoded\b/.test(req.headers["content-type"] ?? "")) {
      throw new OAuthError(400, "invalid_request", "the body must be application/x-www-form-urlencoded");
    }
    const { clientId, auth } = authenticate(req, body, record);
    const scope = body.get("scope") ?? undefined;
    const grantType = body.get("grant_type");
    if (grantType === "client_credentials") {
      if (auth === "none") throw new OAuthError(400, "unauthorized_client", "a public client cannot use client_credentials");
      checkScope(clientId, scope);
      const audience = body.get("audience") ?? undefined;
      const grant = { clientId, sub: clientId, scope, audience, claims: {} };
      return { access_token: await accessToken(grant, audience), token_type: "Bearer", ...expiry(), ...(scope ? { scope } : {}) };
    }
    if (grantType === "refresh_token") {
      const presented = body.get("refresh_token");
      if (!presented) throw new OAuthError(400, "invalid_request", "refresh_token is required");
      const grant = grants.get(presented);
      if (grant === undefined || grant.clientId !== clientId) throw new OAuthError(400, "invalid_grant", "unknown refresh token");
      if (grant.spent) {
        reused++;
        throw new OAuthError(400, "invalid_grant", "refresh token already used");
      }
      grant.spent = true;
      checkScope(clientId, scope, grant.scope);
      const next = { ...grant, scope: scope ?? grant.scope };
      return {
        access_token: await accessToken(next, next.audience),
        token_type: "Bearer",
        refresh_token: newRefreshToken(next),
        ...expiry(),
        ...(next.scope ? { scope: next.scope } : {}),
      };
    }
    throw new OAuthError(400, "unsupported_grant_type", `unsupported grant_type ${grantType ?? "(none)"}`);
  }

  const expiry = () => (state.expiresInS === null ? {} : { expires_in: state.expiresInS });

  function discovery() {
    return {
      issuer: state.advertisedIssuer ?? state.issuer,
      token_endpoint: state.tokenEndpoint,
      jwks_uri: state.jwksUri,
      grant_types_supported: ["client_credentials", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: [keys.alg],
    };
  }

  function endpointOf(path: string): IssuerEndpoint | undefined {
    if (path === `${basePath}/.well-known/openid-configuration`) return "discovery";
    if (path === `${basePath}/jwks`) return "jwks";
    if (path === `${basePath}/token`) return "token";
    return undefined;
  }

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers });
    res.end(JSON.stringify(body));
  }

  /** Answers the next failure queued for `endpoint`, and says which; undefined when none is. */
  function injectFailure(endpoint: IssuerEndpoint, req: IncomingMessage, res: ServerResponse): FailureKind | undefined {
    const i = failures.findIndex((f) => f.endpoint === endpoint);
    if (i < 0) return undefined;
    const [failure] = failures.splice(i, 1) as [Failure];
    switch (failure.kind) {
      case "503":
        send(res, 503, { error: "temporarily_unavailable" });
        break;
      case "429":
        send(res, 429, { error: "slow_down" }, failure.retryAfterS === undefined ? {} : { "retry-after": String(failure.retryAfterS) });
        break;
      case "invalid_client":
        send(res, 400, { error: "invalid_client", error_description: "client authentication failed" });
        break;
      case "reset":
        req.socket.destroy();
        break;
      case "hang":
        break; // never answered; close() ends it
    }
    return failure.kind;
  }

  async function readBody(req: IncomingMessage): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return undefined;
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const endpoint = endpointOf(new URL(req.url ?? "/", "http://x").pathname);
    if (endpoint === undefined) return send(res, 404, { error: "not_found" });
    state.counts[endpoint]++;
    if (endpoint !== "token") {
      if (injectFailure(endpoint, req, res)) return;
      if (req.method !== "GET") return send(res, 405, { error: "method_not_allowed" }, { allow: "GET" });
      return send(res, 200, endpoint === "jwks" ? keys.jwks() : discovery(), { "cache-control": "max-age=60" });
    }
    const text = req.method === "POST" ? await readBody(req) : "";
    const body = new URLSearchParams(text ?? "");
    const record: TokenRequestRecord = {
      grant: body.get("grant_type") ?? undefined,
      clientId: body.get("client_id") ?? undefined,
      auth: "none",
      scope: body.get("scope") ?? undefined,
      audience: body.get("audience") ?? undefined,
      status: 0,
      injected: undefined,
      at: Date.now(),
    };
    state.tokenRequests.push(record);
    const injected = injectFailure("token", req, res);
    if (injected) return void Object.assign(record, { injected, status: res.headersSent ? res.statusCode : 0 });
    try {
      if (req.method !== "POST") throw new OAuthError(405, "invalid_request", "use POST");
      if (text === undefined) throw new OAuthError(413, "invalid_request", `the body exceeds ${MAX_BODY_BYTES} bytes`);
      const answer = await token(req, body, record);
      record.status = 200;
      send(res, 200, answer, { pragma: "no-cache" });
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      record.status = err.status;
      send(res, err.status, { error: err.error, error_description: err.description }, err.headers);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { error: "server_error", error_description: String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}${basePath}`;

  const state: OidcIssuer = {
    issuer,
    tokenEndpoint: `${issuer}/token`,
    jwksUri: `${issuer}/jwks`,
    alg: keys.alg,
    expiresInS: options.expiresInS === undefined ? 300 : options.expiresInS,
    clockOffsetS: 0,
    advertisedIssuer: undefined,
    counts: { discovery: 0, jwks: 0, token: 0 },
    tokenRequests: [],
    get reusedRefreshTokens() {
      return reused;
    },
    failNext(kind, { times = 1, endpoint = "token", retryAfterS } = {}) {
      for (let i = 0; i < times; i++) failures.push({ kind, endpoint, retryAfterS });
    },
    registerClient(id, client) {
      clients.set(id, client);
    },
    async createSession({ clientId, sub = "user-1", scope, audience, claims = {}, expiresInS }) {
      if (!clients.has(clientId)) throw new Error(`createSession: unknown client ${clientId}`);
      const grant = { clientId, sub, scope, audience, claims };
      const life = expiresInS ?? lifetime();
      return {
        accessToken: await accessToken(grant, audience, life),
        refreshToken: newRefreshToken(grant),
        expiresAt: new Date((now() - state.clockOffsetS + life) * 1000),
      };
    },
    async mintToken(claims = {}, mint = {}) {
      const iat = now();
      const life = mint.expiresInS ?? lifetime();
      return keys.sign(
        {
          iss: mint.issuer ?? state.issuer,
          aud: mint.audience ?? defaultAudience,
          sub: "user-1",
          iat: mint.expired ? iat - 2 * life : iat,
          exp: mint.expired ? iat - life : iat + life,
          ...claims,
        },
        { wrongKey: mint.wrongKey === true },
      );
    },
    jwks: () => keys.jwks(),
    rotateKeys: () => keys.rotate(),
    async close() {
      failures.length = 0;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state;
}
