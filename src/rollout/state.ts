// A rollout's durable identity as plain JSON: its id, the one change it sends, the sandboxes it
// targets, its waves and where it is in them, what each sandbox had before, and the handle of
// every commit (and rollback) made so far. Every sandbox's idempotency key is derived
// from the rollout id, so the state (or just the id and the same request) resumes a rollout in any
// process without ever creating a second revision for a sandbox.

import { fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { UpdateConfigRequestSchema, type UpdateConfigRequest } from "../gen/openshell/v1/config_pb.js";
import { InvalidArgumentError } from "../errors.js";
import { fromSettingValue } from "../convert/setting-value.js";
import { buildRequest } from "../update.js";
import type { PolicyChange, SettingChange } from "../change.js";
import { restoreHandle } from "../refs.js";
import type { OperationHandle } from "../handle.js";
import { checkCount, resolveGate, type Gate, type PlannedWave } from "./waves.js";

export { checkCount };

/** Marks a JSON object as a rollout state of this SDK (and its format version). */
export const ROLLOUT_KIND = "openshell-config/rollout@2";
/** The format before waves; `restoreRolloutState` still reads it (as one wave). */
export const ROLLOUT_KIND_V1 = "openshell-config/rollout@1";

/** Where a rollout is: sending waves, waiting between two, returning sandboxes to before, or over. */
export type RolloutStatePhase = "running" | "paused" | "rolling-back" | "done";

/**
 * What a sandbox had before the rollout's first commit to it, read just before its wave: what a
 * rollback returns it to. Policy rollouts: `policyVersion`, the revision it enforced (else its
 * desired one); absent: no earlier revision. Settings rollouts: `settingValue`, its own
 * (sandbox-scoped) value as protobuf-JSON SettingValue; absent: it had none.
 */
export interface SandboxBefore {
  /** The policy revision to return to. */
  readonly policyVersion?: number;
  /** The sandbox-scoped setting value to return to (protobuf JSON of SettingValue). */
  readonly settingValue?: JsonValue;
}

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
  /** The waves, fixed when the rollout started (empty until the targets are known). */
  readonly waves: readonly PlannedWave[];
  /** The wave being sent, or the next one after a passed gate (== `waves.length` when all passed). */
  readonly wave: number;
  /** Where the rollout is. */
  readonly phase: RolloutStatePhase;
  /** While paused for a duration: when the next wave may start (ISO time). Paused without it: waiting for approval. */
  readonly pausedUntil?: string;
  /** The gate that failed, if one did. */
  readonly gateFailure?: {
    /** The index of the wave whose gate failed (0: the first). */
    readonly wave: number;
    /** The verdict as a sentence. */
    readonly reason: string;
  };
  /** Whether a failed gate rolls back what the rollout changed. */
  readonly rollback: "never" | "on-halt";
  /** What each sandbox had before its wave's first commit, by sandbox name. */
  readonly before: Readonly<Record<string, SandboxBefore>>;
  /** The handle of each rollback sent (recorded before sending, with its expectedResourceVersion), by sandbox name. */
  readonly undoRefs: Readonly<Record<string, OperationHandle>>;
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

/** The idempotency key of one sandbox's rollback of rollout `id` (≤ 5 + 128 + 1 + 120 bytes). */
export function undoKey(id: string, sandbox: string): string {
  return `undo/${id}/${sandbox}`;
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

const bad = (field: string, what: string, cause?: unknown) =>
  new InvalidArgumentError(`${field} ${what}`, { field, ...(cause !== undefined ? { cause } : {}) });

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function handlesOf(value: unknown, field: string, targets: ReadonlySet<string>): Record<string, OperationHandle> {
  if (!isRecord(value)) throw bad(field, "must be an object");
  const out: Record<string, OperationHandle> = {};
  for (const [sandbox, ref] of Object.entries(value)) {
    if (!targets.has(sandbox)) throw bad(`${field}.${sandbox}`, `names "${sandbox}", which is not a target`);
    try {
      out[sandbox] = restoreHandle(ref);
    } catch (err) {
      throw bad(`${field}.${sandbox}`, "is not an operation handle", err);
    }
  }
  return out;
}

const NO_GATE: Gate = { maxFailures: null, maxTotalFailures: null, failOnDegraded: false, pause: null };

function gateOf(value: unknown, field: string): Gate {
  if (!isRecord(value)) throw bad(field, "must be an object");
  const nullable = (k: "maxFailures" | "maxTotalFailures" | "pause") => (value[k] === null ? undefined : value[k]);
  const g = resolveGate(
    { maxFailures: nullable("maxFailures"), maxTotalFailures: nullable("maxTotalFailures"), failOnDegraded: value.failOnDegraded, pause: nullable("pause") } as never,
    NO_GATE,
    field,
  );
  return g;
}

/**
 * Restores a rollout state from its JSON text or parsed value: this format (`@2`) or the one
 * before waves (`@1`, read as one wave that rolls nothing back). Throws InvalidArgumentError
 * naming the field that is wrong.
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
  if (typeof s !== "object" || s === null || (s.kind !== ROLLOUT_KIND && s.kind !== ROLLOUT_KIND_V1)) {
    throw new InvalidArgumentError(`state.kind must be "${ROLLOUT_KIND}"`, { field: "state.kind" });
  }
  validateRolloutId(s.id, "state.id");
  if (typeof s.request !== "object" || s.request === null) throw bad("state.request", "must be an object");
  try {
    const { change } = requestToChange(s.request as JsonObject);
    if ("mergeOperations" in change && change.mergeOperations?.length === 0) throw new Error("no change");
  } catch (err) {
    throw bad("state.request", "is not a policy or settings change", err);
  }
  checkCount(s.concurrency, "state.concurrency", 1);
  if (s.maxFailures !== undefined) checkCount(s.maxFailures, "state.maxFailures", 1);
  if (s.waitTimeoutMs !== undefined) checkCount(s.waitTimeoutMs, "state.waitTimeoutMs", 0);
  for (const f of ["workspace", "labelSelector"] as const) {
    if (s[f] !== undefined && typeof s[f] !== "string") throw bad(`state.${f}`, "must be a string");
  }
  if (!Array.isArray(s.sandboxes) || s.sandboxes.some((n) => typeof n !== "string" || n === "")) {
    throw bad("state.sandboxes", "must be an array of sandbox names");
  }
  const targets = new Set<string>(s.sandboxes as string[]);
  const refs = handlesOf(s.refs, "state.refs", targets);
  if (s.kind === ROLLOUT_KIND_V1) {
    const limit = (s.maxFailures as number | undefined) ?? null;
    const gate: Gate = { ...NO_GATE, maxFailures: limit, maxTotalFailures: limit };
    return {
      ...(s as unknown as Omit<RolloutState, "kind">),
      kind: ROLLOUT_KIND,
      refs,
      waves: targets.size > 0 ? [{ sandboxes: [...(s.sandboxes as string[])], gate }] : [],
      wave: 0,
      phase: "running",
      rollback: "never",
      before: {},
      undoRefs: {},
    };
  }
  if (!Array.isArray(s.waves)) throw bad("state.waves", "must be an array");
  const inWave = new Set<string>();
  const waves = s.waves.map((w: unknown, i): PlannedWave => {
    const field = `state.waves[${i}]`;
    if (!isRecord(w) || !Array.isArray(w.sandboxes) || w.sandboxes.length === 0) throw bad(`${field}.sandboxes`, "must be a non-empty array of targets");
    for (const n of w.sandboxes) {
      if (typeof n !== "string" || !targets.has(n) || inWave.has(n)) throw bad(`${field}.sandboxes`, `must hold each target once (${String(n)})`);
      inWave.add(n);
    }
    return { sandboxes: [...(w.sandboxes as string[])], gate: gateOf(w.gate, `${field}.gate`) };
  });
  if (waves.length > 0 && inWave.size !== targets.size) throw bad("state.waves", "must hold every target");
  if (typeof s.wave !== "number" || !Number.isSafeInteger(s.wave) || s.wave < 0 || s.wave > waves.length) {
    throw bad("state.wave", `must be an integer from 0 to ${waves.length}`);
  }
  if (!["running", "paused", "rolling-back", "done"].includes(s.phase as string)) {
    throw bad("state.phase", 'must be "running", "paused", "rolling-back" or "done"');
  }
  if (s.pausedUntil !== undefined && (typeof s.pausedUntil !== "string" || Number.isNaN(Date.parse(s.pausedUntil)))) {
    throw bad("state.pausedUntil", "must be an ISO time");
  }
  const gf = s.gateFailure;
  if (gf !== undefined && (!isRecord(gf) || typeof gf.reason !== "string" || typeof gf.wave !== "number" || !(gf.wave >= 0 && gf.wave < waves.length))) {
    throw bad("state.gateFailure", "must be { wave, reason } naming a wave");
  }
  if (s.rollback !== "never" && s.rollback !== "on-halt") throw bad("state.rollback", 'must be "never" or "on-halt"');
  if (!isRecord(s.before)) throw bad("state.before", "must be an object");
  for (const [sandbox, b] of Object.entries(s.before)) {
    const field = `state.before.${sandbox}`;
    if (!targets.has(sandbox)) throw bad(field, `names "${sandbox}", which is not a target`);
    if (!isRecord(b)) throw bad(field, "must be an object");
    if (b.policyVersion !== undefined) checkCount(b.policyVersion, `${field}.policyVersion`, 1);
  }
  const undoRefs = handlesOf(s.undoRefs, "state.undoRefs", targets);
  return { ...(s as unknown as RolloutState), refs, waves, undoRefs };
}


/** True when `value` looks like a rollout state (its `kind`, this format or `@1`); `restoreRolloutState` checks the rest. */
export function isRolloutState(value: unknown): value is RolloutState {
  const kind = typeof value === "object" && value !== null ? (value as { kind?: unknown }).kind : undefined;
  return kind === ROLLOUT_KIND || kind === ROLLOUT_KIND_V1;
}
