// A rollout as the gateway's shared record shows it (rollouts.proto), as plain data with Dates:
// what `listRollouts`, `getRollout` and `watchRollout` return. Also the other direction: the
// summary a driver writes with each state, from the state and what its run has seen.

import { create, fromJson, toBinary, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  RolloutRecordPhase,
  RolloutRecordResult,
  RolloutSummarySchema,
  type RolloutRecord,
  type RolloutSummary,
} from "../gen/openshell/v1/rollouts_pb.js";
import { UpdateConfigRequestSchema } from "../gen/openshell/v1/config_pb.js";
import { toDate } from "../convert/timestamp.js";
import type { RolloutState, RolloutStatePhase } from "./state.js";
import { decodeRecordState, encodeRecordState } from "./record-state.js";
import type { RolloutPhase } from "./result.js";

/** One wave's approval, as recorded by the gateway. */
export interface RolloutApproval {
  /** The wave it let start (0: the first). */
  readonly wave: number;
  /** Who approved (the gateway's principal name). */
  readonly by: string;
  /** When. */
  readonly at: Date;
}

/** Who drives a shared rollout, until when. */
export interface RolloutLease {
  /** The driver's id, e.g. "cli alice@laptop pid 4242". */
  readonly holder: string;
  /** The driver's principal name at the gateway. */
  readonly principal: string;
  /** When the lease runs out unless renewed; after it, anyone may take the rollout over. */
  readonly expiresAt: Date;
}

/** A rollout as the gateway's shared record holds it. */
export interface SharedRollout {
  /** The rollout id. */
  readonly id: string;
  /** Its workspace. */
  readonly workspace: string;
  /** Bumped by every write (compare-and-swap token). */
  readonly resourceVersion: bigint;
  /** Who created it (principal name). */
  readonly createdBy: string;
  /** When it was created. */
  readonly createdAt: Date;
  /** When it last changed. */
  readonly updatedAt: Date;
  /** The label selector its sandboxes were chosen with; undefined when they were named. */
  readonly labelSelector: string | undefined;
  /** SHA-256 (hex) of the change's request template. */
  readonly changeHash: string;
  /** A short description of the change, e.g. "policy" or "setting log_level". */
  readonly changeSummary: string;
  /** Where it is. */
  readonly phase: RolloutStatePhase;
  /** How its driver's last run ended; undefined while running, or when a driver died mid-run. */
  readonly result: RolloutPhase | undefined;
  /** Waves: how many passed their gate, of how many. */
  readonly waves: {
    /** Waves whose gate passed. */
    readonly done: number;
    /** All waves. */
    readonly total: number;
  };
  /** Sandboxes: targets, sent, and terminal outcomes so far. */
  readonly counts: {
    /** The rollout's sandboxes. */
    readonly targets: number;
    /** Those whose change was sent (as far as the driver wrote it down). */
    readonly sent: number;
    /** Those that applied it. */
    readonly applied: number;
    /** Those that failed, were cancelled or errored. */
    readonly failed: number;
    /** Those a rollback returned to what they had before. */
    readonly rolledBack: number;
  };
  /** Paused until someone approves wave `waves.done` (`approveRollout`). */
  readonly awaitingApproval: boolean;
  /** Paused for a time: when the next wave starts. */
  readonly pausedUntil: Date | undefined;
  /** The failed gate's verdict, when one failed. */
  readonly gateFailure: string | undefined;
  /** Approvals, oldest first. */
  readonly approvals: readonly RolloutApproval[];
  /** Who drives it now; undefined when nobody holds the lease. */
  readonly lease: RolloutLease | undefined;
  /** Four eyes: its creator may not approve a wave. */
  readonly requireDistinctApprover: boolean;
  /** The full state (what resuming needs); only from `getRollout` and `watchRollout`. */
  readonly state: RolloutState | undefined;
}

const PHASES: Record<number, RolloutStatePhase> = {
  [RolloutRecordPhase.RUNNING]: "running",
  [RolloutRecordPhase.PAUSED]: "paused",
  [RolloutRecordPhase.ROLLING_BACK]: "rolling-back",
  [RolloutRecordPhase.DONE]: "done",
};
const RESULTS: Record<number, RolloutPhase> = {
  [RolloutRecordResult.COMPLETE]: "complete",
  [RolloutRecordResult.HALTED]: "halted",
  [RolloutRecordResult.ROLLED_BACK]: "rolled-back",
  [RolloutRecordResult.PAUSED]: "paused",
  [RolloutRecordResult.INCOMPLETE]: "incomplete",
  [RolloutRecordResult.ABORTED]: "aborted",
};

