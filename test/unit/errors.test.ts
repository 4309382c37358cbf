import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CompletionTimeoutError,
  ConflictError,
  IdempotencyConflictError,
  InvalidArgumentError,
  NotFoundError,
  OpenShellConfigError,
  PermissionDeniedError,
  RpcError,
  UnauthenticatedError,
  UnavailableError,
  ResourceExhaustedError,
  FailedPreconditionError,
} from "../../src/index.js";
import { toSdkError } from "../../src/errors.js";

describe("error mapping", () => {
  it.each([
    [Code.InvalidArgument, "wait_timeout must be a nonnegative duration", InvalidArgumentError, "invalid-argument"],
    [Code.InvalidArgument, "idempotency_key was already used with a different request payload", IdempotencyConflictError, "idempotency-conflict"],
    [Code.Aborted, "resource version mismatch", ConflictError, "conflict"],
    [Code.FailedPrecondition, "setting 'x' is managed globally; delete the global setting first", FailedPreconditionError, "failed-precondition"],
    [Code.NotFound, "update operation not found", NotFoundError, "not-found"],
    [Code.Unauthenticated, "no token", UnauthenticatedError, "unauthenticated"],
    [Code.PermissionDenied, "admin only", PermissionDeniedError, "permission-denied"],
    [Code.ResourceExhausted, "too many waiters", ResourceExhaustedError, "resource-exhausted"],
    [Code.Unavailable, "gateway is shutting down", UnavailableError, "unavailable"],
    [Code.Internal, "boom", RpcError, "rpc"],
  ] as const)("maps code %s (%s) to a class with a stable code", (code, message, cls, stable) => {
    const err = toSdkError(new ConnectError(message, code));
    expect(err).toBeInstanceOf(cls);
    expect(err).toBeInstanceOf(OpenShellConfigError);
    expect((err as OpenShellConfigError).code).toBe(stable);
    expect((err as OpenShellConfigError).connectCode).toBe(code);
    expect(err.message).toBe(message);
  });

  it("names the field a gateway message starts with", () => {
    const err = toSdkError(new ConnectError("idempotency_key exceeds 256 bytes", Code.InvalidArgument));
    expect((err as InvalidArgumentError).field).toBe("idempotency_key");
  });

  it("turns DEADLINE_EXCEEDED with operation-id metadata into a resumable CompletionTimeoutError", () => {
    const ce = new ConnectError("timed out waiting for update operation op-7", Code.DeadlineExceeded, {
      "operation-id": "op-7",
    });
    const err = toSdkError(ce);
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect((err as CompletionTimeoutError).operationId).toBe("op-7");
    expect((err as CompletionTimeoutError).reason).toBe("server-deadline");
    expect((err as CompletionTimeoutError).ref).toEqual({ operationId: "op-7" });
  });

  it("keeps DEADLINE_EXCEEDED without operation-id a plain RPC error", () => {
    const err = toSdkError(new ConnectError("deadline", Code.DeadlineExceeded));
    expect(err).toBeInstanceOf(RpcError);
    expect(err).not.toBeInstanceOf(CompletionTimeoutError);
  });
});

describe("instanceof across package copies", () => {
  it("recognises an error thrown by another copy of the module", async () => {
    // A query string makes the module loader evaluate a second, independent copy.
    const specifier = "../../src/errors.ts?second-copy";
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof import("../../src/errors.js");
    expect(copy.NotFoundError).not.toBe(NotFoundError);
    const foreign = new copy.NotFoundError("gone");
    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(foreign).toBeInstanceOf(OpenShellConfigError);
    expect(foreign).not.toBeInstanceOf(UnavailableError);
    const local = new CompletionTimeoutError("late", { reason: "deadline" });
    expect(local).toBeInstanceOf(copy.CompletionTimeoutError);
    expect(local).toBeInstanceOf(copy.OpenShellConfigError);
    expect(local).not.toBeInstanceOf(copy.NotFoundError);
  });

  it("keeps a class name that survives minification", () => {
    const err = new IdempotencyConflictError("x");
    expect(err.name).toBe("IdempotencyConflictError");
    expect(err).toBeInstanceOf(Error);
    expect({ code: "not-found" }).not.toBeInstanceOf(NotFoundError);
  });
});
