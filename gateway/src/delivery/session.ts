// One supervisor session: pushes complete single-component snapshots over the supervisor's
// stream, at most one unacknowledged per component (newer desired state waits and the latest
// wins), suppresses snapshots equal to the last acknowledged one unless a pending operation needs
// a fresh acknowledgement, re-sends after the ack timeout, and records results.

import { randomUUID } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConfigApplyOutcome as Outcome,
  ConfigSnapshotRevisionSchema,
  ConfigUpdateOperationState as State,
  GatewayMessageSchema,
  ProviderEnvironmentSnapshotSchema,
  SandboxPhase,
  type ConfigSnapshotRevision,
  type GatewayMessage,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigSnapshot,
  type SupervisorMessage,
} from "openshell-config/raw";
import type { CommittedView, GatewayDeps } from "../rpc/deps.js";
import type { SandboxRecord } from "../store/store.js";
import { lazyChild } from "../observability/logger.js";
import { buildSnapshot } from "../model/snapshot.js";
import { globalPolicyVersion } from "../rpc/sandbox-config.js";
import { buildProviderSnapshot } from "./provider-snapshot.js";
import { scanMessage } from "../rpc/message-scan.js";
import { createAsyncQueue, type AsyncQueue } from "./queue.js";
import { isAcknowledging, isStillPending, recordSandboxResult, validateResult } from "./results.js";
import { associate } from "./associate.js";
import { createDeliveryRetry } from "./delivery-retry.js";
import type { DesiredSnapshot } from "./desired-cache.js";
import {
  providerFingerprint,
  providerRevision,
  revisionBytes,
  sameRevision,
  sandboxFingerprint,
  sandboxRevision,
} from "./revisions.js";
import { encodeMessage } from "../model/binary-encoder.js";
import { snapshotStandIn, standIn } from "../model/pre-encoded.js";


/** A delivery found its snapshot behind the committed global part a second time in a row: retried after a backoff. */
class BehindAgain extends Error {
  constructor() {
    super("the snapshot's global part is behind what is committed, again");
  }
}

export interface SessionOptions {
  readonly ackTimeoutMs: number;
  readonly heartbeatMs: number;
  readonly bootstrapTimeoutMs: number;
  /** Messages larger than this are never sent (upstream: 3 MiB, under gRPC's usual 4 MiB). */
  readonly maxMessageBytes: number;
  /** A message the stream cannot take for this long (its 16 KiB buffer full: nothing read) ends it. */
  readonly writeTimeoutMs: number;
  /** A stream that sends no SupervisorHello within this long ends DEADLINE_EXCEEDED. */
  readonly helloTimeoutMs: number;
  /**
   * The stream's codec is binary: each message is encoded once, here, and goes to connect as a
   * stand-in of its bytes (model/pre-encoded.ts). Off for JSON streams and for callers that read
   * the messages themselves.
   */
  readonly preEncoded?: boolean | undefined;
}

interface InFlight {
  readonly updateId: string;
  readonly sequence: bigint;
  readonly revision: ConfigSnapshotRevision;
  readonly fingerprint: string;
  readonly snapshot: SandboxConfigSnapshot | ProviderEnvironmentSnapshot;
  readonly timer: ReturnType<typeof setTimeout> | undefined;
}

interface Slot {
  sequence: bigint;
  lastAcked: string | undefined;
  /** A snapshot the supervisor definitively refused: not re-sent unless an operation asks. */
  lastRefused: string | undefined;
  inflight: InFlight | undefined;
  /**
   * Updates re-sent after the ack timeout, by update id. A late result for one of them still
   * answers for its snapshot: without this, a supervisor whose applies always outlast the ack
   * timeout would only ever answer superseded update ids, and nothing would complete.
   */
  expired: Map<string, InFlight>;
}

/** More than a configUpdate message adds to the snapshot it carries (see `send`). */
const ENVELOPE_BOUND = 256;

/** How many re-sent updates per component a late result may still answer for. */
const MAX_EXPIRED = 16;

export interface Session {
  readonly id: string;
  readonly sandboxId: string;
  readonly outbound: AsyncQueue<GatewayMessage>;
  /** The accepted message carrying the bootstrap; send it first. */
  accept(): Promise<GatewayMessage>;
  /**
   * Desired state may have changed: deliver what is new once the slot is free. `view`: what the
   * commit that changed it left (durable), which that delivery may use instead of reading.
   */
  notify(view?: CommittedView): void;
  onMessage(msg: SupervisorMessage): Promise<void>;
  close(error?: unknown): void;
  /** Calls `listener` once when the session closes, whatever the reason (one listener: the stream's). */
  onClose(listener: (error: unknown) => void): void;
  readonly closed: boolean;
}

