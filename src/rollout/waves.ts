// Progressive rollouts' waves: how the caller writes them (cumulative sizes, percentages, named
// sandboxes, per-wave gates) and the plan they resolve to once the targets are known. The order
// of the sandboxes no wave names is a hash of (rollout id, name): the same rollout picks the same
// canaries in every process, different rollouts pick different ones. Pure functions.

import { InvalidArgumentError } from "../errors.js";

/** A wave size: an absolute count, or a percentage of all targets (rounded up, at least 1). */
export type WaveSize = number | `${number}%`;

/**
 * A health gate, judged when a wave is complete. Fields left out take the rollout's `gate`, then
 * the defaults.
 */
export interface GateInput {
  /** The wave's gate fails once this many of its sandboxes failed, were cancelled or errored (≥ 1). Default 1 with waves. */
  readonly maxFailures?: number;
  /** The same over the whole rollout. Default: the rollout's top-level `maxFailures` (none: unlimited). */
  readonly maxTotalFailures?: number;
  /** Count an applied-but-degraded completion as a failure. Default false. */
  readonly failOnDegraded?: boolean;
  /** After the gate passes (not after the last wave): wait this many ms, or end "paused" until resumed (`"approval"`). */
  readonly pause?: number | "approval";
}

/**
 * One wave. A number or percentage is a cumulative target: `[1, "10%", "100%"]` is one canary,
 * then up to 10% of all targets, then the rest. A list of names is that wave's own sandboxes.
 * The object form combines either with a gate of its own.
 */
export type WaveInput =
  | WaveSize
  | readonly string[]
  | {
      /** Cumulative target size. */
      readonly size?: WaveSize;
      /** This wave's own sandboxes (must be targets). */
      readonly sandboxes?: readonly string[];
      /** Overrides the rollout's gate field by field. */
      readonly gate?: GateInput;
    };

/** A gate with every field resolved, as kept in the state. */
export interface Gate {
  /** Failures of the wave that fail its gate. */
  readonly maxFailures: number | null;
  /** Failures of the whole rollout that fail the gate; null: unlimited. */
  readonly maxTotalFailures: number | null;
  /** Whether a degraded completion counts as a failure. */
  readonly failOnDegraded: boolean;
  /** What happens after the gate passes; null: go on at once. */
  readonly pause: number | "approval" | null;
}

/** A wave as planned: its sandboxes and resolved gate. */
export interface PlannedWave {
  /** The wave's sandboxes, in sending order. */
  readonly sandboxes: readonly string[];
  /** Its gate. */
  readonly gate: Gate;
}

/** FNV-1a (32 bit) over the UTF-8 bytes of `text`. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(text)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** `names` in the rollout's own stable order: by hash of (id, name), ties by name. */
export function shuffleFor(id: string, names: readonly string[]): string[] {
  const keyed = names.map((n) => [fnv1a(`${id}\u0000${n}`), n] as const);
  keyed.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return keyed.map((k) => k[1]);
}

/** Throws InvalidArgumentError unless `n` is an integer ≥ `min` (every count of a rollout's options and state). */
export function checkCount(n: unknown, field: string, min: number): number {
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min) {
    throw new InvalidArgumentError(`${field} must be an integer of at least ${min}`, { field });
  }
  return n;
}

/** Resolves `input` over `base`; throws InvalidArgumentError naming `field`. */
export function resolveGate(input: GateInput | undefined, base: Gate, field: string): Gate {
  if (input === undefined) return base;
  if (typeof input !== "object" || input === null) throw new InvalidArgumentError(`${field} must be an object`, { field });
  const { maxFailures, maxTotalFailures, failOnDegraded, pause } = input;
  if (failOnDegraded !== undefined && typeof failOnDegraded !== "boolean") {
    throw new InvalidArgumentError(`${field}.failOnDegraded must be a boolean`, { field: `${field}.failOnDegraded` });
  }
  if (pause !== undefined && pause !== "approval" && !(typeof pause === "number" && Number.isFinite(pause) && pause >= 0)) {
    throw new InvalidArgumentError(`${field}.pause must be a non-negative number of ms or "approval"`, { field: `${field}.pause` });
  }
  return {
    maxFailures: maxFailures === undefined ? base.maxFailures : checkCount(maxFailures, `${field}.maxFailures`, 1),
    maxTotalFailures: maxTotalFailures === undefined ? base.maxTotalFailures : checkCount(maxTotalFailures, `${field}.maxTotalFailures`, 1),
    failOnDegraded: failOnDegraded ?? base.failOnDegraded,
    pause: pause === undefined ? base.pause : pause,
  };
}

