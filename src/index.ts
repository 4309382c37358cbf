// openshell-config: commit a sandbox configuration change and know what became of it.
// The curated surface; generated messages live in `openshell-config/raw`.

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
  Drift,
} from "./sandbox-config.js";
export type {
  Enforcement,
  EnforcementBase,
  EnforcementSource,
  EnforcingPolicy,
  FailingClosed,
  LocalOverride,
  EnforcementUnknown,
} from "./enforcement.js";
export { fromPolicyEnforcement } from "./enforcement.js";
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
  RpcError,
  OPERATION_ID_METADATA,
} from "./errors.js";
export type { ErrorCode, ErrorOptions } from "./errors.js";
