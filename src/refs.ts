// References that let a wait resume anywhere: in another process, after a crash, after the
// gateway restarted. An OperationHandle is plain JSON data, so it survives JSON.stringify and a
// database column; the other two forms are what a caller can rebuild from its own records.

import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { UpdateConfigRequestSchema, type UpdateConfigRequest } from "./gen/openshell/v1/config_pb.js";
import { InvalidArgumentError } from "./errors.js";
import type { PolicyChange, SettingChange } from "./update.js";

/** Marks a JSON object as an operation handle of this SDK (and its format version). */
export const HANDLE_KIND = "openshell-config/operation-handle@1";

/**
 * Everything needed to resume waiting for one committed update. Plain data: serialize it with
 * `JSON.stringify` and restore it with `restoreHandle`.
 */
export interface OperationHandle {
  /** Always `HANDLE_KIND`: marks the object as a handle and names its format version. */
  readonly kind: typeof HANDLE_KIND;
  /** The durable operation id; absent when the gateway tracks no operation (polling mode). */
  readonly operationId?: string;
  /** The sandbox name the update was sent for. */
  readonly sandbox: string;
  /** The workspace the update was sent in, when one was named. */
  readonly workspace?: string;
  /** The idempotency key the update was committed with. */
  readonly idempotencyKey: string;
  /** The policy version committed (for status polling against gateways without operations). */
  readonly policyVersion?: number;
  /** Which dimension the update changed. */
  readonly dimension: "policy" | "settings";
  /** The exact committed request as protobuf JSON, without its wait fields. Re-sending it replays. */
  readonly request: JsonObject;
}

/** Resume by operation id alone (another process, a dashboard link). */
export interface OperationIdRef {
  /** The durable operation's id, as in `UpdateResult.operation.operationId`. */
  readonly operationId: string;
  /** The workspace the operation belongs to; defaults to the client's. */
  readonly workspace?: string;
}

/**
 * Resume by idempotency key: the SDK re-sends the identical change with the same key, so the
 * gateway replays the original operation and never creates a second revision.
 */
export interface IdempotencyKeyRef {
  /** The sandbox name the update was sent for. */
  readonly sandbox: string;
  /** The idempotency key the update was first sent with. */
  readonly idempotencyKey: string;
  /** The same change that was first sent: `{ policy }`, `{ mergeOperations }`, `{ key, value }` or `{ key, delete: true }`. */
  readonly request: PolicyChange | SettingChange;
  /** The workspace the update was first sent in, if one was named; defaults to the client's. */
  readonly workspace?: string;
  /** The `expectedResourceVersion` the update was first sent with, if any. */
  readonly expectedResourceVersion?: bigint | number;
  /** The annotations the update was first sent with, if any. */
  readonly annotations?: Readonly<Record<string, string>>;
}

/** Anything `awaitCompletion` and `getOperation` accept. */
export type CompletionRef = OperationHandle | OperationIdRef | IdempotencyKeyRef;

/** True when `ref` is an OperationHandle (as produced by this SDK). */
export function isOperationHandle(ref: unknown): ref is OperationHandle {
  return typeof ref === "object" && ref !== null && (ref as { kind?: unknown }).kind === HANDLE_KIND;
}

/** Builds a handle for a committed request. */
export function createHandle(
  request: UpdateConfigRequest,
  fields: { operationId: string | undefined; workspace: string | undefined; policyVersion: number | undefined },
): OperationHandle {
  const stripped = { ...request, waitMode: 0, waitTimeout: undefined } as UpdateConfigRequest;
  return {
    kind: HANDLE_KIND,
    sandbox: request.sandbox,
    idempotencyKey: request.idempotencyKey,
    dimension: request.settingKey !== "" ? "settings" : "policy",
    request: toJson(UpdateConfigRequestSchema, stripped) as JsonObject,
    ...(fields.operationId ? { operationId: fields.operationId } : {}),
    ...(fields.workspace !== undefined ? { workspace: fields.workspace } : {}),
    ...(fields.policyVersion !== undefined ? { policyVersion: fields.policyVersion } : {}),
  };
}

/** The wire request a handle replays. */
export function handleRequest(handle: OperationHandle): UpdateConfigRequest {
  return fromJson(UpdateConfigRequestSchema, handle.request);
}

/**
 * Restores a handle from its JSON text or parsed value, checking that it is one. Throws
 * InvalidArgumentError naming the field that is wrong.
 */
export function restoreHandle(json: string | unknown): OperationHandle {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (err) {
      throw new InvalidArgumentError("handle is not valid JSON", { field: "handle", cause: err });
    }
  }
  if (!isOperationHandle(value)) {
    throw new InvalidArgumentError(`handle.kind must be "${HANDLE_KIND}"`, { field: "handle.kind" });
  }
  for (const field of ["sandbox", "idempotencyKey"] as const) {
    if (typeof value[field] !== "string" || value[field] === "") {
      throw new InvalidArgumentError(`handle.${field} must be a non-empty string`, { field: `handle.${field}` });
    }
  }
  if (value.operationId !== undefined && typeof value.operationId !== "string") {
    throw new InvalidArgumentError("handle.operationId must be a string", { field: "handle.operationId" });
  }
  if (typeof value.request !== "object" || value.request === null) {
    throw new InvalidArgumentError("handle.request must be an object", { field: "handle.request" });
  }
  try {
    handleRequest(value);
  } catch (err) {
    throw new InvalidArgumentError("handle.request is not an UpdateConfigRequest", {
      field: "handle.request",
      cause: err,
    });
  }
  return value;
}