function emptySlot(): Slot {
  return { sequence: 0n, lastAcked: undefined, lastRefused: undefined, inflight: undefined, expired: new Map() };
}

/** Remembers how the supervisor answered a delivered snapshot. */
function remember(slot: Slot, fingerprint: string, outcome: Outcome, stillPending: boolean): void {
  if (stillPending) return;
  if (isAcknowledging(outcome)) slot.lastAcked = fingerprint;
  else slot.lastRefused = fingerprint;
}

export function createSession(deps: GatewayDeps, sandbox: SandboxRecord, options: SessionOptions): Session {
  const id = randomUUID();
  // Closing the session closes the queue, and so does the queue's overflow: either ends the session.
  const outbound = createAsyncQueue<GatewayMessage>({ onClose: (error) => ended(error) });
  let closeListener: ((error: unknown) => void) | undefined;
  const slots = { sandbox: emptySlot(), provider: emptySlot() };
  let bootstrapped = false;
  /**
   * Something asked for a delivery before the bootstrap was acknowledged (deliveries wait for it):
   * one pass must follow it. Without such a request the bootstrap carried everything committed
   * since the session was registered, so no pass is needed (with thousands of sessions opening
   * at once, that pass was a third of each one's reads).
   */
  let missed = false;
  /** Deliveries in a row whose snapshot association found behind the committed global part. */
  let behindInARow = 0;
  /** Whether the delivery under way found its snapshot behind. */
  let foundBehind = false;
  /** Cleared once the bootstrap is answered, so that thousands of sessions do not each keep one armed. */
  let bootstrapTimer: ReturnType<typeof setTimeout> | undefined;
  let bootstrap: { sandbox: InFlight; provider: InFlight } | undefined;
  let running: Promise<void> = Promise.resolve();
  let again = false;
  /**
   * A delivery found a component's slot busy, so what it saw may not have gone out: the next
   * result must look again. Otherwise a result needs no new delivery (the provider snapshot's
   * answer would cost a full pass per update for nothing).
   */
  let deferred = false;
  /**
   * What the next delivery may use instead of reading the sandbox row and its pending operations:
   * the newest view a commit of this process handed over since the last delivery started, unless
   * something else asked for a delivery meanwhile (`fresh`), whose change the view may predate.
   */
  let view: CommittedView | undefined;
  let fresh = false;
  let lastSeen = Date.now();
  const timers: ReturnType<typeof setTimeout>[] = [];

  const log = lazyChild(deps.logger, { sandboxId: sandbox.id, session: id });

  function close(error?: unknown): void {
    outbound.close(error);
  }

  function ended(error: unknown): void {
    for (const t of timers) clearTimeout(t);
    retry.stop();
    clearTimeout(bootstrapTimer);
    for (const s of [slots.sandbox, slots.provider]) if (s.inflight?.timer) clearTimeout(s.inflight.timer);
    api.closed = true;
    log.info({ reason: error instanceof Error ? error.message : "closed" }, "supervisor session ended");
    closeListener?.(error);
  }

  /**
   * Pushes `msg` unless it is over the size bound. `payloadBound`, at least the encoded size of
   * the snapshot it carries when known, spares encoding the message only to measure it: a
   * configUpdate's own fields (update id, sequence, tags and lengths) add well under
   * ENVELOPE_BOUND bytes.
   */
  function send(msg: GatewayMessage, payloadBound?: number): boolean {
    if (options.preEncoded) {
      const bytes = encodeMessage(GatewayMessageSchema, msg);
      if (bytes.length > options.maxMessageBytes) return false;
      outbound.push(standIn(GatewayMessageSchema, bytes));
      return true;
    }
    if (payloadBound === undefined || payloadBound + ENVELOPE_BOUND > options.maxMessageBytes) {
      const size = encodeMessage(GatewayMessageSchema, msg).length;
      if (size > options.maxMessageBytes) return false;
    }
    outbound.push(msg);
    return true;
  }

  /** The sandbox snapshot (with its revision, fingerprint and size) and the provider snapshot of `sb`. */
  async function snapshots(sb: SandboxRecord, keep: boolean) {
    let desired: DesiredSnapshot;
    if (deps.desired) {
      desired = await deps.desired.snapshot(sb, keep);
    } else {
      const snap = await buildSnapshot(deps.store, sb, await globalPolicyVersion(deps));
      const revision = sandboxRevision(snap);
      desired = { snap, revision, revisionBytes: revisionBytes(revision), fingerprint: sandboxFingerprint(snap), sizeBound: undefined };
    }
    const provider = await buildProviderSnapshot(deps.store, sb, desired.snap);
    return { desired, provider };
  }

  function flight(slot: Slot, revision: ConfigSnapshotRevision, fingerprint: string, snapshot: InFlight["snapshot"], withTimer: boolean): InFlight {
    slot.sequence += 1n;
    const timer = withTimer
      ? setTimeout(() => {
          // Unacknowledged past the bound: forget it and deliver the current state again.
          if (slot.inflight?.updateId === f.updateId) {
            log.warn({ updateId: f.updateId }, "configuration update not acknowledged in time; re-sending");
            slot.inflight = undefined;
            slot.expired.set(f.updateId, f);
            if (slot.expired.size > MAX_EXPIRED) slot.expired.delete(slot.expired.keys().next().value!);
            notify();
          }
        }, options.ackTimeoutMs)
      : undefined;
    const f: InFlight = { updateId: randomUUID(), sequence: slot.sequence, revision, fingerprint, snapshot, timer };
    slot.inflight = f;
    return f;
  }

  /** Fails the operations that target a snapshot too large to send. */
  async function failOversized(revision: ConfigSnapshotRevision, bytes: number) {
    const error = `the configuration snapshot is larger than ${options.maxMessageBytes} bytes and cannot be delivered`;
    log.error({ bytes }, error);
    const pending = await deps.store.pendingOperations(sandbox.id);
    for (const op of pending) {
      if (op.target && sameRevision(fromBinary(ConfigSnapshotRevisionSchema, op.target), revision)) {
        await deps.transitions.resolve(op.id, { state: State.FAILED, outcome: Outcome.UNSPECIFIED, error });
      }
    }
  }

  async function deliver(known: CommittedView | undefined): Promise<void> {
    if (outbound.closed || !bootstrapped) return;
    const sb = known ? known.sandbox : await deps.store.sandboxById(sandbox.id);
    if (!sb) return close(new ConnectError("sandbox no longer exists", Code.NotFound));
    // A stopped sandbox gets nothing: its operations are INACTIVE ("the change applies when it
    // starts"), and a supervisor still connected must not enforce what they say it does not.
    // StartSandbox notifies the session again, which then delivers the latest desired state.
    if (sb.phase === SandboxPhase.STOPPED || sb.phase === SandboxPhase.COMPLETED) return;
    const { desired, provider } = await snapshots(sb, true);
    const { snap, revision } = desired;
    deferred = slots.sandbox.inflight !== undefined || slots.provider.inflight !== undefined;
    if (!slots.sandbox.inflight) {
      const { waiting: needsAck, behind } = await associate(deps, sb.id, desired, known?.pending);
      if (behind) {
        // Another replica's global commit, not yet heard of here: deliver again on what is
        // committed, at once the first time; found behind again (yet another global commit),
        // after the retry's backoff, so that this never turns into a loop of reads.
        deps.desired?.behind(behind);
        foundBehind = true;
        if (behindInARow++ > 0) throw new BehindAgain();
        notify();
        return;
      }
      const fp = desired.fingerprint;
      if ((fp !== slots.sandbox.lastAcked && fp !== slots.sandbox.lastRefused) || needsAck) {
        const f = flight(slots.sandbox, revision, fp, snap, true);
        const msg = create(GatewayMessageSchema, {
          payload: {
            case: "configUpdate",
            value: { updateId: f.updateId, componentSequence: f.sequence, component: { case: "sandboxConfig", value: options.preEncoded ? snapshotStandIn(snap) : snap } },
          },
        });
        if (!send(msg, desired.sizeBound)) {
          clearTimeout(f.timer);
          slots.sandbox.inflight = undefined;
          await failOversized(revision, encodeMessage(GatewayMessageSchema, msg).length);
        }
      }
    }
    if (!slots.provider.inflight) {
      const fp = providerFingerprint(provider);
      if (fp !== slots.provider.lastAcked && fp !== slots.provider.lastRefused) {
        const f = flight(slots.provider, providerRevision(provider), fp, provider, true);
        send(create(GatewayMessageSchema, {
          payload: { case: "configUpdate", value: { updateId: f.updateId, componentSequence: f.sequence, component: { case: "providerEnvironment", value: provider } } },
        }));
      }
    }
  }

  // A delivery that failed (the database unreachable, say) is tried again on its own: a global
  // change has no operation for the reconciler to redeliver.
  const retry = createDeliveryRetry(() => notify(), log);

  // Deliveries run one at a time; a notify during a run schedules exactly one more.
  function notify(committed?: CommittedView): void {
    if (outbound.closed) return;
    if (!bootstrapped) missed = true;
    if (committed === undefined) {
      fresh = true;
      view = undefined;
    } else if (!fresh && (view === undefined || committed.sandbox.resourceVersion > view.sandbox.resourceVersion)) {
      view = committed;
    }
    again = true;
    running = running.then(async () => {
      if (!again) return;
      again = false;
      const known = fresh ? undefined : view;
      view = undefined;
      fresh = false;
      foundBehind = false;
      try {
        await deliver(known);
        // Any delivery that did not find its snapshot behind ends a run of them.
        if (!foundBehind) behindInARow = 0;
        retry.succeeded();
      } catch (err) {
        const behindAgain = err instanceof BehindAgain;
        if (!behindAgain) behindInARow = 0;
        if (!outbound.closed) retry.failed(err, behindAgain);
      }
    });
  }

  async function onResult(slot: Slot, updateId: string, sequence: bigint, result: Parameters<typeof validateResult>[0], admission: Parameters<typeof recordSandboxResult>[5]) {
    const current = slot.inflight;
    let f = current && current.updateId === updateId && current.sequence === sequence ? current : undefined;
    if (!f) {
      // A late result for an update that was re-sent counts when the re-send carries the same snapshot.
      const late = slot.expired.get(updateId);
      if (late && late.sequence === sequence && (!current || current.fingerprint === late.fingerprint)) f = late;
    }
    if (!f) {
      log.warn({ updateId }, "result for an update that is not in flight; ignored");
      return;
    }
    const valid = validateResult(result, f.revision);
    if (slot === slots.sandbox) {
      await recordSandboxResult(deps, sandbox.id, f.snapshot as SandboxConfigSnapshot, f.revision, valid, admission);
    }
    // Only now, with the transitions stored, may this snapshot count as acknowledged.
    if (f.timer) clearTimeout(f.timer);
    if (slot.inflight && slot.inflight.fingerprint === f.fingerprint) {
      if (slot.inflight.timer) clearTimeout(slot.inflight.timer);
      slot.inflight = undefined;
    }
    slot.expired.clear();
    const stillPending = isStillPending(valid);
    remember(slot, f.fingerprint, valid.outcome, stillPending);
    if (deferred || stillPending) notify();
  }

  // `closed` is a plain property that close() sets, not a getter: V8 keeps an object literal with
  // a getter in dictionary mode, slower to read and some hundred bytes larger per session.
  const api: { -readonly [K in keyof Session]: Session[K] } = {
    id,
    sandboxId: sandbox.id,
    outbound,
    closed: false,
    notify,
    close,
    onClose(listener) {
      closeListener = listener;
    },
    async accept() {
      if (outbound.closed) throw new ConnectError("the session closed before its bootstrap was built", Code.Canceled);
      // A bootstrap keeps no snapshot in the cache: with thousands of sessions opening, each would hold one.
      let { desired, provider } = await snapshots(sandbox, false);
      const first = await associate(deps, sandbox.id, desired);
      if (first.behind) {
        // Another replica's global commit, not yet heard of here: once more, on what is committed.
        deps.desired?.behind(first.behind);
        ({ desired, provider } = await snapshots(sandbox, false));
        const second = await associate(deps, sandbox.id, desired);
        if (second.behind) {
          // Yet another global commit meanwhile: this bootstrap goes out, and a delivery follows it.
          deps.desired?.behind(second.behind);
          notify();
        }
      }
      const { snap, revision } = desired;
      // Closed meanwhile: the timers below would keep this session and its bootstrap alive for good.
      if (outbound.closed) throw new ConnectError("the session closed before its bootstrap was sent", Code.Canceled);
      bootstrap = {
        sandbox: flight(slots.sandbox, revision, desired.fingerprint, snap, false),
        provider: flight(slots.provider, providerRevision(provider), providerFingerprint(provider), provider, false),
      };
      const msg = create(GatewayMessageSchema, {
        payload: {
          case: "sessionAccepted",
          value: {
            sessionId: id,
            bootstrap: { sandboxConfig: options.preEncoded ? snapshotStandIn(snap) : snap, providerEnvironment: provider },
            configApplyEnabled: true,
            heartbeatInterval: durationFromMs(options.heartbeatMs),
          },
        },
      });
      // Pre-encoded, the size is exact and costs nothing more. Otherwise the snapshot's bound (when
      // the cache measured one) plus the provider snapshot's spares encoding the whole bootstrap
      // only to measure it: the stream encodes it again to send it.
      const bytes = options.preEncoded ? encodeMessage(GatewayMessageSchema, msg) : undefined;
      const bound = desired.sizeBound === undefined ? undefined : desired.sizeBound + scanMessage(ProviderEnvironmentSnapshotSchema, provider).sizeBound + ENVELOPE_BOUND;
      const size = bytes ? bytes.length : bound !== undefined && bound <= options.maxMessageBytes ? bound : encodeMessage(GatewayMessageSchema, msg).length;
      if (size > options.maxMessageBytes) {
        await failOversized(revision, size);
        throw new ConnectError(`the configuration bootstrap exceeds ${options.maxMessageBytes} bytes`, Code.ResourceExhausted);
      }
      bootstrapTimer = setTimeout(() => {
        if (!bootstrapped) close(new ConnectError("supervisor configuration bootstrap timed out", Code.DeadlineExceeded));
      }, options.bootstrapTimeoutMs);
      timers.push(
        setInterval(() => {
          if (Date.now() - lastSeen > options.heartbeatMs * 3) {
            close(new ConnectError("supervisor stopped sending heartbeats", Code.DeadlineExceeded));
            return;
          }
          outbound.push(create(GatewayMessageSchema, { payload: { case: "heartbeat", value: {} } }));
        }, options.heartbeatMs),
      );
      return bytes ? standIn(GatewayMessageSchema, bytes) : msg;
    },
    async onMessage(msg) {
      lastSeen = Date.now();
      const p = msg.payload;
      switch (p.case) {
        case "heartbeat":
        case "runtimeReady":
          return;
        case "configBootstrapResult": {
          if (bootstrapped || !bootstrap) throw new ConnectError("unexpected ConfigBootstrapResult", Code.InvalidArgument);
          const byComponent = (rev: ConfigSnapshotRevision) => p.value.results.find((r) => r.requestedRevision?.component.case === rev.component.case);
          const sandboxResult = validateResult(byComponent(bootstrap.sandbox.revision), bootstrap.sandbox.revision);
          if (!p.value.admission) throw new ConnectError("sandbox configuration admission result is required", Code.InvalidArgument);
          await recordSandboxResult(deps, sandbox.id, bootstrap.sandbox.snapshot as SandboxConfigSnapshot, bootstrap.sandbox.revision, sandboxResult, p.value.admission);
          const stillPending = isStillPending(sandboxResult);
          remember(slots.sandbox, bootstrap.sandbox.fingerprint, sandboxResult.outcome, stillPending);
          const providerResult = byComponent(bootstrap.provider.revision);
          if (providerResult) {
            validateResult(providerResult, bootstrap.provider.revision);
            remember(slots.provider, bootstrap.provider.fingerprint, providerResult.outcome, false);
          }
          slots.sandbox.inflight = undefined;
          slots.provider.inflight = undefined;
          // The bootstrap's snapshots are not needed again; with thousands of sessions, keeping
          // each one's decoded policy alive would be most of the session's memory.
          bootstrap = undefined;
          bootstrapped = true;
          clearTimeout(bootstrapTimer);
          bootstrapTimer = undefined;
          log.info({ outcome: Outcome[sandboxResult.outcome] }, "supervisor bootstrapped");
          // Deliver again only when something may not have gone out: a change asked for meanwhile,
          // a sandbox result that leaves its operations pending, or a provider snapshot left unanswered.
          if (missed || stillPending || !providerResult) notify();
          return;
        }
        case "configUpdateResult": {
          const r = p.value;
          const slot = r.result?.requestedRevision?.component.case === "providerEnvironment" ? slots.provider : slots.sandbox;
          await onResult(slot, r.updateId, r.componentSequence, r.result, r.admission);
          return;
        }
        default:
          log.debug({ payload: p.case }, "ignored supervisor message");
      }
    },
  };
  return api;
}
