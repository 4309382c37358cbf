// The `policy rollout` commands of the command line (program.ts lists them with the others): a new
// rollout, resume, approve, undo, status, and the shared records' list and history.

import { policyFile, selector, workspace, type CommandSpec, type OptionSpec } from "./program-specs.js";

const ROLLOUT_EXIT_HELP = `Exit status: 0 every sandbox applied (also degraded) or inactive; 1 a sandbox
failed, was superseded or cancelled, an error, a gate failed (halted, or rolled
back with --rollback-on-failure), or no sandbox matched; 2 usage error; 3 paused
for approval (approve with "openshell-config policy rollout approve ID"); 124 a
sandbox's wait timed out (resume likewise); 75 another driver holds the
rollout's lease (retry after the time printed); 130 interrupted (resume
likewise).`;

const UNDO_EXIT_HELP = `Exit status: 0 every changed sandbox was rolled back, or left alone because
someone changed it since or it had no earlier revision (each one listed); 1 a
rollback failed or an error; 2 usage error (e.g. no rollout of that id); 124 a
rollback's wait timed out (run undo again: it replays); 75 another driver holds
the rollout's lease; 130 interrupted.`;

const LIST_EXIT_HELP = `Exit status: 0 listed (also when there is nothing to list); 69 the gateway
keeps no shared rollouts (rollouts started here are in the local state files);
130 Ctrl-C stopped --watch.`;

/** Where rollouts are, for the help texts. */
const SHARED = "A gateway with the rollout record extension keeps every rollout (who created it, who approved each wave, who drives it now) for everyone in the workspace; the local state file under $XDG_STATE_HOME/openshell-config/rollouts (default ~/.local/state/openshell-config/rollouts) is kept too, and is what is used against a gateway without records.";
const byId = (what: string) => `${what} from any machine, given only ROLLOUT_ID (or the first 8 characters "policy rollout list" shows): from the gateway's shared record, else from the local state file.`;
const rolloutWorkspace: OptionSpec = { ...workspace, help: "the rollout's workspace (default: the gateway's default workspace)" };

const concurrency: OptionSpec = { flags: "--concurrency <N>", help: "sandboxes updated at once (default 16)" };
const rolloutTimeout: OptionSpec = { flags: "--timeout <DURATION>", help: "how long to wait for each sandbox (default 60s; 0 = no limit)" };

