/**
 * Commit a sandbox configuration change and know what became of it.
 *
 * The curated surface: {@link createConfigClient} and the {@link ConfigClient} it returns, which
 * commits a policy or settings change ({@link ConfigClient.updatePolicy},
 * {@link ConfigClient.updateSettings}), waits for the outcome of exactly that revision
 * ({@link ConfigClient.awaitCompletion}), reads an operation without waiting
 * ({@link ConfigClient.getOperation}) and says what a sandbox enforces
 * ({@link ConfigClient.getConfig}); the outcome types ({@link Completion}, a union on `state`),
 * the resumable references ({@link OperationHandle}, {@link restoreHandle}) and the error classes
 * ({@link CompletionTimeoutError} is the one a wait throws).
 *
 * The other entry points: `openshell-config/transport/node` (gRPC or Connect over HTTP/2, for
 * servers and CLIs) and `openshell-config/transport/web` (Connect or gRPC-Web over fetch);
 * `openshell-config/rollout` (one change to many sandboxes); `openshell-config/raw` (the generated
 * messages and service descriptors).
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 *
 * const client = createConfigClient({ baseUrl: "https://gateway.example.com", token: "…" });
 * const { completion } = await client.updateSettings({ sandbox: "agent-7", key: "log_level", value: "debug", wait: true });
 * console.log(completion.state); // "applied", "failed", "superseded", "inactive" or "cancelled"
 * ```
 *
 * @module openshell-config
 */

export { createConfigClient } from "./client.js";
export type { ConfigClient, ConfigClientOptions, GetOperationOptions } from "./client.js";
export type { PolicyUpdate, SettingsUpdate, UpdateOptions, UpdateResult, WaitedUpdateResult } from "./update.js";
export type { PolicyChange, SettingChange, SandboxPolicyInput, PolicyMergeOperationInput } from "./change.js";
export { newIdempotencyKey, validateIdempotencyKey } from "./update.js";
export type { WaitOptions, ProgressEvent } from "./wait-options.js";
export type {
  Completion,
  OperationStatus,
  OperationState,
  ApplyOutcome,
  ConfigComponentName,
  Tracking,
  OperationBase,
  PendingOperation,
  AppliedCompletion,
  FailedCompletion,
  SupersededCompletion,
  InactiveCompletion,
  CancelledCompletion,
} from "./completion.js";
export { isTerminal } from "./completion.js";
export type {
  TargetRevision,
  SandboxConfigTarget,
  ProviderEnvironmentTarget,
  ProviderTarget,
  PolicyVersionTarget,
  PolicySourceName,
} from "./convert/revision.js";
export type { SettingInput, SettingOutput } from "./convert/setting-types.js";
export { toSettingValue, fromSettingValue } from "./convert/setting-value.js";
export type { OperationHandle, OperationIdRef, IdempotencyKeyRef, CompletionRef } from "./handle.js";
export { isOperationHandle, HANDLE_KIND } from "./handle.js";
export { restoreHandle } from "./refs.js";
export type {
  GetConfigOptions,
  SandboxConfig,
  DesiredConfig,
  EffectiveSettingOutput,
  LatestPolicyRevision,
  PolicyRevisionStatus,
} from "./sandbox-config.js";
export type {
  Enforcement,
  EnforcementBase,
  EnforcementSource,
  EnforcingPolicy,
  FailingClosed,
  LocalOverride,
  EnforcementUnknown,
  Drift,
  WantedRevision,
} from "./enforcement.js";
export { fromPolicyEnforcement, enforcementOfStatus, enforcementDrift } from "./enforcement.js";
export { fromOperation } from "./completion.js";
export type { TokenSource } from "./auth.js";
export type { RetryOptions } from "./retry.js";
export {
  OpenShellConfigError,
  CompletionTimeoutError,
  CompletionUnavailableError,
  IdempotencyConflictError,
  ConflictError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnavailableError,
  InsecureTransportError,
  TlsError,
  TokenProviderError,
  CommitOutcomeUnknownError,
  RpcError,
  OPERATION_ID_METADATA,
  tlsErrorOf,
} from "./errors.js";
export type { CompletionTimeoutReason, ErrorCode, ErrorOptions, TlsFailure } from "./errors.js";
