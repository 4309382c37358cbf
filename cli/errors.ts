// Every failure as one line for the user and an exit status: usage and configuration errors 2
// (a file of a gateway's mTLS bundle that is missing or unreadable among them), everything else 1.
// Errors come from the SDK (OpenShellConfigError subclasses, by `code`), from raw Connect calls
// (ConnectError, by status code), or from the CLI itself (a usage error with its hint line, a
// policy file, the retries of retry.ts running out).

import { Code, ConnectError } from "@connectrpc/connect";
import { OpenShellConfigError, TlsError, type ErrorCode } from "openshell-config";
import { UsageError } from "./types.js";
import { ConfigError, TOKEN_ENV, type ResolvedConfig } from "./config.js";
import { PolicyFileError } from "./policy-file.js";
import { EXIT } from "./outcome.js";
import { GatewayUnreachableError, networkCode as retryNetworkCode } from "./retry.js";
import { Interrupted } from "./commands/context.js";
import { loginHint } from "./oidc-token-file.js";
import { describeTlsFailure } from "./tls-errors.js";
import { RolloutLeaseHeldError, SharedRolloutsUnsupportedError } from "openshell-config/rollout";
import { formatAge } from "./format.js";
import { rolloutStateDir } from "./rollout-store.js";

// Beyond retry.ts's (which are worth retrying): TLS failures, which are not.
const TLS_CODES = new Set(["CERT_HAS_EXPIRED", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "ERR_TLS_CERT_ALTNAME_INVALID", "EPROTO", "SELF_SIGNED_CERT_IN_CHAIN"]);

const CONNECT_TO_SDK: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: "invalid-argument",
  [Code.Aborted]: "conflict",
  [Code.FailedPrecondition]: "failed-precondition",
  [Code.NotFound]: "not-found",
  [Code.Unauthenticated]: "unauthenticated",
  [Code.PermissionDenied]: "permission-denied",
  [Code.ResourceExhausted]: "resource-exhausted",
  [Code.Unavailable]: "unavailable",
};

/** The network or TLS error code (ECONNREFUSED, CERT_HAS_EXPIRED, …) somewhere in the cause chain, if any. */
function networkCode(err: unknown): string | undefined {
  const net = retryNetworkCode(err);
  if (net !== undefined) return net;
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && TLS_CODES.has(code)) return code;
  }
  return undefined;
}

/** The error of type `T` somewhere in the cause chain. */
function inChain<T>(err: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) if (e instanceof type) return e as T;
  return undefined;
}

export interface Failure {
  readonly message: string;
  readonly exitCode: number;
  /** A second line after the message (a usage error's hint). */
  readonly details?: string;
  /** Set for a NotFound, so that the caller can look for what was meant (sandbox-suggest.ts). */
  readonly notFound?: true;
}