/** A size as asked: a count or a percentage, checked. */
function sizeOf(size: unknown, field: string): { readonly pct: boolean; readonly n: number } {
  if (typeof size === "string") {
    const m = /^(\d+(?:\.\d+)?)%$/.exec(size);
    const pct = m ? Number(m[1]) : NaN;
    if (!(pct > 0 && pct <= 100)) throw new InvalidArgumentError(`${field} must be a percentage above 0% and at most 100%`, { field });
    return { pct: true, n: pct };
  }
  return { pct: false, n: checkCount(size, field, 1) };
}

/** A size as a count of `total` targets: a percentage rounds up, and is at least 1. */
function resolveSize(s: { readonly pct: boolean; readonly n: number }, total: number): number {
  return s.pct ? Math.max(1, Math.ceil((s.n * total) / 100 - 1e-9)) : s.n;
}

/** Checks the shape of `waves` before the targets are known (sizes, gates, names). */
export function checkWaves(waves: unknown, base: Gate): void {
  planWaves(waves, undefined, "", base);
}

/**
 * The waves of a rollout over `targets` (undefined: only check the input). Cumulative sizes are
 * capped at the target count; waves that would add no sandbox are dropped; a final wave with
 * every target left is added. Counts must increase among counts and percentages among
 * percentages; a wave that adds nobody (e.g. 10% of 5 targets after a canary of 1) is dropped.
 * Throws InvalidArgumentError naming `waves[i]`.
 */
export function planWaves(waves: unknown, targets: readonly string[] | undefined, id: string, base: Gate): PlannedWave[] {
  if (!Array.isArray(waves) || waves.length === 0) throw new InvalidArgumentError("waves must be a non-empty array", { field: "waves" });
  const total = targets?.length ?? 0;
  const targetSet = targets ? new Set(targets) : undefined;
  const named = new Set<string>();
  // First pass: what each wave asks for, checked.
  let lastCount = 0;
  let lastPct = 0;
  const asks = waves.map((w: unknown, i) => {
    const field = `waves[${i}]`;
    const obj = typeof w === "object" && w !== null && !Array.isArray(w) ? (w as Exclude<WaveInput, WaveSize | readonly string[]>) : undefined;
    const names = Array.isArray(w) ? (w as unknown[]) : obj?.sandboxes;
    const size = obj ? obj.size : Array.isArray(w) ? undefined : w;
    if (obj && (obj.size === undefined) === (obj.sandboxes === undefined)) {
      throw new InvalidArgumentError(`${field} must give exactly one of size and sandboxes`, { field });
    }
    if (names !== undefined) {
      if (!Array.isArray(names) || names.length === 0) throw new InvalidArgumentError(`${field} must name at least one sandbox`, { field });
      for (const n of names) {
        if (typeof n !== "string") throw new InvalidArgumentError(`${field} must be a list of sandbox names`, { field });
        if (named.has(n)) throw new InvalidArgumentError(`${field} names "${n}" again`, { field });
        if (targetSet && !targetSet.has(n)) throw new InvalidArgumentError(`${field} names "${n}", which is not a target`, { field });
        named.add(n);
      }
    }
    const gate = resolveGate(obj?.gate, base, `${field}.gate`);
    const s = size === undefined ? undefined : sizeOf(size, field);
    // Cumulative: counts must increase among counts, percentages among percentages.
    if (s) {
      const prev = s.pct ? lastPct : lastCount;
      if (s.n <= prev) {
        throw new InvalidArgumentError(`${field}: wave sizes are cumulative and must increase (${s.n}${s.pct ? "%" : ""} after ${prev}${s.pct ? "%" : ""})`, { field });
      }
      if (s.pct) lastPct = s.n;
      else lastCount = s.n;
    }
    return { names: names as string[] | undefined, size: s, gate };
  });
  if (!targets) return [];
  const rest = shuffleFor(id, targets.filter((t) => !named.has(t)));
  const out: PlannedWave[] = [];
  let placed = 0;
  for (const a of asks) {
    let sandboxes: string[];
    if (a.names) sandboxes = a.names;
    else {
      const want = Math.min(resolveSize(a.size!, total), total) - placed;
      sandboxes = want > 0 ? rest.splice(0, want) : [];
    }
    placed += sandboxes.length;
    if (sandboxes.length > 0) out.push({ sandboxes, gate: a.gate });
  }
  if (rest.length > 0) out.push({ sandboxes: rest, gate: base });
  return out;
}
