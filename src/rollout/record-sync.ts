// A driver's side of the shared rollout record: before anything is sent it takes the record's
// lease (creating the record for a new rollout), then writes every state the engine makes durable
// under compare-and-swap, renews the lease while the run lasts, and gives it up at the end. Only
// the lease holder writes, so two drivers never send the same rollout at once; a driver that dies
// leaves a lease that runs out, and anyone may then resume from the record (the idempotency keys
// make the re-sent commits replays). Against a gateway without the extension, `share: "auto"`
// leaves the rollout to local state, as before.

import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { ConfigClient } from "../client.js";
import { InvalidArgumentError, toSdkError } from "../errors.js";
import { workspaceScope } from "../workspace.js";
import { RolloutRecordSchema, RolloutView } from "../gen/openshell/v1/rollouts_pb.js";
import { RolloutRecordRpc, type RolloutRecordService } from "./record-rpc.js";
import { RolloutLeaseHeldError, SharedRolloutsUnsupportedError } from "./record-errors.js";
import { changeHashOf, changeSummaryOf, fromRecord, requestOf, stateJsonOf, summaryOf, type RunTally, type SharedRollout } from "./shared-rollout.js";
import type { RolloutState } from "./state.js";

/** How a rollout uses the gateway's shared record. */
export interface ShareOptions {
  /** "auto" (default): when the gateway keeps records; "required": fail without; "off": local state only. */
  readonly share?: "auto" | "required" | "off";
  /** This driver's id in the record's lease. Default "sdk" and a random suffix. */
  readonly driver?: string;
  /** How long the lease lasts unless renewed (renewed every third of it). Default 15000 ms. */
  readonly leaseTtlMs?: number;
  /** New rollouts: the creator may not approve a wave (four eyes). Default false. */
  readonly requireDistinctApprover?: boolean;
}

export const DEFAULT_LEASE_TTL_MS = 15_000;

export interface RecordSync {
  /** Whether the record is in use (false until `begin`, and for local-only rollouts). */
  readonly shared: () => boolean;
  /** The record as last written or read. */
  readonly record: () => SharedRollout | undefined;
  /**
   * Takes the lease before anything is sent; creates the record for a new rollout. Resuming (not
   * undoing) a rollout the record shows paused for approval records the approval first: resuming
   * is approving, and the gateway judges who may (four eyes).
   */
  begin(state: RolloutState, fresh: boolean, undo?: boolean): Promise<void>;
  /** Writes a state (and its summary); throws when the lease is lost. */
  write(state: RolloutState): Promise<void>;
  /** Writes the last state and gives the lease up. */
  end(state: RolloutState): Promise<void>;
  /**
   * After a run that could not write its state (or failed otherwise): stops renewing and gives
   * the lease up without a state, so that the rollout can be taken over at once instead of being
   * renewed for as long as this process lives. Does nothing after `end`.
   */
  abandon(state: RolloutState): Promise<void>;
}

/** A client for the rollout-record methods with the client's transport and token. */
export function recordClient(client: ConfigClient): Client<RolloutRecordService> {
  return client.raw(RolloutRecordRpc) as Client<RolloutRecordService>;
}

const randomId = () => Math.random().toString(16).slice(2, 10);

/** Reads a rollout's lease holder to explain a refusal; the original error when it cannot. */
async function leaseRefusal(rpc: Client<RolloutRecordService>, state: RolloutState, driver: string, err: unknown): Promise<Error> {
  try {
    const r = fromRecord((await rpc.getRollout({ workspaceScope: workspaceScope(state.workspace), id: state.id })).rollout!);
    if (r.lease && r.lease.holder !== driver && r.lease.expiresAt.getTime() > Date.now()) return new RolloutLeaseHeldError(state.id, r.lease, { cause: err });
  } catch {
    // The refusal itself is the better answer.
  }
  return toSdkError(err);
}

