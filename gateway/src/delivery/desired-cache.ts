// The desired configuration of each sandbox, kept in memory between deliveries: the snapshot, its
// exact revision and fingerprint are built once per revision instead of on every delivery and
// every commit. The database stays authoritative:
//
// - A sandbox's part is keyed by what its row says (policy version and hash, settings revision,
//   provider revision, workspace), and every delivery reads that row fresh, so a commit from
//   anywhere (another replica included) is seen: a policy revision never changes once stored,
//   and every change of a sandbox's settings bumps its settings revision in the same transaction.
// - The global part (global policy version and settings) is on no sandbox row. A gateway alone on
//   its database (SQLite, or PostgreSQL without replicas) keeps it until its own global commit
//   invalidates it. With replicas (`shared`), another replica's global commit invalidates it when
//   its notification arrives, or when the channel had a gap (cluster.ts). A notification can
//   still be lost (a replica killed between its COMMIT and its NOTIFY), or notifications be off:
//   so the cluster also calls checkGlobals() every reconcile interval, which compares the kept
//   versions with the database's and, on a difference, forgets them and has every session
//   delivered to; and delivery reads the versions again itself once SHARED_GLOBALS_TRUST_MS has
//   passed since they were last confirmed (finding them moved, it has the next check report
//   that too; a read that finishes after a newer one is dropped, as both versions only grow).
//   Only the contents the versions name are kept. A
//   delivery may so push the global part as it was a moment ago: that is still a committed state,
//   every outcome names the exact revision applied, and the repair path delivers the newer one.
//   Association never re-targets an operation to such a snapshot: it checks the snapshot's
//   `builtOn` versions in its transaction, and on finding them behind has the cache read them
//   again (`behind()`) and the session deliver anew (associate.ts).
//   (Until 2026-12-04 the versions were read on every delivery: about a quarter of a fleet's
//   PostgreSQL statements.)
// - Nothing is filled from a read inside a transaction (it may see writes that never commit):
//   only from reads outside one, which see committed, durable state.

import { fromBinary } from "@bufbuild/protobuf";
import { SandboxConfigSnapshotSchema, SandboxPolicySchema, type ConfigSnapshotRevision, type SandboxConfigSnapshot, type SandboxPolicy } from "openshell-config/raw";
import { scanMessage } from "../rpc/message-scan.js";
import type { PolicyRevisionRecord, SandboxRecord, SettingRecord, Store, StoreTx } from "../store/store.js";
import { revisionFromParts, snapshotFromParts, type Reader } from "../model/snapshot.js";
import { revisionBytes, sandboxFingerprint, sandboxRevision } from "./revisions.js";
import { rememberPolicyBytes } from "../model/pre-encoded.js";

/** The global part of every snapshot, as committed. */
interface Globals {
  readonly policyVersion: number;
  readonly settingsRevision: bigint;
  readonly policy: PolicyRevisionRecord | undefined;
  readonly settings: readonly SettingRecord[];
}

/** A built snapshot of one sandbox, with what delivery derives from it. */
export interface DesiredSnapshot {
  readonly snap: SandboxConfigSnapshot;
  readonly revision: ConfigSnapshotRevision;
  /** `revision` encoded, as an operation's target stores it. */
  readonly revisionBytes: Uint8Array;
  readonly fingerprint: string;
  /** At least the encoded size of `snap` (undefined: not measured). */
  readonly sizeBound: number | undefined;
  /**
   * With replicas, the global versions the snapshot was built on, which may be up to
   * SHARED_GLOBALS_TRUST_MS behind: association checks them before re-targeting an operation.
   */
  readonly builtOn?: GlobalVersions;
}

/** The two global counters; both only grow. */
export interface GlobalVersions {
  readonly policyVersion: number;
  readonly settingsRevision: bigint;
}

/**
 * What is kept of a sandbox. The decoded snapshot is held only weakly: sessions hold it while it
 * is in flight, and thousands of idle sandboxes must not each keep one alive (memory per session).
 */
interface Entry extends Omit<DesiredSnapshot, "snap"> {
  readonly key: string;
  readonly globals: Globals;
  readonly settingsRevision: bigint;
  readonly sandboxSettings: readonly SettingRecord[];
  readonly snap: WeakRef<SandboxConfigSnapshot>;
}