/** Describes `err` for the user. `config` is undefined when the failure came before it was resolved. */
export function describeFailure(err: unknown, config: ResolvedConfig | undefined): Failure {
  if (err instanceof UsageError) return { message: err.message, exitCode: EXIT.usage, details: err.hint };
  if (err instanceof ConfigError) return { message: err.message, exitCode: EXIT.usage };
  // The bundle as configured cannot be used (a file missing, unreadable, not PEM; a key that is not
  // the certificate's): configuration, as a ConfigError.
  if (err instanceof TlsError && (err.reason === "bundle" || err.reason === "key-mismatch")) return { message: err.message, exitCode: EXIT.usage };
  if (err instanceof PolicyFileError) return { message: err.message, exitCode: EXIT.failed };
  if (err instanceof Interrupted) return { message: "interrupted", exitCode: EXIT.interrupted };
  const lease = inChain(err, RolloutLeaseHeldError);
  if (lease !== undefined) return { message: leaseHeldMessage(lease), exitCode: EXIT.tempfail };
  if (inChain(err, SharedRolloutsUnsupportedError) !== undefined) return { message: NO_SHARED_ROLLOUTS(), exitCode: EXIT.unavailable };
  const tls = describeTlsFailure(err, config);
  if (tls !== undefined) return { message: tls, exitCode: EXIT.failed };
  const unreachable = inChain(err, GatewayUnreachableError);
  if (unreachable) {
    return { message: `cannot reach the gateway at ${config?.url ?? "the gateway"} (${unreachable.attempts} attempts): ${unreachable.reason}`, exitCode: EXIT.failed };
  }

  let code: ErrorCode | undefined;
  let message: string;
  if (err instanceof OpenShellConfigError) {
    code = err.code;
    message = err.message;
  } else if (err instanceof ConnectError || (err as { name?: unknown } | null)?.name === "ConnectError") {
    const ce = ConnectError.from(err);
    code = CONNECT_TO_SDK[ce.code] ?? "rpc";
    message = ce.rawMessage || Code[ce.code] || "request failed";
  } else {
    message = err instanceof Error ? err.message : String(err);
  }
  // A commit whose answer was lost on a gateway without operations: the SDK's line says what to check.
  if (code === "commit-outcome-unknown") return { message, exitCode: EXIT.failed };
  const gateway = config?.url ?? "the gateway";
  const net = networkCode(err);
  if (net !== undefined || code === "unavailable") {
    return { message: `cannot reach the gateway at ${gateway}: ${message}${net && !message.includes(net) ? ` (${net})` : ""}`, exitCode: EXIT.failed };
  }
  switch (code) {
    case "unauthenticated":
      return {
        message:
          config?.tokenSource === undefined
            ? `not authenticated: no token given; pass --token, set ${TOKEN_ENV}, or put "token" in ${config?.file ?? "the config file"} (the gateway said: ${message})`
            : `authentication failed: the gateway rejected the token from ${sourceName(config)} (${message})${config.tokenSource === "oidc" ? `; ${loginHint(config.gateway!.name)}` : ""}`,
        exitCode: EXIT.failed,
      };
    case "token-provider":
      // The OIDC session of a registered gateway could not be refreshed.
      return { message: `${message}${config?.tokenSource === "oidc" ? `; ${loginHint(config.gateway!.name)}` : ""}`, exitCode: EXIT.failed };
    case "permission-denied":
      return { message: `permission denied: ${message}`, exitCode: EXIT.failed };
    case "not-found":
      // The gateway's message usually says "not found" itself (`sandbox "x" not found`): not twice.
      return { message: /\bnot found\b/i.test(message) ? message : `not found: ${message}`, exitCode: EXIT.failed, notFound: true };
    case "invalid-argument":
      return { message: `the gateway rejected the request: ${message}`, exitCode: EXIT.failed };
    case "idempotency-conflict":
      return { message: `${message}; use another --idempotency-key for a different change`, exitCode: EXIT.failed };
    case "conflict":
      return { message: `conflict: ${message}`, exitCode: EXIT.failed };
    case "insecure-transport":
      return { message: `${message.replace(/, or set allowInsecureToken: true$/, "")}, or pass --allow-insecure-token`, exitCode: EXIT.failed };
    case "completion-unavailable":
      return { message: `${message}; check later with "openshell-config policy get"`, exitCode: EXIT.failed };
    default:
      return { message, exitCode: EXIT.failed };
  }
}

function sourceName(config: ResolvedConfig): string {
  switch (config.tokenSource) {
    case "flag":
      return "--token";
    case "env":
      return TOKEN_ENV;
    case "oidc":
      return `the OIDC session of gateway "${config.gateway!.name}"`;
    default:
      return config.file;
  }
}

/** A gateway without shared rollout records, in one line: where the rollouts started here are instead. */
export const NO_SHARED_ROLLOUTS = (): string =>
  `the gateway keeps no shared rollouts (no rollout record extension); rollouts started from this machine are in ${rolloutStateDir()} ("policy rollout status ID" reads them)`;

/** Another driver's live lease, in one line: who, and when the rollout can be taken over. */
export function leaseHeldMessage(err: RolloutLeaseHeldError, now: number = Date.now()): string {
  const { holder, principal, expiresAt } = err.lease;
  // formatAge of the future, read backwards: how long until the lease runs out.
  const left = formatAge(new Date(now - Math.max(0, expiresAt.getTime() - now)), now);
  return `rollout ${err.rolloutId} is being driven by ${holder} (${principal}): it can be taken over if its lease is not renewed by ${expiresAt.toISOString()} (in ${left})`;
}
