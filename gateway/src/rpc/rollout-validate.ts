// The checks on what a client writes into a rollout record (proto/openshell/v1/rollouts.proto):
// ids, driver ids, lease lengths, the request template and the rollout@2 state JSON with its
// summary. Each failure is INVALID_ARGUMENT naming the field, so a client can fix its request.

import { Code, ConnectError } from "@connectrpc/connect";
import { RolloutRecordPhase, RolloutRecordResult, type RolloutSummary, type UpdateConfigRequest } from "openshell-config/raw";
import { quotedName } from "../model/workspace-name.js";

/** The state document's kind (the SDK's ROLLOUT_KIND). */
export const ROLLOUT_STATE_KIND = "openshell-config/rollout@2";
export const DEFAULT_LEASE_TTL_MS = 15_000;
export const MIN_LEASE_TTL_MS = 1_000;
export const MAX_LEASE_TTL_MS = 300_000;
export const MAX_STATE_BYTES = 8 * 1024 * 1024;
export const MAX_LABEL_SELECTOR = 1024;
export const MAX_CHANGE_SUMMARY = 200;
export const MAX_DRIVER = 200;
/**
 * Waves of one rollout. Every list row carries the approvals (one per wave at most), so this and
 * MAX_GATE_FAILURE keep a page of 500 summaries small whatever drivers write.
 */
export const MAX_WAVES = 1000;
export const MAX_GATE_FAILURE = 1024;

const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const ID_RULE = "1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit";
const CONTROL = /\p{Cc}/u;

/** The state's `phase` for each summary phase (and back): the two must agree. */
const STATE_PHASE: ReadonlyMap<RolloutRecordPhase, string> = new Map([
  [RolloutRecordPhase.RUNNING, "running"],
  [RolloutRecordPhase.PAUSED, "paused"],
  [RolloutRecordPhase.ROLLING_BACK, "rolling-back"],
  [RolloutRecordPhase.DONE, "done"],
]);

export const invalid = (message: string) => new ConnectError(message, Code.InvalidArgument);

export function validateRolloutId(id: string, field: string): void {
  if (id === "") throw invalid(`${field} is required`);
  if (!ID.test(id)) throw invalid(`${field} ${quotedName(id)} is not a rollout id: ${ID_RULE}`);
}

export function validateDriver(driver: string, field = "driver"): void {
  if (driver === "") throw invalid(`${field} is required (the writer's driver id)`);
  // Code points, so that a name in any script gets the same room.
  const length = [...driver].length;
  if (length > MAX_DRIVER) throw invalid(`${field} has ${length} characters; at most ${MAX_DRIVER} are allowed`);
  if (CONTROL.test(driver)) throw invalid(`${field} must not contain control characters`);
}

/** The lease length a request asks for, in ms. */
export function leaseTtlMs(ms: number, field = "lease_ttl_ms"): number {
  if (ms === 0) return DEFAULT_LEASE_TTL_MS;
  if (ms < MIN_LEASE_TTL_MS || ms > MAX_LEASE_TTL_MS) {
    throw invalid(`${field} must be 0 (${DEFAULT_LEASE_TTL_MS} ms) or from ${MIN_LEASE_TTL_MS} to ${MAX_LEASE_TTL_MS}; got ${ms}`);
  }
  return ms;
}

export function validateLength(value: string, max: number, field: string): void {
  const length = [...value].length;
  if (length > max) throw invalid(`${field} has ${length} characters; at most ${max} are allowed`);
}

/** Text other operators' terminals print (lists, status): bounded, and no control characters (escapes). */
export function validateText(value: string, max: number, field: string): void {
  validateLength(value, max, field);
  if (CONTROL.test(value)) throw invalid(`${field} must not contain control characters`);
}

/** The view a read asks for: true for FULL. */
export function fullView(view: number, field = "view"): boolean {
  if (view < 0 || view > 2) throw invalid(`${field} ${view} is not a RolloutView`);
  return view === 2;
}

