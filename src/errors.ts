// Error classes the SDK throws, and the one place where Connect status codes become them.
//
// Every class brands its instances with a registry symbol and a lineage of class names, and
// answers `instanceof` from that brand: an error thrown by one copy of this package is still
// recognised by another copy (a bundled dashboard next to a CLI, two versions in node_modules).

import { isNetworkFailure } from "./retry.js";
import { tlsFailureOf, type TlsFailure } from "./tls-failure.js";
import type { CompletionRef } from "./handle.js";
import { Code, ConnectError } from "@connectrpc/connect";

export type { TlsFailure } from "./tls-failure.js";

const BRAND = Symbol.for("openshell-config.error");

/** Stable, machine-readable error codes. They never change between releases. */
export type ErrorCode =
  | "completion-timeout"
  | "completion-unavailable"
  | "idempotency-conflict"
  | "conflict"
  | "failed-precondition"
  | "invalid-argument"
  | "not-found"
  | "unauthenticated"
  | "permission-denied"
  | "resource-exhausted"
  | "unavailable"
  | "insecure-transport"
  | "tls"
  | "token-provider"
  | "commit-outcome-unknown"
  | "rpc";

/** Options shared by every error class. */
export interface ErrorOptions {
  /** The underlying error (usually a `ConnectError`). */
  cause?: unknown;
  /** The Connect status code the gateway answered with, when there was one. */
  connectCode?: Code;
}

/** Base class of every error this SDK throws. Check `code` or use `instanceof`. */
export class OpenShellConfigError extends Error {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static readonly errorName: string = "OpenShellConfigError";
  /** The class names this error descends from, used for cross-copy `instanceof`. */
  declare readonly [BRAND]: readonly string[];
  /** A stable code identifying the kind of failure. */
  readonly code: ErrorCode;
  /** The Connect status code, when the error came from an RPC. */
  readonly connectCode: Code | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.connectCode = options.connectCode;
    const lineage: string[] = [];
    for (let p = new.target; p && p !== (Error as unknown); p = Object.getPrototypeOf(p)) lineage.push(p.errorName);
    Object.defineProperty(this, BRAND, { value: lineage, enumerable: false });
    this.name = new.target.errorName;
  }

  /**
   * Answers `instanceof` from the brand, not the prototype chain, so errors thrown by another copy
   * of this package (another bundle, another version) are recognised too.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== "object" || value === null) return false;
    const lineage = (value as { [BRAND]?: unknown })[BRAND];
    return Array.isArray(lineage) && lineage.includes(this.errorName);
  }
}

/**
 * Why a wait ended on this side: the local deadline, the caller's AbortSignal, the gateway's own
 * wait bound, or the gateway lost (unreachable, restarting, answering UNAVAILABLE, or a stream cut
 * short) through every retry of the client's retry rule.
 */
export type CompletionTimeoutReason = "deadline" | "aborted" | "server-deadline" | "unavailable";

/**
 * Waiting ended on this side (the local deadline passed, the caller aborted, or the gateway could
 * not be reached through the client's retries) before the operation reached a terminal state.
 * The update stays committed and the operation keeps running at the gateway: pass `ref` to
 * `awaitCompletion` to resume. With `reason: "unavailable"`, `cause` is the `UnavailableError`
 * (or the broken call's error) of the last attempt.
 *
 * @example
 * ```ts
 * import { CompletionTimeoutError } from "openshell-config";
 *
 * try {
 *   await client.updatePolicy({ sandbox: "agent-7", policy, wait: { timeoutMs: 10_000 } });
 * } catch (err) {
 *   if (!(err instanceof CompletionTimeoutError) || err.ref === undefined) throw err;
 *   // Committed, and still on its way at the gateway. err.ref is plain JSON: store it, or resume now.
 *   console.warn(`no outcome within 10 s (${err.reason}), operation ${err.operationId ?? "not known yet"}`);
 *   const completion = await client.awaitCompletion(err.ref, { timeoutMs: Infinity });
 * }
 * ```
 */
export class CompletionTimeoutError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "CompletionTimeoutError";
  /** Why the wait ended: the local deadline, the caller's AbortSignal, the gateway's own wait bound, or the gateway lost. */
  readonly reason: CompletionTimeoutReason;
  /** A reference that resumes the wait; JSON-serializable. */
  readonly ref: CompletionRef | undefined;
  /** The operation being waited for, when known. */
  readonly operationId: string | undefined;

  constructor(
    message: string,
    details: {
      reason: CompletionTimeoutReason;
      ref?: CompletionRef;
      operationId?: string;
    } & ErrorOptions,
  ) {
    super("completion-timeout", message, details);
    this.reason = details.reason;
    this.ref = details.ref;
    this.operationId = details.operationId;
  }
}

/**
 * The update was committed, but the gateway cannot report its completion (a polling-mode
 * gateway returns no operation for a settings change). `committed` holds what was committed.
 */