export interface DesiredCache {
  /**
   * The snapshot of `sb` (a row read outside any transaction). `keep: false` uses a kept
   * snapshot but keeps none it builds (bootstraps: thousands of sessions would each hold one).
   */
  snapshot(sb: SandboxRecord, keep?: boolean): Promise<DesiredSnapshot>;
  /** The exact revision of `sb`'s snapshot, read through `reader` (a transaction may be open) where nothing kept applies. */
  revision(reader: Reader & Pick<StoreTx, "globalVersions">, sb: SandboxRecord): Promise<ConfigSnapshotRevision>;
  /**
   * A sandbox policy revision this gateway has just committed (durably), with the policy it
   * encodes: the next snapshot of that revision needs neither read nor decoding.
   */
  committedPolicy(record: PolicyRevisionRecord, policy: SandboxPolicy): void;
  /** A global policy or setting was committed here, or another replica said so. */
  invalidateGlobal(): void;
  /**
   * With replicas: a transaction found the committed global versions (`latest`) newer than a
   * snapshot's `builtOn`. Unless what is kept has caught up, the global part is forgotten (a read
   * already in flight cannot bring it back) and the next checkGlobals() reports the change, so
   * every session delivered with the older part hears of it.
   */
  behind(latest: GlobalVersions): void;
  /**
   * With replicas: reads the global versions and, if they differ from the kept ones, forgets the
   * global part and returns true (the caller then delivers to every session). The repair path
   * for a global commit whose notification was lost, or made with notifications off.
   */
  checkGlobals(): Promise<boolean>;
  /** The sandbox is gone. */
  forget(sandboxId: string): void;
}

/**
 * With replicas, how long globals confirmed by a read stay good enough for a commit's target
 * revision: a stale target costs only a re-targeting write at delivery, never a wrong outcome.
 * The reconcile period, by default.
 */
const SHARED_TARGET_TRUST_MS = 1_000;
/**
 * With replicas, how long delivery trusts the global versions it last read when no notification
 * said they changed: the bound on how late a lost notification is made up for.
 */
export const SHARED_GLOBALS_TRUST_MS = 1_000;

/** Sandboxes whose snapshot is kept (least recently used ones go first). */
const MAX_ENTRIES = 1024;

/** Distinct policies kept decoded by content hash (fleets mostly share a few). */
const MAX_POLICIES = 64;
/** Policies larger than this (encoded) are not kept by hash. */
const MAX_SHARED_POLICY_BYTES = 64 * 1024;

/**
 * What a sandbox's own revision is, when its policy is known by hash: the snapshot needs only
 * the hash (on the sandbox row) and the decoded policy, not the stored row.
 */
function revisionOfRow(sb: SandboxRecord): PolicyRevisionRecord {
  return {
    sandboxId: sb.id,
    version: sb.policyVersion,
    policy: new Uint8Array(0),
    hash: sb.policyHash,
    status: 0,
    loadError: "",
    createdAt: new Date(0),
    loadedAt: undefined,
    provenance: {},
  };
}

type GlobalReader = Pick<StoreTx, "globalVersions" | "policyRevision" | "settings">;


async function readGlobals(reader: GlobalReader, known?: { policyVersion: number; settingsRevision: bigint }): Promise<Globals> {
  const { policyVersion, settingsRevision } = known ?? (await reader.globalVersions());
  const policy = policyVersion > 0 ? await reader.policyRevision("", policyVersion) : undefined;
  return { policyVersion, settingsRevision, policy, settings: await reader.settings("") };
}

/** Whether `a` names an older global part than `b` (both counters only grow). */
function older(a: Pick<Globals, "policyVersion" | "settingsRevision">, b: Pick<Globals, "policyVersion" | "settingsRevision">): boolean {
  return a.policyVersion < b.policyVersion || a.settingsRevision < b.settingsRevision;
}

function keyOf(sb: SandboxRecord, g: Globals): string {
  return `${sb.policyVersion}|${sb.policyHash}|${sb.settingsRevision}|${sb.providerEnvRevision}|${sb.workspace}|${g.policyVersion}|${g.settingsRevision}`;
}

