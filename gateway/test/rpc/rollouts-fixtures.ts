// Requests for the rollout record tests: a valid CreateRollout (rollout@2 state JSON, summary and
// request template) and UpdateRollout, each with overrides, and a collector for WatchRollouts.

import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  RolloutRecordPhase,
  workspaceScope,
  type CreateRolloutRequestSchema,
  type RolloutSummarySchema,
  type UpdateRolloutRequestSchema,
  type WatchRolloutsResponse,
} from "openshell-config/raw";
import { policy } from "./fixtures.js";

export const DRIVER = "cli alice@laptop pid 4242";

const STATE_PHASE: Record<number, string> = {
  [RolloutRecordPhase.RUNNING]: "running",
  [RolloutRecordPhase.PAUSED]: "paused",
  [RolloutRecordPhase.ROLLING_BACK]: "rolling-back",
  [RolloutRecordPhase.DONE]: "done",
};

type Summary = MessageInitShape<typeof RolloutSummarySchema>;

/** The rollout@2 state JSON a driver writes for `summary` (its waves, wave and pause agree with it, as the SDK's do). */
export function stateJson(id: string, summary: Summary = { phase: RolloutRecordPhase.RUNNING }, extra: Record<string, unknown> = {}): string {
  const phase = STATE_PHASE[summary.phase ?? 0] ?? "running";
  const waves = Array.from({ length: summary.wavesTotal ?? 0 }, () => ({ sandboxes: [] }));
  const pause = phase === "paused" && summary.awaitingApproval !== true ? { pausedUntil: "2026-12-04T00:00:00.000Z" } : {};
  return JSON.stringify({ kind: "openshell-config/rollout@2", id, phase, waves, wave: summary.wavesDone ?? 0, ...pause, ...extra });
}

export interface CreateOptions {
  workspace?: string;
  summary?: Summary;
  labelSelector?: string;
  requireDistinctApprover?: boolean;
  driver?: string;
  leaseTtlMs?: number;
}

export function createRequest(id: string, o: CreateOptions = {}): MessageInitShape<typeof CreateRolloutRequestSchema> {
  const summary = o.summary ?? { phase: RolloutRecordPhase.RUNNING, wavesTotal: 3, targets: 6 };
  return {
    workspaceScope: workspaceScope(o.workspace),
    driver: o.driver ?? DRIVER,
    leaseTtlMs: o.leaseTtlMs ?? 0,
    rollout: {
      id,
      labelSelector: o.labelSelector ?? "env=dev",
      changeSummary: "policy",
      summary,
      requireDistinctApprover: o.requireDistinctApprover ?? false,
      request: { policy: policy({ [id.replace(/[^a-z0-9]/gi, "")]: "api.example.com" }), annotations: { rollout: id } },
      stateJson: stateJson(id, summary),
    },
  };
}

export function updateRequest(
  id: string,
  version: bigint,
  summary: Summary | undefined,
  o: { driver?: string; workspace?: string; leaseTtlMs?: number; releaseLease?: boolean } = {},
): MessageInitShape<typeof UpdateRolloutRequestSchema> {
  return {
    workspaceScope: workspaceScope(o.workspace),
    id,
    expectedResourceVersion: version,
    driver: o.driver ?? DRIVER,
    leaseTtlMs: o.leaseTtlMs ?? 0,
    releaseLease: o.releaseLease ?? false,
    ...(summary ? { summary, stateJson: stateJson(id, summary) } : {}),
  };
}

/** Collects a watch's messages until `abort`. */
export function collectWatch(stream: AsyncIterable<WatchRolloutsResponse>) {
  const messages: WatchRolloutsResponse[] = [];
  const done = (async () => {
    for await (const m of stream) messages.push(m);
  })();
  return { messages, done };
}