export class CompletionUnavailableError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "CompletionUnavailableError";
  /** The committed update, as the gateway returned it. */
  readonly committed: unknown;
  constructor(message: string, committed: unknown) {
    super("completion-unavailable", message);
    this.committed = committed;
  }
}

/** The request was rejected as malformed. `field` names the offending field when known. */
export class InvalidArgumentError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "InvalidArgumentError";
  /** The request field the gateway or the SDK objected to, when known. */
  readonly field: string | undefined;
  constructor(message: string, options: ErrorOptions & { field?: string } = {}) {
    super("invalid-argument", message, { connectCode: Code.InvalidArgument, ...options });
    this.field = options.field;
  }
}

/** The idempotency key was already used for a different request payload on this sandbox. */
export class IdempotencyConflictError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "IdempotencyConflictError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("idempotency-conflict", message, options);
  }
}

/** `expectedResourceVersion` did not match, or the resource changed concurrently (ABORTED). */
export class ConflictError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "ConflictError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("conflict", message, options);
  }
}

/** The gateway refused the request in the sandbox's current state (FAILED_PRECONDITION). */
export class FailedPreconditionError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "FailedPreconditionError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("failed-precondition", message, options);
  }
}

/** The sandbox or operation does not exist, or belongs to a workspace the caller cannot see. */
export class NotFoundError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "NotFoundError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("not-found", message, options);
  }
}

/** The bearer token is missing, malformed or unknown. */
export class UnauthenticatedError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "UnauthenticatedError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("unauthenticated", message, options);
  }
}

/** The caller is authenticated but its role does not allow the request. */
export class PermissionDeniedError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "PermissionDeniedError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("permission-denied", message, options);
  }
}

/** A gateway limit was reached (request size, waiters, admission). */
export class ResourceExhaustedError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "ResourceExhaustedError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("resource-exhausted", message, options);
  }
}

/** The gateway could not be reached, or is shutting down, after all retries. */
export class UnavailableError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "UnavailableError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("unavailable", message, options);
  }
}

/** A bearer token would have been sent in clear text to a non-loopback host. */
export class InsecureTransportError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "InsecureTransportError";
  constructor(message: string) {
    super("insecure-transport", message);
  }
}

/**
 * A TLS connection to the gateway failed, or the TLS settings cannot be used. The message is one
 * line that says what to do; `reason` tells the cases apart. Never retried: the same settings
 * fail the same way. A gateway that checks client certificates after the handshake (the reference
 * gateway) answers UNAUTHENTICATED `client certificate required` or `client certificate rejected:
 * <why>`; those become this error too, with `connectCode` set.
 *
 * @example
 * ```ts
 * import { TlsError } from "openshell-config";
 *
 * try {
 *   await client.getConfig({ sandbox: "agent-7" });
 * } catch (err) {
 *   if (err instanceof TlsError && err.reason === "unknown-ca") console.error("pass the gateway's CA:", err.message);
 *   else throw err;
 * }
 * ```
 */
export class TlsError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "TlsError";
  /** Which TLS failure. */
  readonly reason: TlsFailure;
  /** The certificate or key file concerned, when there is one. */
  readonly file: string | undefined;
  constructor(message: string, details: { reason: TlsFailure; file?: string } & ErrorOptions) {
    super("tls", message, details);
    this.reason = details.reason;
    this.file = details.file;
  }
}

/**
 * A token provider (e.g. `oidcClientCredentials` from `openshell-config/oidc`) could not get a
 * token: the issuer refused the credentials (`transient` false: fix them), or it stayed
 * unreachable through the provider's retries (`transient` true). Secrets never appear in it.
 */
export class TokenProviderError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "TokenProviderError";
  /** The issuer's HTTP status, when it answered. */
  readonly status: number | undefined;
  /** The OAuth error code the issuer returned (`invalid_client`, `invalid_grant`, …), if any. */
  readonly oauthError: string | undefined;
  /** True when the failure was the issuer being unreachable or failing (5xx), not the credentials. */
  readonly transient: boolean;
  constructor(message: string, details: { status?: number; oauthError?: string; transient: boolean } & ErrorOptions) {
    super("token-provider", message, details);
    this.status = details.status;
    this.oauthError = details.oauthError;
    this.transient = details.transient;
  }
}

/**
 * A commit's answer was lost (the connection broke after the request was sent) on a gateway that
 * does not track operations, so the SDK cannot tell whether the change was committed, and a blind
 * retry could commit it twice. Check the sandbox's policy history (or settings) before sending it
 * again, or pin `expectedResourceVersion` so that a retry can never commit twice. Also thrown when
 * a pinned retry is refused (the sandbox changed: by this commit or another), and for a wait
 * resumed by idempotency key on such a gateway. The message is one line that names what to check.
 *
 * @example
 * ```ts
 * import { CommitOutcomeUnknownError } from "openshell-config";
 *
 * try {
 *   await client.updatePolicy({ sandbox: "agent-7", policy });
 * } catch (err) {
 *   if (!(err instanceof CommitOutcomeUnknownError)) throw err;
 *   // Maybe committed: read the history before sending it again.
 *   const history = await client.getConfig({ sandbox: err.sandbox, workspace: err.workspace });
 *   console.warn(err.message, history.latestRevision?.version);
 * }
 * ```
 */
