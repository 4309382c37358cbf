// Where a rollout given by id is: the gateway's shared record (any machine can see and act on it),
// else this machine's state file (a gateway without records, or a rollout the gateway never saw).
// An id too short to be whole (the 8 characters `policy rollout list` shows) is completed from the
// gateway's newest records when exactly one starts with it. Also the driver id this process
// writes into a record's lease.

import { hostname, userInfo } from "node:os";
import { NotFoundError } from "openshell-config";
import { getRollout, listRollouts, SharedRolloutsUnsupportedError, type RolloutState, type SharedRollout } from "openshell-config/rollout";
import { usageOf, UsageError } from "./args.js";
import { createRolloutStore, rolloutStateDir } from "./rollout-store.js";
import type { CommandContext } from "./commands/context.js";

/** A rollout found by id: its shared record (with its state), or its local state file. */
export type LocatedRollout =
  | { readonly kind: "shared"; readonly record: SharedRollout & { readonly state: RolloutState }; readonly stateFile: string | undefined }
  | { readonly kind: "local"; readonly state: RolloutState; readonly stateFile: string; readonly sharing: boolean };

/** How this process names itself in a record's lease: "cli alice@laptop pid 4242". */
export function driverId(): string {
  let user = process.env.USER ?? process.env.LOGNAME ?? "unknown";
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container): the environment's name.
  }
  return `cli ${user}@${hostname()} pid ${process.pid}`;
}

/** Records a prefix is completed from (the newest; an older rollout needs its whole id). */
const PREFIX_SEARCH = 500;

/** The one record whose id starts with `prefix`, if exactly one of the newest does. */
async function byPrefix(ctx: CommandContext, prefix: string, workspace: string | undefined): Promise<string | undefined> {
  if (prefix.length < 4) return undefined;
  const page = await listRollouts(ctx.client, { ...(workspace !== undefined ? { workspace } : {}), pageSize: PREFIX_SEARCH, signal: ctx.signal });
  const ids = page.rollouts.map((r) => r.id).filter((id) => id.startsWith(prefix));
  return ids.length === 1 ? ids[0] : undefined;
}

/**
 * Rollout `id` as the gateway's record when it has one, else as this machine's state file.
 * UsageError (exit 2) when neither has it, naming the state directory; `command` is for its hint.
 */
export async function locateRollout(ctx: CommandContext, id: string, workspace: string | undefined, command: string): Promise<LocatedRollout> {
  const store = createRolloutStore(rolloutStateDir());
  const local = (sharing: boolean): LocatedRollout | undefined => {
    const state = store.load(id);
    return state === undefined ? undefined : { kind: "local", state, stateFile: store.pathOf(id), sharing };
  };
  const options = { ...(workspace !== undefined ? { workspace } : {}), signal: ctx.signal };
  const shared = async (full: string): Promise<LocatedRollout> => {
    const record = await getRollout(ctx.client, full, options);
    if (record.state === undefined) throw new UsageError(`rollout ${full} has no state at the gateway to work from`, usageOf(command));
    const file = store.load(full) === undefined ? undefined : store.pathOf(full);
    return { kind: "shared", record: record as SharedRollout & { state: RolloutState }, stateFile: file };
  };
  try {
    return await shared(id);
  } catch (err) {
    if (err instanceof SharedRolloutsUnsupportedError) {
      return local(false) ?? fail(`no saved state for rollout ${id} in ${rolloutStateDir()} (the gateway keeps no shared rollouts)`, command);
    }
    if (!(err instanceof NotFoundError)) throw err;
  }
  const mine = local(true);
  if (mine !== undefined) return mine;
  const full = await byPrefix(ctx, id, workspace);
  if (full !== undefined) return shared(full);
  return fail(`no saved state for rollout ${id} in ${rolloutStateDir()}, and the gateway has no rollout ${id}${workspace !== undefined ? ` in workspace ${workspace}` : ""}`, command);
}

function fail(message: string, command: string): never {
  throw new UsageError(message, usageOf(command));
}
