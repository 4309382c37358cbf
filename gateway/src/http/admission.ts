// What a request must show at the server's door, decided from its headers before anything reads
// its body (the body of a refused request is never read: rpc-refusal.ts):
// - on a gateway with authentication, valid credentials for the method it calls (a method open
//   without them, Health, still gets in, but its body is read under a small cap: server.ts), and
//   a platform admin's for /metrics;
// - on a gateway without (--no-auth), an address by a loopback name (loopback-host.ts).
// Failed authentications are logged, rate-limited, with the peer's address (auth-failure-log.ts).

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Counter, Registry } from "prom-client";
import type { FrontDoor } from "../auth/front-door.js";
import type { PeerCertificate } from "../auth/peer-certificate.js";
import type { Principal } from "../auth/principal.js";
import type { Logger } from "../observability/logger.js";
import { RPC_REQUESTS_METRIC } from "../observability/metrics.js";
import { codeLabel } from "../observability/rpc-metrics.js";
import { createAuthFailureLog } from "./auth-failure-log.js";
import { nonLoopbackAuthority } from "./loopback-host.js";
import { refuseRequest } from "./rpc-refusal.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;


export const METRICS_NEED_ADMIN = "/metrics needs the credentials of a platform admin (an admin of every workspace)";

export interface AdmissionOptions {
  readonly door: FrontDoor | undefined;
  readonly logger: Logger;
  readonly registry?: Registry;
  /** The paths of every procedure served (`/package.Service/Method`); any other path is connect's 404. */
  readonly procedures: ReadonlySet<string>;
  /** The connection's client certificate (undefined: none asked). */
  readonly peerOf: (req: Req) => PeerCertificate | undefined;
}

export interface Admission {
  /** Refuses (and returns true) a request a --no-auth gateway must not answer. */
  refusedHost(req: Req, res: Res): boolean;
  /**
   * Authenticates an RPC, then calls `admit` with its principal (undefined: an open method without
   * credentials) and `checked` true; or refuses it. `checked` is false when the gateway has no
   * authentication or the path is no RPC.
   */
  rpc(req: Req, res: Res, path: string, admit: (principal: Principal | undefined, checked: boolean) => void): void;
  /** Lets `/metrics` through for a platform admin (or when the gateway has no authentication), or refuses it. */
  metrics(req: Req, res: Res, serve: () => void): void;
  close(): void;
}

export function createAdmission(options: AdmissionOptions): Admission {
  const { door, logger } = options;
  const failures = createAuthFailureLog({ logger, ...(options.registry ? { registry: options.registry } : {}) });
  // A call refused here never reaches the RPC-counting interceptor: it is counted as it would have
  // been there (only for procedures served, so that a caller cannot mint label values).
  const rpcCounter = options.registry?.getSingleMetric(RPC_REQUESTS_METRIC) as Counter<"method" | "code"> | undefined;

  const refuse = (req: Req, res: Res, path: string, err: unknown) => {
    const e = ConnectError.from(err);
    if (options.procedures.has(path)) rpcCounter?.inc({ method: path.slice(path.lastIndexOf("/") + 1), code: codeLabel(e.code) });
    if (e.code === Code.Unauthenticated || e.code === Code.PermissionDenied) failures.record({ peer: peerAddress(req), path, reason: e.rawMessage });
    else if (e.code !== Code.Unavailable) logger.error({ err, path }, "authentication failed unexpectedly");
    refuseRequest(req, res, e.code, e.rawMessage);
  };

  const authenticate = (req: Req, res: Res, path: string, then: (principal: Principal | undefined) => void) => {
    if (door?.kind !== "authenticate") return then(undefined);
    let result;
    try {
      result = door.authenticate({ procedure: path, authorization: header(req, "authorization"), peer: options.peerOf(req) });
    } catch (err) {
      return refuse(req, res, path, err);
    }
    if (result instanceof Promise) result.then(then, (err: unknown) => refuse(req, res, path, err));
    else then(result);
  };

  return {
    refusedHost(req, res) {
      if (door?.kind !== "no-auth") return false;
      const reason = nonLoopbackAuthority(header(req, ":authority") ?? header(req, "host"));
      if (reason === undefined) return false;
      logger.warn({ peer: peerAddress(req), host: String(header(req, ":authority") ?? header(req, "host") ?? "").slice(0, 100) }, "refused a request not addressed to a loopback name (--no-auth)");
      refuseRequest(req, res, Code.PermissionDenied, reason);
      return true;
    },
    rpc(req, res, path, admit) {
      // A path connect does not route gets its 404 without credentials, as before.
      if (door?.kind !== "authenticate" || !options.procedures.has(path)) return admit(undefined, false);
      authenticate(req, res, path, (principal) => admit(principal, true));
    },
    metrics(req, res, serve) {
      if (door?.kind !== "authenticate") return serve();
      authenticate(req, res, "/metrics", (principal) => {
        if (principal?.role === "admin" && principal.workspaces === "*") return serve();
        refuse(req, res, "/metrics", new ConnectError(METRICS_NEED_ADMIN, Code.PermissionDenied));
      });
    },
    close: () => failures.close(),
  };
}

function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function peerAddress(req: Req): string | undefined {
  try {
    const s = req.socket;
    if (!s?.remoteAddress) return undefined;
    return s.remoteAddress.includes(":") ? `[${s.remoteAddress}]:${s.remotePort}` : `${s.remoteAddress}:${s.remotePort}`;
  } catch {
    return undefined; // the HTTP/2 session is already gone
  }
}