export class CommitOutcomeUnknownError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "CommitOutcomeUnknownError";
  /** The sandbox the change was sent to. */
  readonly sandbox: string;
  /** Its workspace, when the request named one. */
  readonly workspace: string | undefined;
  constructor(message: string, details: { sandbox: string; workspace?: string } & ErrorOptions) {
    super("commit-outcome-unknown", message, details);
    this.sandbox = details.sandbox;
    this.workspace = details.workspace;
  }
}

/** Any other RPC failure; `connectCode` tells which. */
export class RpcError extends OpenShellConfigError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "RpcError";
  constructor(message: string, options: ErrorOptions = {}) {
    super("rpc", message, options);
  }
}

const IDEMPOTENCY_CONFLICT = "idempotency_key was already used with a different request payload";

/** The metadata key a gateway sets on DEADLINE_EXCEEDED to name the operation still running. */
export const OPERATION_ID_METADATA = "operation-id";

/**
 * The `TlsError` that `err` is, or means when it is the error of a call made through
 * `client.raw(...)` (raw calls reach the caller as Connect errors, unmapped); undefined when it is
 * not a TLS failure.
 *
 * @example
 * ```ts
 * import { tlsErrorOf } from "openshell-config";
 * import { OpenShell } from "openshell-config/raw";
 *
 * try {
 *   await client.raw(OpenShell).listSandboxes({});
 * } catch (err) {
 *   const tls = tlsErrorOf(err);
 *   if (tls) console.error(tls.message); // one line that says what to do
 * }
 * ```
 */
export function tlsErrorOf(err: unknown): TlsError | undefined {
  if (err instanceof TlsError) return err;
  if (err instanceof OpenShellConfigError) return undefined;
  const mapped = toSdkError(err);
  return mapped instanceof TlsError ? mapped : undefined;
}

/**
 * Maps any failure of an RPC to an SDK error. Errors that are already ours pass through, so this
 * can wrap a whole call chain. `ref` is attached to a server-side wait timeout.
 */
export function toSdkError(err: unknown, ref?: CompletionRef): Error {
  if (err instanceof OpenShellConfigError) return err;
  const tls = tlsFailureOf(err);
  if (tls !== undefined) {
    return new TlsError(tls.message, { reason: tls.reason, cause: err, ...(err instanceof ConnectError ? { connectCode: err.code } : {}) });
  }
  const ce = ConnectError.from(err);
  const message = ce.rawMessage || Code[ce.code];
  const options: ErrorOptions = { cause: err, connectCode: ce.code };
  switch (ce.code) {
    case Code.InvalidArgument:
      return message.includes(IDEMPOTENCY_CONFLICT)
        ? new IdempotencyConflictError(message, options)
        : new InvalidArgumentError(message, { ...options, field: fieldNamedIn(message) });
    case Code.Aborted:
      // connect-node's ABORTED for a connection reset under the call is not a conflict.
      return isNetworkFailure(ce.cause) ? new UnavailableError(message, options) : new ConflictError(message, options);
    case Code.FailedPrecondition:
      return new FailedPreconditionError(message, options);
    case Code.NotFound:
      return new NotFoundError(message, options);
    case Code.Unauthenticated:
      return new UnauthenticatedError(message, options);
    case Code.PermissionDenied:
      return new PermissionDeniedError(message, options);
    case Code.ResourceExhausted:
      return new ResourceExhaustedError(message, options);
    case Code.Unavailable:
      return new UnavailableError(message, options);
    case Code.DeadlineExceeded: {
      const operationId = operationIdOf(ce);
      if (operationId !== undefined) {
        return new CompletionTimeoutError(message, {
          ...options,
          reason: "server-deadline",
          operationId,
          ref: ref ?? { operationId },
        });
      }
      return new RpcError(message, options);
    }
    default:
      return new RpcError(message, options);
  }
}

/** The `operation-id` a gateway attached to an error, from headers or trailers. */
export function operationIdOf(err: ConnectError): string | undefined {
  const id = err.metadata.get(OPERATION_ID_METADATA);
  return id ? id.split(",")[0]!.trim() : undefined;
}

// Upstream messages start with the field name ("idempotency_key exceeds 256 bytes"); knowing the
// field lets a form highlight it. Only snake_case identifiers at the start are trusted.
function fieldNamedIn(message: string): string | undefined {
  const m = /^([a-z][a-z0-9]*(?:_[a-z0-9]+)+|policy|sandbox|name|global)\b/.exec(message);
  return m?.[1];
}
