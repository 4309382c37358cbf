// A rollout's durable identity as plain JSON: its id, the one change it sends, the sandboxes it
// targets and the handle of every commit made so far. Every sandbox's idempotency key is derived
// from the rollout id, so the state (or just the id and the same request) resumes a rollout in any
// process without ever creating a second revision for a sandbox.

import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { UpdateConfigRequestSchema, type UpdateConfigRequest } from "../gen/openshell/v1/config_pb.js";
import { InvalidArgumentError } from "../errors.js";
import { fromSettingValue } from "../convert/setting-value.js";
import { buildRequest } from "../update.js";
import type { PolicyChange, SettingChange } from "../change.js";
import { restoreHandle } from "../refs.js";
import type { OperationHandle } from "../handle.js";

/** Marks a JSON object as a rollout state of this SDK (and its format version). */
export const ROLLOUT_KIND = "openshell-config/rollout@1";

/** The change a rollout sends to every sandbox, as plain data. */
export type RolloutChange = PolicyChange | SettingChange;

/**
 * Everything needed to resume a rollout, in any process: plain JSON. Read one back with
 * `restoreRolloutState` and pass it as `resume`.
 */
export interface RolloutState {
  /** Always `ROLLOUT_KIND`. */
  readonly kind: typeof ROLLOUT_KIND;
  /** The rollout id every sandbox's idempotency key is derived from. */
  readonly id: string;
  /** The workspace the sandboxes are in, when one was named. */
  readonly workspace?: string;
  /** The label selector the sandboxes were chosen with, when they were chosen by label. */
  readonly labelSelector?: string;
  /** The change as a protobuf-JSON `UpdateConfigRequest` without `sandbox` and `idempotencyKey`. */
  readonly request: JsonObject;
  /** How many sandboxes are committed and awaited at once. */
  readonly concurrency: number;
  /** New commits stop after this many failed or cancelled sandboxes; absent: never. */
  readonly maxFailures?: number;
  /** The local bound on each sandbox's wait, in ms; absent: the client's default. */
  readonly waitTimeoutMs?: number;
  /** The target sandboxes, in order, fixed when the rollout started. */
  readonly sandboxes: readonly string[];
  /** The handle of each sandbox whose change was sent (committed, or possibly in flight), by sandbox name. */
  readonly refs: Readonly<Record<string, OperationHandle>>;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Checks a rollout id: 1-128 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit. */
export function validateRolloutId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || !ID.test(id)) {
    throw new InvalidArgumentError(
      `${field} must be 1-128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit`,
      { field },
    );
  }
  return id;
}

/** The idempotency key of one sandbox's commit in rollout `id`: the same every time it is resent. */
export function rolloutKey(id: string, sandbox: string): string {
  return `rollout/${id}/${sandbox}`;
}

/** The change as the JSON of a request template (validated by building it, so errors name the field). */
export function changeToRequestJson(
  change: RolloutChange,
  common: { workspace: string | undefined; annotations: Readonly<Record<string, string>> | undefined },
): JsonObject {
  const template = buildRequest(
    { sandbox: "template", idempotencyKey: "template", workspace: common.workspace, annotations: common.annotations },
    change,
  );
  const json = toJson(UpdateConfigRequestSchema, template) as JsonObject;
  delete json.sandbox;
  delete json.idempotencyKey;
  return json;
}

/** The plain change, workspace and annotations a request template describes. */
export function requestToChange(json: JsonObject): {
  change: RolloutChange;
  annotations: Readonly<Record<string, string>>;
} {
  const req: UpdateConfigRequest = fromJson(UpdateConfigRequestSchema, json);
  let change: RolloutChange;
  if (req.settingKey !== "") {
    change = req.deleteSetting
      ? { key: req.settingKey, delete: true }
      : { key: req.settingKey, value: fromSettingValue(req.settingValue)! };
  } else if (req.policy !== undefined) {
    change = { policy: req.policy };
  } else {
    change = { mergeOperations: req.mergeOperations };
  }
  return { change, annotations: { ...req.annotations } };
}

/**
 * Restores a rollout state from its JSON text or parsed value. Throws InvalidArgumentError naming
 * the field that is wrong.
 */
export function restoreRolloutState(json: string | unknown): RolloutState {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (err) {
      throw new InvalidArgumentError("rollout state is not valid JSON", { field: "state", cause: err });
    }
  }
  const s = value as Partial<Record<keyof RolloutState, unknown>> | null;
  if (typeof s !== "object" || s === null || s.kind !== ROLLOUT_KIND) {
    throw new InvalidArgumentError(`state.kind must be "${ROLLOUT_KIND}"`, { field: "state.kind" });
  }
  validateRolloutId(s.id, "state.id");
  if (typeof s.request !== "object" || s.request === null) {
    throw new InvalidArgumentError("state.request must be an object", { field: "state.request" });
  }
  try {
    const { change } = requestToChange(s.request as JsonObject);
    if ("mergeOperations" in change && change.mergeOperations?.length === 0) throw new Error("no change");
  } catch (err) {
    throw new InvalidArgumentError("state.request is not a policy or settings change", { field: "state.request", cause: err });
  }
  checkCount(s.concurrency, "state.concurrency", 1);
  if (s.maxFailures !== undefined) checkCount(s.maxFailures, "state.maxFailures", 1);
  if (s.waitTimeoutMs !== undefined) checkCount(s.waitTimeoutMs, "state.waitTimeoutMs", 0);
  for (const f of ["workspace", "labelSelector"] as const) {
    if (s[f] !== undefined && typeof s[f] !== "string") {
      throw new InvalidArgumentError(`state.${f} must be a string`, { field: `state.${f}` });
    }
  }
  if (!Array.isArray(s.sandboxes) || s.sandboxes.some((n) => typeof n !== "string" || n === "")) {
    throw new InvalidArgumentError("state.sandboxes must be an array of sandbox names", { field: "state.sandboxes" });
  }
  if (typeof s.refs !== "object" || s.refs === null || Array.isArray(s.refs)) {
    throw new InvalidArgumentError("state.refs must be an object", { field: "state.refs" });
  }
  const refs: Record<string, OperationHandle> = {};
  for (const [sandbox, ref] of Object.entries(s.refs)) {
    if (!s.sandboxes.includes(sandbox)) {
      throw new InvalidArgumentError(`state.refs names "${sandbox}", which is not a target`, { field: `state.refs.${sandbox}` });
    }
    try {
      refs[sandbox] = restoreHandle(ref);
    } catch (err) {
      throw new InvalidArgumentError(`state.refs.${sandbox} is not an operation handle`, { field: `state.refs.${sandbox}`, cause: err });
    }
  }
  return { ...(s as unknown as RolloutState), refs };
}

/** True when `value` looks like a rollout state (its `kind`); `restoreRolloutState` checks the rest. */
export function isRolloutState(value: unknown): value is RolloutState {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === ROLLOUT_KIND;
}

/** Throws InvalidArgumentError unless `n` is an integer ≥ `min`. */
export function checkCount(n: unknown, field: string, min: number): number {
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min) {
    throw new InvalidArgumentError(`${field} must be an integer of at least ${min}`, { field });
  }
  return n;
}
