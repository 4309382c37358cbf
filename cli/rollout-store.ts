// Where `policy rollout` keeps each rollout's state, so that `--resume ID` continues it in a later
// process: one JSON file per rollout id under $XDG_STATE_HOME/openshell-config/rollouts (default
// ~/.local/state/…). The state holds sandbox names, the change and operation handles; never the
// token or the gateway URL.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { restoreRolloutState, type RolloutState } from "openshell-config/rollout";

/** The directory rollout states are kept in. */
export function rolloutStateDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const base = env.XDG_STATE_HOME ? env.XDG_STATE_HOME : join(home, ".local", "state");
  return join(base, "openshell-config", "rollouts");
}

export interface RolloutStore {
  /** The file of rollout `id`. */
  pathOf(id: string): string;
  /** The saved state of rollout `id`, or undefined when there is none. Throws for a damaged file. */
  load(id: string): RolloutState | undefined;
  /** Saves a state (atomically: a reader never sees half a file). */
  save(state: RolloutState): string;
}

export function createRolloutStore(dir: string): RolloutStore {
  // Rollout ids are checked by the SDK (letters, digits, ".", "_", ":", "-"), so one is a safe file name.
  const pathOf = (id: string) => join(dir, `${id}.json`);
  return {
    pathOf,
    load(id) {
      let text: string;
      try {
        text = readFileSync(pathOf(id), "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw err;
      }
      return restoreRolloutState(text);
    },
    save(state) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const path = pathOf(state.id);
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
      renameSync(tmp, path);
      return path;
    },
  };
}