export function createRecordSync(client: ConfigClient, options: ShareOptions, tally: RunTally, acquired?: SharedRollout): RecordSync {
  const mode = options.share ?? "auto";
  const driver = options.driver ?? `sdk ${randomId()}`;
  const ttl = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const rpc = recordClient(client);
  let current = acquired;
  let on = acquired !== undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let lastWrite = 0;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let lost: Error | undefined;
  let ended = false;

  const scopeOf = (state: RolloutState) => workspaceScope(state.workspace);

  /** One UpdateRollout; on a lost CAS with the lease still ours, again with the new version. */
  const update = async (state: RolloutState, withState: boolean, release: boolean): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await rpc.updateRollout({
          workspaceScope: scopeOf(state),
          id: state.id,
          expectedResourceVersion: current!.resourceVersion,
          driver,
          leaseTtlMs: ttl,
          releaseLease: release,
          ...(withState ? { stateJson: stateJsonOf(state), summary: summaryOf(state, tally) } : {}),
        });
        current = fromRecord(res.rollout!);
        lastWrite = Date.now();
        return;
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (code === Code.Aborted && attempt < 3) {
          // Someone else wrote (an approval): re-read, and go on only while the lease is still ours.
          const fresh = fromRecord((await rpc.getRollout({ workspaceScope: scopeOf(state), id: state.id })).rollout!);
          if (fresh.lease !== undefined && fresh.lease.holder !== driver && fresh.lease.expiresAt.getTime() > Date.now()) {
            throw new RolloutLeaseHeldError(state.id, fresh.lease, { cause: err });
          }
          current = fresh;
          continue;
        }
        if (code === Code.FailedPrecondition) throw await leaseRefusal(rpc, state, driver, err);
        throw toSdkError(err);
      }
    }
  };
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => {});
    return next;
  };

  const startHeartbeat = (state: RolloutState) => {
    const every = Math.max(250, Math.floor(ttl / 3));
    heartbeat = setInterval(() => {
      if (lost || Date.now() - lastWrite < every) return;
      // Only a lost lease stops the driver; a renewal the gateway could not answer is tried again
      // at the next beat (the lease outlasts two missed ones).
      serial(() => update(state, false, false)).catch((err: unknown) => {
        if (err instanceof RolloutLeaseHeldError) lost ??= err;
      });
    }, every);
    (heartbeat as { unref?: () => void }).unref?.();
  };

  return {
    shared: () => on,
    record: () => current,
    async begin(state, fresh, undo) {
      if (mode === "off") return;
      try {
        if (current === undefined && fresh) {
          try {
            const res = await rpc.createRollout({
              workspaceScope: scopeOf(state),
              driver,
              leaseTtlMs: ttl,
              rollout: create(RolloutRecordSchema, {
                id: state.id,
                labelSelector: state.labelSelector ?? "",
                changeSummary: changeSummaryOf(state),
                summary: summaryOf(state, tally),
                requireDistinctApprover: options.requireDistinctApprover === true,
                request: requestOf(state),
                stateJson: stateJsonOf(state),
              }),
            });
            current = fromRecord(res.rollout!);
          } catch (err) {
            if (ConnectError.from(err).code !== Code.AlreadyExists) throw err;
            // The same id again (a re-run): the record is resumed, under its lease.
          }
        }
        if (current === undefined) {
          const res = await rpc.getRollout({ workspaceScope: scopeOf(state), id: state.id, view: RolloutView.SUMMARY });
          current = fromRecord(res.rollout!);
          if (fresh) {
            // A rollout started again by its id: the same change replays every commit; another
            // change under a taken id is refused before anything is sent.
            if (current.changeHash !== (await changeHashOf(state))) {
              throw new InvalidArgumentError(
                `id "${state.id}" is taken at the gateway by another rollout (a different change, created by ${current.createdBy}); pick another id`,
                { field: "id" },
              );
            }
            // A finished record is not run again: this run only replays, and the record keeps its result.
            if (current.phase === "done") {
              current = undefined;
              return;
            }
          }
          const waits = current.awaitingApproval && !current.approvals.some((a) => a.wave === current!.waves.done);
          if (waits && !fresh && undo !== true) {
            // Before the lease: a refused approval must not leave a lease behind.
            const approved = await rpc.approveRollout({ workspaceScope: scopeOf(state), id: state.id, wave: current.waves.done });
            current = fromRecord(approved.rollout!);
          }
          on = true;
          await serial(() => update(state, false, false));
        }
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (code === Code.Unimplemented) {
          if (mode === "required") throw new SharedRolloutsUnsupportedError({ cause: err });
          return;
        }
        // A resumed rollout the gateway never saw (a local state file): created from this state.
        if (code === Code.NotFound && !fresh && current === undefined) {
          await this.begin(state, true, undo);
          return;
        }
        throw err instanceof Error && !(err instanceof ConnectError) ? err : await leaseRefusal(rpc, state, driver, err);
      }
      on = true;
      lastWrite = Date.now();
      startHeartbeat(state);
    },
    async write(state) {
      if (!on) return;
      if (lost) throw lost;
      await serial(() => update(state, true, false));
    },
    async end(state) {
      if (heartbeat !== undefined) clearInterval(heartbeat);
      if (!on || lost || ended) return;
      ended = true;
      await serial(() => update(state, true, true));
    },
    async abandon(state) {
      if (heartbeat !== undefined) clearInterval(heartbeat);
      if (!on || lost || ended) return;
      ended = true;
      // The last state written stays the record's; another driver resumes from it.
      await serial(() => update(state, false, true)).catch(() => {});
    },
  };
}