/** `shared`: other gateways write to the same database (replicas). */
export function createDesiredCache(store: Store, options: { readonly shared: boolean; /** The clock (tests). */ readonly now?: () => number }): DesiredCache {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  /** Policy revisions committed here and not yet built into a snapshot, by sandbox id. */
  const seeds = new Map<string, { readonly record: PolicyRevisionRecord; readonly policy: SandboxPolicy }>();
  /**
   * Decoded sandbox policies by content hash (sha256 of the canonical JSON, as every revision
   * row and sandbox row carries it), shared by every snapshot of that content: a burst of
   * bootstraps of a fleet on one policy reads and decodes it once, not once per sandbox. Snapshots
   * never modify their policy. Filled only from committed revisions (reads outside transactions,
   * or this gateway's durable commits).
   */
  const byHash = new Map<string, SandboxPolicy>();
  function shareByHash(hash: string, policy: SandboxPolicy): void {
    if (hash === "" || byHash.has(hash)) return;
    byHash.set(hash, policy);
    if (byHash.size > MAX_POLICIES) byHash.delete(byHash.keys().next().value!);
  }
  let globals: Globals | undefined;
  /** When `globals` was last confirmed by a read (replicas only). */
  let confirmedAt = 0;
  /** Bumped by every invalidation: a read that started before one must not be kept. */
  let generation = 0;
  /**
   * A re-read found the global versions moved without an invalidation (another replica's global
   * commit whose notification was lost): sessions delivered before still hold the old global
   * part, so the next checkGlobals() says so and every session is delivered to.
   */
  let unheard = false;

  /** The committed globals, from outside any transaction. */
  async function currentGlobals(): Promise<Globals> {
    if (globals && (!options.shared || now() - confirmedAt <= SHARED_GLOBALS_TRUST_MS)) return globals;
    const gen = generation;
    // Taken before the read: what it returns was committed by then at the latest.
    const readAt = now();
    const versions = options.shared ? await store.globalVersions() : undefined;
    if (globals && versions && globals.policyVersion === versions.policyVersion && globals.settingsRevision === versions.settingsRevision) {
      if (gen === generation) confirmedAt = Math.max(confirmedAt, readAt);
      return globals;
    }
    const read = await readGlobals(store, versions);
    if (gen !== generation) return read;
    // Both versions only grow: a read that finished after a newer one is not kept (nor pushed).
    if (globals && older(read, globals)) return globals;
    if (globals && options.shared) unheard = true;
    globals = read;
    confirmedAt = Math.max(confirmedAt, readAt);
    return read;
  }

  function remember(sandboxId: string, entry: Entry): void {
    entries.delete(sandboxId);
    entries.set(sandboxId, entry);
    if (entries.size > MAX_ENTRIES) entries.delete(entries.keys().next().value!);
  }

  return {
    async snapshot(sb, keep = true) {
      const gen = generation;
      const g = await currentGlobals();
      const key = keyOf(sb, g);
      const kept = entries.get(sb.id);
      const alive = kept && kept.key === key && kept.globals === g ? kept.snap.deref() : undefined;
      if (kept && alive) {
        if (keep) remember(sb.id, kept);
        return { ...kept, snap: alive };
      }
      const sandboxSettings =
        kept && kept.settingsRevision === sb.settingsRevision && kept.sandboxSettings !== undefined ? kept.sandboxSettings : await store.settings(sb.id);
      const global = g.policyVersion > 0 ? g.policy : undefined;
      let own: PolicyRevisionRecord | undefined;
      let decoded: SandboxPolicy | undefined;
      let seeded = false;
      // The policy of another sandbox with the same hash: its bytes are not at hand.
      let borrowed = false;
      if (global === undefined && sb.policyVersion > 0) {
        const seed = seeds.get(sb.id);
        if (seed && seed.record.version === sb.policyVersion && seed.record.hash === sb.policyHash) {
          own = seed.record;
          decoded = seed.policy;
          seeded = true;
        } else if ((decoded = byHash.get(sb.policyHash)) !== undefined) {
          own = revisionOfRow(sb);
          borrowed = true;
        } else {
          own = await store.policyRevision(sb.id, sb.policyVersion);
          if (own && own.hash === sb.policyHash && own.policy.length <= MAX_SHARED_POLICY_BYTES) {
            decoded = fromBinary(SandboxPolicySchema, own.policy);
            shareByHash(own.hash, decoded);
          }
        }
      }
      const snap = snapshotFromParts(sb, { global, own, sandboxSettings, globalSettings: g.settings }, g.policyVersion, decoded);
      // The snapshot's policy decodes exactly these bytes (encoded once, at commit): sent as they are.
      const policyRevision = global ?? own;
      if (policyRevision !== undefined && !borrowed) rememberPolicyBytes(snap, policyRevision.policy);
      const revision = sandboxRevision(snap);
      const built: DesiredSnapshot = {
        snap,
        revision,
        revisionBytes: revisionBytes(revision),
        fingerprint: sandboxFingerprint(snap),
        // A bound, not the size: encoding the snapshot here only to measure it would cost as
        // much as the encoding that sends it.
        sizeBound: scanMessage(SandboxConfigSnapshotSchema, snap).sizeBound,
        ...(options.shared ? { builtOn: { policyVersion: g.policyVersion, settingsRevision: g.settingsRevision } } : {}),
      };
      // Kept only if nothing was invalidated while it was read.
      if (keep && gen === generation) {
        remember(sb.id, { ...built, key, globals: g, settingsRevision: sb.settingsRevision, sandboxSettings, snap: new WeakRef(snap) });
        if (seeded) seeds.delete(sb.id);
      }
      return built;
    },
    async revision(reader, sb) {
      // Inside a transaction: use what is kept when it applies, read through `reader` otherwise,
      // and keep nothing read here.
      let g = globals;
      if (g && options.shared && now() - confirmedAt > SHARED_TARGET_TRUST_MS) {
        const v = await reader.globalVersions();
        if (v.policyVersion !== g.policyVersion || v.settingsRevision !== g.settingsRevision) g = undefined;
      }
      g ??= await readGlobals(reader);
      const kept = entries.get(sb.id);
      const sandboxSettings = kept && kept.settingsRevision === sb.settingsRevision ? kept.sandboxSettings : await reader.settings(sb.id);
      return revisionFromParts(sb, g.policyVersion > 0 ? g.policy : undefined, sandboxSettings, g.settings, g.policyVersion);
    },
    committedPolicy(record, policy) {
      if (record.sandboxId === "") return;
      seeds.delete(record.sandboxId);
      seeds.set(record.sandboxId, { record, policy });
      if (seeds.size > MAX_ENTRIES) seeds.delete(seeds.keys().next().value!);
      if (record.policy.length <= MAX_SHARED_POLICY_BYTES) shareByHash(record.hash, policy);
    },
    invalidateGlobal() {
      generation++;
      globals = undefined;
    },
    behind(latest) {
      if (globals && !older(globals, latest)) return;
      // As invalidateGlobal(): a read that started before this must not keep (or confirm) the
      // older part, or the session that found it behind would find it behind again, and again.
      // Unlike it, no notification told the other sessions: the next checkGlobals() does.
      // Already forgotten (an invalidation, whose sender delivers to every session): nothing unheard.
      const had = globals !== undefined;
      generation++;
      globals = undefined;
      if (had) unheard = true;
    },
    async checkGlobals() {
      if (!options.shared) return false;
      if (unheard) {
        unheard = false;
        return true;
      }
      const kept = globals;
      if (kept === undefined) return false;
      const gen = generation;
      const readAt = now();
      const v = await store.globalVersions();
      // An invalidation meanwhile has done what this would (and its sender delivers).
      if (gen !== generation || globals !== kept) return false;
      if (v.policyVersion === kept.policyVersion && v.settingsRevision === kept.settingsRevision) {
        confirmedAt = Math.max(confirmedAt, readAt);
        return false;
      }
      generation++;
      globals = undefined;
      return true;
    },
    forget(sandboxId) {
      entries.delete(sandboxId);
      seeds.delete(sandboxId);
    },
  };
}
