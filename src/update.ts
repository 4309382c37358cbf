// Building UpdateConfig requests from the SDK's plain inputs, and reading the committed response.
// Every update carries an idempotency key (the caller's, or a fresh UUIDv4), chosen once here so
// that every retry and every resumed wait re-sends byte-identical payloads.

import { create } from "@bufbuild/protobuf";
import {
  UpdateConfigRequestSchema,
  PolicyMergeOperationSchema,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "./gen/openshell/v1/config_pb.js";
import { SandboxPolicySchema } from "./gen/openshell/sandbox/v1/sandbox_pb.js";
import { InvalidArgumentError } from "./errors.js";
import { workspaceScope } from "./workspace.js";
import { toSettingValue } from "./convert/setting-value.js";
import { fromOperation, type Completion, type OperationStatus } from "./completion.js";
import { createHandle } from "./refs.js";
import type { OperationHandle } from "./handle.js";
import type { PolicyChange, SettingChange } from "./change.js";
import type { WaitOptions } from "./wait-options.js";

/** Options shared by `updatePolicy` and `updateSettings`. */
export interface UpdateOptions {
  /** The sandbox name. */
  readonly sandbox: string;
  /** The workspace; defaults to the client's, else the gateway's default workspace. */
  readonly workspace?: string;
  /**
   * Makes retries safe across processes: the same key and change never create a second revision.
   * Default: a fresh UUIDv4. A gateway without operations (a release before durable operations)
   * ignores it; the SDK then never resends a commit whose answer was lost (CommitOutcomeUnknownError).
   */
  readonly idempotencyKey?: string;
  /**
   * Commit only if the sandbox's `resource_version` still equals this (else ConflictError). On a
   * gateway without operations it is what lets a commit whose answer was lost be resent: at most
   * one attempt can commit.
   */
  readonly expectedResourceVersion?: bigint | number;
  /** Non-secret provenance stored with the revision and merged into the sandbox's annotations. */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Wait for the terminal outcome: `true` (60 s) or options. Without it the call returns after the commit. */
  readonly wait?: boolean | WaitOptions;
  /** Cancels the request and any wait. A committed update stays committed. */
  readonly signal?: AbortSignal;
}

/** Input of `updatePolicy`. */
export type PolicyUpdate = UpdateOptions & PolicyChange;
/** Input of `updateSettings`. */
export type SettingsUpdate = UpdateOptions & SettingChange;

/** What the gateway committed. */
export interface UpdateResult {
  /** The sandbox name. */
  readonly sandbox: string;
  /** The sandbox policy version after the update (monotonic per sandbox). */
  readonly policyVersion: number;
  /** SHA-256 of the canonical policy. */
  readonly policyHash: string;
  /** The settings revision of the changed scope. */
  readonly settingsRevision: bigint;
  /** True when a setting was deleted. */
  readonly deleted: boolean;
  /** The sandbox's annotations after the update. */
  readonly annotations: Readonly<Record<string, string>>;
  /** The idempotency key the update was committed with. */
  readonly idempotencyKey: string;
  /** The durable operation as the gateway returned it; absent on a polling-mode gateway. */
  readonly operation: OperationStatus | undefined;
  /** Resumes waiting later, in any process. */
  readonly handle: OperationHandle;
}

/** What a waited update returns: the commit plus its terminal outcome. */
export interface WaitedUpdateResult extends UpdateResult {
  /** The terminal outcome of exactly this update's revision. */
  readonly completion: Completion;
}

const MAX_KEY_BYTES = 256;
const encoder = new TextEncoder();

/** Checks a key as the gateway will, so a bad key fails before any network traffic. */
export function validateIdempotencyKey(key: string): void {
  if (key === "") throw new InvalidArgumentError("idempotencyKey must not be empty", { field: "idempotencyKey" });
  if (encoder.encode(key).length > MAX_KEY_BYTES) {
    throw new InvalidArgumentError("idempotencyKey exceeds 256 bytes", { field: "idempotencyKey" });
  }
  if (key.trim() !== key) {
    throw new InvalidArgumentError("idempotencyKey must not have leading or trailing whitespace", {
      field: "idempotencyKey",
    });
  }
}

/** A fresh random idempotency key (UUIDv4). */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

// Kept here for the modules that import it from update.ts; the one definition is in workspace.ts.
export { workspaceScope } from "./workspace.js";

interface Common {
  readonly sandbox: string;
  readonly idempotencyKey: string;
  readonly workspace: string | undefined;
  readonly expectedResourceVersion?: bigint | number | undefined;
  readonly annotations?: Readonly<Record<string, string>> | undefined;
}

/** Builds the commit-only wire request for a policy or settings change. */
export function buildRequest(common: Common, change: PolicyChange | SettingChange): UpdateConfigRequest {
  if (typeof common.sandbox !== "string" || common.sandbox === "") {
    throw new InvalidArgumentError("sandbox is required", { field: "sandbox" });
  }
  validateIdempotencyKey(common.idempotencyKey);
  const erv = common.expectedResourceVersion;
  if (erv !== undefined && (typeof erv === "number" ? !Number.isSafeInteger(erv) || erv < 0 : erv < 0n)) {
    throw new InvalidArgumentError("expectedResourceVersion must be a non-negative integer", {
      field: "expectedResourceVersion",
    });
  }
  const req = create(UpdateConfigRequestSchema, {
    sandbox: common.sandbox,
    idempotencyKey: common.idempotencyKey,
    workspaceScope: workspaceScope(common.workspace),
    expectedResourceVersion: erv === undefined ? 0n : BigInt(erv),
    annotations: { ...common.annotations },
  });
  if ("key" in change && change.key !== undefined) {
    if (typeof change.key !== "string" || change.key === "") {
      throw new InvalidArgumentError("key is required", { field: "key" });
    }
    req.settingKey = change.key;
    if (change.delete === true) {
      if (change.value !== undefined) {
        throw new InvalidArgumentError("value and delete are mutually exclusive", { field: "value" });
      }
      req.deleteSetting = true;
    } else {
      if (change.value === undefined) {
        throw new InvalidArgumentError("value is required (or delete: true)", { field: "value" });
      }
      req.settingValue = toSettingValue(change.value);
    }
    return req;
  }
  const policyChange = change as PolicyChange;
  if ((policyChange.policy === undefined) === (policyChange.mergeOperations === undefined)) {
    throw new InvalidArgumentError("exactly one of policy and mergeOperations is required", { field: "policy" });
  }
  if (policyChange.policy !== undefined) {
    req.policy = create(SandboxPolicySchema, policyChange.policy);
  } else {
    if (policyChange.mergeOperations!.length === 0) {
      throw new InvalidArgumentError("mergeOperations must not be empty", { field: "mergeOperations" });
    }
    req.mergeOperations = policyChange.mergeOperations!.map((op) => create(PolicyMergeOperationSchema, op));
  }
  return req;
}

/** Reads the committed response into the SDK's plain result. */
export function readCommitted(
  request: UpdateConfigRequest,
  res: UpdateConfigResponse,
  workspace: string | undefined,
): UpdateResult {
  const operation = res.operation ? fromOperation(res.operation) : undefined;
  return {
    sandbox: request.sandbox,
    policyVersion: res.version,
    policyHash: res.policyHash,
    settingsRevision: res.settingsRevision,
    deleted: res.deleted,
    annotations: { ...res.annotations },
    idempotencyKey: request.idempotencyKey,
    operation,
    handle: createHandle(request, {
      operationId: operation?.operationId,
      workspace,
      policyVersion: request.settingKey === "" ? res.version : undefined,
    }),
  };
}
