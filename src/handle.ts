// The references a wait resumes from, as types (and the one check that tells a handle apart),
// below the modules that create, restore, wait on or carry them: refs.ts, await.ts and the
// CompletionTimeoutError in errors.ts. An OperationHandle is plain JSON data, so it survives
// JSON.stringify and a database column; the other two forms are what a caller can rebuild from
// its own records.

import type { JsonObject } from "@bufbuild/protobuf";
import type { PolicyChange, SettingChange } from "./change.js";

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
