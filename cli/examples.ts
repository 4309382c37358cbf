// The Examples section that ends every command's --help, as kubectl's and gh's do: a few command
// lines a user can copy, each after a comment that says what it does. A test parses every one of
// them with the command line's own parser, so an example cannot drift from the options it shows.

import type { CommandName } from "./types.js";

/** One example: what it does, and the command line (after `openshell-config`; a "\n" continues it on the next line, after a backslash). */
export type Example = readonly [comment: string, args: string];

export const EXAMPLES: Readonly<Record<CommandName, readonly Example[]>> = {
  "policy get": [
    ["the desired policy of sandbox web, its version and what the sandbox enforces", "policy get --sandbox web"],
    ["the same, as a YAML document", "policy get -s web -o yaml"],
  ],
  "policy set": [
    ["replace web's policy and wait up to 2 minutes for the sandbox's outcome", "policy set -s web -f policy.yaml --timeout 2m"],
    ["check a file against the gateway's rules without committing it", "policy set -s web -f policy.yaml --dry-run"],
    ["return as soon as it is committed; the printed command waits later", "policy set -s web -f policy.yaml"],
  ],
  "policy diff": [["what policy.yaml would change in web's policy (exit 1 when it differs)", "policy diff -s web -f policy.yaml"]],
  "policy history": [
    ["web's last 20 policy revisions, the enforced one marked", "policy history -s web"],
    ["every revision, with full hashes and times", "policy history -s web --limit 0 -o wide"],
  ],
  "policy merge": [["apply the merge operations in ops.yaml to web's policy and wait", "policy merge -s web -f ops.yaml --wait"]],
  "policy rollout": [
    ["send policy.yaml to every production sandbox, 16 at a time", "policy rollout -l env=prod -f policy.yaml"],
    ["a canary, then 10%, then the rest, each wave judged before the next", "policy rollout -l env=prod -f policy.yaml --waves 1,10%,100%"],
    ["stop after each wave until someone approves it", "policy rollout -l env=prod -f policy.yaml \n--waves 1,100% --pause-for-approval"],
    ["the same, approved by someone other than who started it", "policy rollout -l env=prod -f policy.yaml \n--waves 1,100% --pause-for-approval --four-eyes"],
  ],
  "policy rollout resume": [
    ["continue a rollout from any machine (its driver died, or it was interrupted)", "policy rollout resume 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f"],
    ["the same by the first 8 characters of its id, as rollout list shows it", "policy rollout resume 3f2a8c1e"],
  ],
  "policy rollout approve": [["approve the next wave of a rollout someone else started, and drive it", "policy rollout approve 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f"]],
  "policy rollout undo": [["return every sandbox a rollout changed to its earlier policy", "policy rollout undo 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f"]],
  "policy rollout status": [
    ["follow a rollout until it is done", "policy rollout status 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f -w"],
    ["who created it, who approved each wave and who drives it, as YAML", "policy rollout status 3f2a8c1e -o yaml"],
  ],
  "policy rollout list": [
    ["the rollouts of the workspace that are not done yet", "policy rollout list"],
    ["every workspace's, with who drives each, then a line per change", "policy rollout list -A -o wide -w"],
  ],
  "policy rollout history": [
    ["the last 20 finished rollouts and how each ended", "policy rollout history"],
    ["every finished rollout of every workspace, as JSON", "policy rollout history -A --limit 0 -o json"],
  ],
  "settings get": [["one setting of web, with its type and scope", "settings get -s web --key log_level"]],
  "settings list": [["every effective setting of web, as JSON", "settings list -s web -o json"]],
  "settings set": [
    ["set an integer setting and wait for the sandbox to apply it", "settings set -s web --key max_conns \n--value 64 --type int --wait"],
    ["set a string setting", "settings set -s web --key log_level --value debug"],
  ],
  "settings delete": [["delete a setting of web (its global value applies again, if any)", "settings delete -s web --key log_level"]],
  "operation get": [
    ["the state of an operation now", "operation get 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f"],
    ["each change of state until the outcome", "operation get 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f -w"],
  ],
  "operation wait": [["wait for an operation's outcome (as long as --timeout, default 60s)", "operation wait 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f"]],
  "operation list": [["web's last 5 update operations, full ids", "operation list -s web --limit 5 -o wide"]],
  "sandbox list": [
    ["the sandboxes of the default workspace", "sandbox list"],
    ["staging and production sandboxes of every workspace, watched", "sandbox list -A -l 'env in (staging,prod)' -w"],
    ["the rows without the header, every column, for a script", "sandbox list --no-headers -o wide"],
  ],
  "gateway list": [["the gateways the openshell CLI has registered", "gateway list"]],
  "gateway current": [["which gateway, workspace and credentials a command would use", "gateway current -g lab"]],
  completion: [["complete commands, options and sandbox names in bash", "completion bash"]],
};

/** The Examples section of a command's --help. */
export function examplesHelp(name: CommandName): string {
  const lines = ["Examples:"];
  for (const [comment, args] of EXAMPLES[name]) {
    const [first, ...rest] = args.split("\n").map((part) => part.trim());
    const parts = [`openshell-config ${first}`, ...rest];
    lines.push(`  # ${comment}`, ...parts.map((p, i) => `${i === 0 ? "  " : "      "}${p}${i < parts.length - 1 ? " \\" : ""}`), "");
  }
  return lines.join("\n").trimEnd();
}
