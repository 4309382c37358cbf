// The results document a run writes (bench/results/latest.json): its shape only. Its own module
// so that the report (report.ts) and the ratios to the floor (ratios.ts) both read it without
// importing each other.

import type { FloorLatencyResult, FloorRecoveryResult, FloorScaleResult, FloorUpdatesResult } from "../floor/scenarios.js";
import type { FleetScenarioResult } from "../scenarios/fleet.js";
import type { GroupCommitResult } from "../scenarios/group-commit.js";
import type { ProbeResult } from "../scenarios/probe.js";
import type { ProbeRoundsResult } from "../scenarios/probe-rounds.js";
import type { LatencyResult, PollingResult } from "../scenarios/latency.js";
import type { RecoveryResult } from "../scenarios/recovery.js";
import type { ScaleResult } from "../scenarios/scale.js";
import type { SizeResult } from "../scenarios/size.js";
import type { TlsResult } from "../scenarios/tls.js";
import type { ProfileEntry } from "./profile.js";
import type { Summary } from "./stats.js";

export interface Results {
  meta: {
    date: string;
    mode: "quick" | "full";
    node: string;
    cores: number;
    cpu: string;
    memoryGb: number;
    os: string;
    commit: string;
    durationS?: number;
    notes: string[];
    /**
     * Per step: 1-minute load average when it began, and how busy the whole machine was during
     * it; how long it waited for a quiet machine first and how busy the last half second was.
     */
    load: { step: string; loadAvg1: number; machineBusyPercent: number; settledMs?: number; busyBeforePercent?: number }[];
  };
  latency: LatencyResult[];
  polling?: PollingResult;
  /** The probe shape (32 waited updates in flight on 64 sandboxes, one supervisor and one client process), per backend. */
  probe: ProbeResult[];
  /** How the probe's sides (ours per backend, the floors) were alternated, and each round's figures. */
  probeRounds?: ProbeRoundsResult;
  /** Waited updates at several counts in flight, ours per backend beside the floor (bench/scenarios/group-commit.ts). */
  groupCommit?: GroupCommitResult;
  fleet: FleetScenarioResult[];
  /** The fleet shape on SQLite with valid policy updates only (the floor's messages), run after the floor's fleet. */
  fleetPolicyOnly?: FleetScenarioResult;
  scale: ScaleResult[];
  recovery: RecoveryResult[];
  size?: SizeResult;
  /** The probe shape over HTTPS and in plaintext, back to back (bench/scenarios/tls.ts). */
  tls?: TlsResult;
  /** The floor (bench/floor), run back to back with each real scenario. */
  floor: {
    /** The floor stack's self-check (64 sessions, 600 waited updates, 20 sequential). */
    smoke?: { updates: number; perSec: number };
    latency?: FloorLatencyResult;
    probe?: FloorUpdatesResult;
    /** The probe floor (SQLite runs) with the provider message too: two ConfigUpdates and results per waited update (bench/floor --provider-too). */
    probeProviderToo?: FloorUpdatesResult;
    fleet?: FloorUpdatesResult;
    scale: FloorScaleResult[];
    recovery: FloorRecoveryResult[];
  };
  /** One fsync where the SQLite databases live (the "two fsyncs" of the latency target). */
  fsyncMs?: Summary;
  /** `--cpu-prof`: the gateway's top self time during a separate, profiled fleet run per backend. */
  profiles: { backend: string; operations: number; completedPerSec: number; top: ProfileEntry[] }[];
  failures: string[];
}