/**
 * A state the driver writes, with its summary: `stateField` and `summaryField` name them in
 * errors ("state_json" or "rollout.state_json"). Returns the summary, known to be present.
 */
export function validateState(
  stateJson: string,
  summary: RolloutSummary | undefined,
  id: string,
  fields: { state: string; summary: string },
): RolloutSummary {
  // UTF-16 length bounds the UTF-8 size from both sides (1 to 3 bytes per unit): measure only near the cap.
  if (stateJson.length * 3 > MAX_STATE_BYTES) {
    const bytes = Buffer.byteLength(stateJson, "utf8");
    // A cap, like every other size bound of the gateway (docs/security.md): RESOURCE_EXHAUSTED.
    if (bytes > MAX_STATE_BYTES) {
      throw new ConnectError(`${fields.state} is ${bytes} bytes; at most ${MAX_STATE_BYTES} (8 MiB) are allowed`, Code.ResourceExhausted);
    }
  }
  if (!summary) throw invalid(`${fields.summary} is required with ${fields.state}`);
  const statePhase = STATE_PHASE.get(summary.phase);
  if (statePhase === undefined) throw invalid(`${fields.summary}.phase must be RUNNING, PAUSED, ROLLING_BACK or DONE`);
  validateSummaryBounds(summary, fields.summary);
  let state: unknown;
  try {
    state = JSON.parse(stateJson);
  } catch (err) {
    throw invalid(`${fields.state} is not JSON: ${(err as Error).message}`);
  }
  if (typeof state !== "object" || state === null || Array.isArray(state)) throw invalid(`${fields.state} must be a JSON object`);
  const s = state as Record<string, unknown>;
  if (s["kind"] !== ROLLOUT_STATE_KIND) throw invalid(`${fields.state}: kind must be "${ROLLOUT_STATE_KIND}"`);
  if (s["id"] !== id) throw invalid(`${fields.state}: id must be the rollout's id "${id}"`);
  if (Object.hasOwn(s, "request")) throw invalid(`${fields.state} must not hold "request": the change is stored once, as the rollout's request`);
  if (s["phase"] !== statePhase) {
    throw invalid(`${fields.state}: phase ${JSON.stringify(s["phase"])} does not match ${fields.summary}.phase ${RolloutRecordPhase[summary.phase]} ("${statePhase}")`);
  }
  validateSummaryMatchesState(s, summary, fields);
  return summary;
}

/** Counts a list can trust: none negative, waves done within the waves, bounded text and waves. */
function validateSummaryBounds(s: RolloutSummary, field: string): void {
  for (const name of ["wavesTotal", "wavesDone", "targets", "sent", "applied", "failed", "rolledBack"] as const) {
    if (s[name] < 0) throw invalid(`${field}.${snake(name)} must not be negative; got ${s[name]}`);
  }
  if (s.wavesTotal > MAX_WAVES) throw invalid(`${field}.waves_total is ${s.wavesTotal}; a rollout has at most ${MAX_WAVES} waves`);
  if (s.wavesDone > s.wavesTotal) throw invalid(`${field}.waves_done (${s.wavesDone}) must not exceed waves_total (${s.wavesTotal})`);
  if (RolloutRecordResult[s.result] === undefined) throw invalid(`${field}.result ${s.result} is not a RolloutRecordResult`);
  if (s.awaitingApproval && s.phase !== RolloutRecordPhase.PAUSED) throw invalid(`${field}.awaiting_approval needs phase PAUSED`);
  validateText(s.gateFailure, MAX_GATE_FAILURE, `${field}.gate_failure`);
}

/**
 * The summary is what the gateway judges (the approval gate, lists), the state what a resuming
 * client acts on: where the state says which wave is next and whether it waits for an approval,
 * the summary must say the same (as the SDK's summaryOf computes it), or an approval of the
 * summary's wave would let another wave of the state start.
 */