export const ROLLOUT_COMMANDS: readonly CommandSpec[] = [
  {
    name: "policy rollout",
    summary: "one policy to every sandbox a selector matches, in waves, with rollback",
    description:
      "Replaces the policy of every sandbox the selector matches by the SandboxPolicy in FILE, a few at a time, and waits for each one's outcome: a progress line on a terminal (one line per wave with --waves), then a summary. With --waves the sandboxes go in waves (cumulative sizes: 1,10%,100% is one canary, then up to 10%, then the rest), each judged by its gate (--max-failures per wave, default 1; --fail-on-degraded) before the next starts; --pause waits between waves, --pause-for-approval stops after each passed wave until \"policy rollout approve ROLLOUT_ID\" (--four-eyes: by someone other than its creator); --rollback-on-failure returns every changed sandbox to what it had when a gate fails. The rollout's id is printed first; its state is kept under $XDG_STATE_HOME/openshell-config/rollouts (default ~/.local/state/openshell-config/rollouts) and written before every step, so \"policy rollout resume ROLLOUT_ID\" continues it after a crash or Ctrl-C: sandboxes already sent are awaited again (never given a second revision), the rest are sent. --resume ROLLOUT_ID is the same as resume (and, with --selector and --file, re-runs a rollout that has no saved state). " + SHARED,
    usage:
      "--selector SEL --file FILE [options]\n       openshell-config policy rollout resume|approve|undo|status ROLLOUT_ID\n       openshell-config policy rollout list|history [options]",
    options: [
      { ...selector, help: `the sandboxes: ${selector.help}` },
      { ...policyFile, help: "the policy file (YAML, or JSON for *.json)" },
      { flags: "--waves <SIZES>", help: "cumulative wave sizes, counts or percentages: 1,10%,100% (default: one wave)" },
      { flags: "--max-failures <N>", help: "with --waves: a wave's gate fails after N failed, cancelled or errored sandboxes (default 1); without: stop sending after N (default: never)" },
      { flags: "--fail-on-degraded", help: "count an applied-but-degraded sandbox as failed" },
      { flags: "--pause <DURATION>", help: "wait this long after each passed wave: 30s, 5m, 1h" },
      { flags: "--pause-for-approval", help: "stop after each passed wave (exit 3) until resumed with policy rollout resume ID" },
      { flags: "--rollback-on-failure", help: "when a gate fails, return every changed sandbox to its earlier policy" },
      concurrency,
      rolloutTimeout,
      { flags: "--resume <ROLLOUT_ID>", help: "the same as policy rollout resume ROLLOUT_ID; with --selector and --file and no saved state, re-run that rollout" },
      { ...workspace, help: "the sandboxes' workspace (default: the gateway's default workspace)" },
      { flags: "--four-eyes", help: "with --pause-for-approval: its creator may not approve a wave (needs a gateway with shared rollouts)" },
    ],
    after: ROLLOUT_EXIT_HELP,
  },
  {
    name: "policy rollout resume",
    summary: "continue a rollout from its shared record or saved state",
    description: `${byId("Continues rollout ROLLOUT_ID")} Wherever it stopped: sandboxes already sent are awaited again (never given a second revision), a timed pause waits only what is left of it, a rollout paused for approval starts its next wave (this command is the approval), and a rollback cut short is finished. Only one process drives a rollout at a time: while another one's lease is live, this one is refused (exit 75), naming it and when it can be taken over; a driver that died is taken over once its lease runs out.`,
    usage: "ROLLOUT_ID [options]",
    args: ["<ROLLOUT_ID>"],
    options: [concurrency, { flags: "--max-failures <N>", help: "a new limit on failed sandboxes for the rest of the rollout" }, rolloutTimeout, { ...rolloutWorkspace, help: "the rollout's workspace (checked against a saved state)" }],
    after: ROLLOUT_EXIT_HELP,
  },
  {
    name: "policy rollout approve",
    summary: "approve the wave a paused rollout waits for, and drive the rest",
    description: `${byId("Approves the next wave of rollout ROLLOUT_ID, paused for approval, and continues it")} The gateway records who approved and when ("policy rollout status" shows it); it refuses a user without the right to act, and the rollout's creator when it was started with --four-eyes. A rollout known only from its local state file is continued as "policy rollout resume" does.`,
    usage: "ROLLOUT_ID [options]",
    args: ["<ROLLOUT_ID>"],
    options: [concurrency, { flags: "--max-failures <N>", help: "a new limit on failed sandboxes for the rest of the rollout" }, rolloutTimeout, rolloutWorkspace],
    after: ROLLOUT_EXIT_HELP,
  },
  {
    name: "policy rollout undo",
    summary: "roll back everything a rollout changed",
    description: `${byId("Rolls back rollout ROLLOUT_ID")} Returns every sandbox it changed to the policy revision it had before its wave, as one waited update each. A sandbox someone else changed since is left alone, and so is one with no earlier revision; both are listed. Running it again replays: one rollback revision per sandbox.`,
    usage: "ROLLOUT_ID [options]",
    args: ["<ROLLOUT_ID>"],
    options: [concurrency, rolloutTimeout, rolloutWorkspace],
    after: UNDO_EXIT_HELP,
  },
  {
    name: "policy rollout status",
    summary: "a rollout: its phase, waves, approvals and driver (-w: follow)",
    description: `${byId("Shows rollout ROLLOUT_ID")} Its phase, who created it, each wave and its gate, the approvals (who, when), who drives it while it runs, the gate failure, the rollback and, for every sandbox it sent, its operation's state now, asked of the gateway a few at a time. With --watch, shows it again as it changes until it is done (redrawn in place on a terminal; Ctrl-C stops, exit 130). Exit status 0 whatever the rollout's phase; 2 when there is no rollout of that id; 130 when Ctrl-C stops --watch.`,
    usage: "ROLLOUT_ID [options]",
    args: ["<ROLLOUT_ID>"],
    options: [{ flags: "-w, --watch", help: "show it again as it changes, until the rollout is done (Ctrl-C stops)" }, rolloutWorkspace],
  },
  {
    name: "policy rollout list",
    summary: "the rollouts not yet done, newest first (-w: follow)",
    description:
      "Lists the workspace's rollouts that are not done, newest first, from the gateway's shared records: id, age, phase (running, paused (approval), paused (timed), rolling-back), waves passed of all, sandbox counts and who created it; -o wide adds who drives it now, the selector and the change. With --watch, prints the table, then a line for each change, until Ctrl-C (exit 130). Needs a gateway that keeps shared rollouts; against another one it says where the local state files are.",
    usage: "[options]",
    options: [
      { flags: "-w, --watch", help: "after the table, a line for each change (Ctrl-C stops)" },
      rolloutWorkspace,
      { flags: "-A, --all-workspaces", help: "list every workspace you can see" },
    ],
    after: LIST_EXIT_HELP,
  },
  {
    name: "policy rollout history",
    summary: "the finished rollouts, newest first, with how each ended",
    description: "Lists the workspace's finished rollouts, newest first, from the gateway's shared records: id, age, result (complete, halted, rolled-back, incomplete, aborted), waves, sandbox counts, who created it and how many approvals it had; -o wide adds the selector and the change.",
    usage: "[options]",
    options: [{ flags: "--limit <N>", help: "show the newest N rollouts (default 20; 0 = all)" }, rolloutWorkspace, { flags: "-A, --all-workspaces", help: "list every workspace you can see" }],
    after: LIST_EXIT_HELP,
  },
];