/** The record's phase number of a state phase. */
export function phaseNumber(phase: RolloutStatePhase): RolloutRecordPhase {
  return Number(Object.entries(PHASES).find(([, p]) => p === phase)![0]) as RolloutRecordPhase;
}

function resultNumber(result: RolloutPhase | undefined): RolloutRecordResult {
  if (result === undefined) return RolloutRecordResult.UNSPECIFIED;
  return Number(Object.entries(RESULTS).find(([, p]) => p === result)![0]) as RolloutRecordResult;
}

/** The state a FULL record holds: its state JSON with the request (and the handles' bodies) put back. */
export function stateOfRecord(r: RolloutRecord): RolloutState | undefined {
  if (r.stateJson === "" || r.request === undefined) return undefined;
  return decodeRecordState(r.stateJson, toJson(UpdateConfigRequestSchema, r.request) as JsonObject);
}

/** A record as plain data. */
export function fromRecord(r: RolloutRecord): SharedRollout {
  const s = r.summary ?? create(RolloutSummarySchema);
  return {
    id: r.id,
    workspace: r.workspace,
    resourceVersion: r.resourceVersion,
    createdBy: r.createdBy,
    createdAt: toDate(r.createdTime) ?? new Date(0),
    updatedAt: toDate(r.updatedTime) ?? new Date(0),
    labelSelector: r.labelSelector === "" ? undefined : r.labelSelector,
    changeHash: r.changeHash,
    changeSummary: r.changeSummary,
    phase: PHASES[s.phase] ?? "running",
    result: RESULTS[s.result],
    waves: { done: s.wavesDone, total: s.wavesTotal },
    counts: { targets: s.targets, sent: s.sent, applied: s.applied, failed: s.failed, rolledBack: s.rolledBack },
    awaitingApproval: s.awaitingApproval,
    pausedUntil: toDate(s.pausedUntil),
    gateFailure: s.gateFailure === "" ? undefined : s.gateFailure,
    approvals: r.approvals.map((a) => ({ wave: a.wave, by: a.principal, at: toDate(a.approvedTime) ?? new Date(0) })),
    lease: r.lease ? { holder: r.lease.holder, principal: r.lease.principal, expiresAt: toDate(r.lease.expireTime) ?? new Date(0) } : undefined,
    requireDistinctApprover: r.requireDistinctApprover,
    state: stateOfRecord(r),
  };
}

/** What a driver's run has seen so far, for the summary it writes. */
export interface RunTally {
  /** Terminal outcomes by sandbox: "applied", "failed" (failed, cancelled or error) or other. */
  readonly outcomes: Map<string, "applied" | "failed" | "other">;
  /** Sandboxes whose rollback returned them to before. */
  readonly rolledBack: Set<string>;
  /** How the run ended, once it has. */
  end: RolloutPhase | undefined;
}

/** The summary of `state` with what the run has seen. */
export function summaryOf(state: RolloutState, tally: RunTally): RolloutSummary {
  let applied = 0;
  let failed = 0;
  for (const o of tally.outcomes.values()) {
    if (o === "applied") applied++;
    else if (o === "failed") failed++;
  }
  const awaitingApproval = state.phase === "paused" && state.pausedUntil === undefined;
  return create(RolloutSummarySchema, {
    phase: phaseNumber(state.phase),
    result: resultNumber(tally.end),
    wavesTotal: state.waves.length,
    wavesDone: Math.min(state.wave, state.waves.length),
    targets: state.sandboxes.length,
    sent: Object.keys(state.refs).length,
    applied,
    failed,
    rolledBack: tally.rolledBack.size,
    awaitingApproval,
    ...(state.pausedUntil !== undefined ? { pausedUntil: timestampFromDate(new Date(state.pausedUntil)) } : {}),
    gateFailure: state.gateFailure?.reason ?? "",
  });
}

/** The state as the record stores it: without the request (the record holds it once), no body twice (record-state.ts). */
export function stateJsonOf(state: RolloutState): string {
  return encodeRecordState(state);
}

/** The request template of a state, as a message. */
export function requestOf(state: RolloutState) {
  return fromJson(UpdateConfigRequestSchema, state.request);
}

/** SHA-256 hex of the request template's binary encoding, as the gateway computes it. */
export async function changeHashOf(state: RolloutState): Promise<string> {
  const bytes = toBinary(UpdateConfigRequestSchema, requestOf(state));
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A short description of a state's change for lists. */
export function changeSummaryOf(state: RolloutState): string {
  const r = state.request as Record<string, unknown>;
  if (typeof r.settingKey === "string" && r.settingKey !== "") return r.deleteSetting ? `delete setting ${r.settingKey}` : `setting ${r.settingKey}`;
  if (r.policy !== undefined) return "policy";
  return "policy merge";
}