function validateSummaryMatchesState(s: Record<string, unknown>, summary: RolloutSummary, fields: { state: string; summary: string }): void {
  const waves = s["waves"];
  const wave = s["wave"];
  if (Array.isArray(waves)) {
    if (waves.length !== summary.wavesTotal) {
      throw invalid(`${fields.summary}.waves_total is ${summary.wavesTotal} but ${fields.state} has ${waves.length} waves`);
    }
    if (typeof wave === "number" && Math.min(wave, waves.length) !== summary.wavesDone) {
      throw invalid(`${fields.summary}.waves_done is ${summary.wavesDone} but ${fields.state} is at wave ${wave}`);
    }
  }
  const awaiting = s["phase"] === "paused" && s["pausedUntil"] === undefined;
  if (awaiting !== summary.awaitingApproval) {
    throw invalid(`${fields.summary}.awaiting_approval is ${summary.awaitingApproval} but ${fields.state} ${awaiting ? "waits" : "does not wait"} for an approval (phase "paused" without pausedUntil)`);
  }
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Whether a driver may write `next` over `stored` (FAILED_PRECONDITION naming the rule when not).
 * The plan's waves are fixed and done waves stay done; a finished or rolling-back rollout only
 * rolls back or finishes (undo), never runs again; and a rollout waiting for the approval of wave
 * k leaves that wait only with the approval, or by rolling back or finishing at wave k. Without
 * these, one write that cleared the wait (PAUSED, or DONE) and a second that ran on would pass
 * the gate unapproved.
 */
export function checkTransition(stored: RolloutSummary, next: RolloutSummary, approved: (wave: number) => boolean, id: string): void {
  const refuse = (why: string) => new ConnectError(`rollout "${id}": ${why}`, Code.FailedPrecondition);
  // 0: a state written before its targets were known (the SDK's "waves: empty until the targets are known").
  if (stored.wavesTotal !== 0 && next.wavesTotal !== stored.wavesTotal) throw refuse(`summary.waves_total is ${stored.wavesTotal}; a rollout's waves do not change (got ${next.wavesTotal})`);
  if (next.wavesDone < stored.wavesDone) throw refuse(`summary.waves_done cannot go back from ${stored.wavesDone} to ${next.wavesDone}`);
  const ending = next.phase === RolloutRecordPhase.ROLLING_BACK || next.phase === RolloutRecordPhase.DONE;
  if ((stored.phase === RolloutRecordPhase.ROLLING_BACK || stored.phase === RolloutRecordPhase.DONE) && !ending) {
    throw refuse(`it is ${RolloutRecordPhase[stored.phase]}; it can only roll back or finish, not become ${RolloutRecordPhase[next.phase]}`);
  }
  const k = stored.wavesDone;
  if (!stored.awaitingApproval || approved(k)) return;
  const stillWaiting = next.awaitingApproval && next.wavesDone === k;
  const undone = ending && next.wavesDone === k;
  if (!stillWaiting && !undone) throw new ConnectError(`wave ${k} of rollout "${id}" waits for an approval`, Code.FailedPrecondition);
}

/** The change a rollout sends to every sandbox: sandbox and idempotency key are each sandbox's own. */
export function validateRequestTemplate(request: UpdateConfigRequest | undefined, field: string): UpdateConfigRequest {
  if (!request) throw invalid(`${field} is required (the change sent to every sandbox)`);
  if (request.sandbox !== "") throw invalid(`${field}.sandbox must be empty: the rollout chooses the sandboxes`);
  if (request.idempotencyKey !== "") throw invalid(`${field}.idempotency_key must be empty: each sandbox's key derives from the rollout id`);
  const kinds = [request.policy !== undefined, request.mergeOperations.length > 0, request.settingKey !== ""].filter(Boolean).length;
  if (kinds !== 1) throw invalid(`${field} must set exactly one of policy, merge_operations and setting_key`);
  return request;
}

/** A phase filter value: one of the four phases. */
export function validatePhase(phase: number, field: string): void {
  if (!STATE_PHASE.has(phase)) throw invalid(`${field} must be RUNNING, PAUSED, ROLLING_BACK or DONE; got ${phase}`);
}
