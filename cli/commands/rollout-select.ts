// `policy rollout --selector` with a selector the SDK's labelSelector (`k=v,k2=v2`, which the
// gateway evaluates) cannot say: set forms (`env in (dev,staging)`, `!legacy`, `k!=v`) or one key
// twice (`env=dev,env=staging`, which matches nothing). The CLI lists the workspace's sandboxes
// (pages of 1000, the equality part narrowing them at the gateway), keeps those that match, and
// rolls out to those names (the SDK's `sandboxes`); the saved state records the names, so that
// --resume continues with exactly them. Equality-only selectors go to the SDK as they are.
// `--resume ID` without --selector and --file goes where `policy rollout resume ID` does.

import { EXIT } from "../outcome.js";
import { listSandboxes } from "../sandbox-query.js";
import { isGatewayExact } from "../selector.js";
import type { RolloutCommand } from "../types.js";
import type { CommandContext } from "./context.js";
import { policyRollout } from "./rollout.js";
import { policyRolloutResume } from "./rollout-resume.js";

export async function policyRolloutSelected(ctx: CommandContext, cmd: RolloutCommand): Promise<number> {
  // `--resume ID` alone is `policy rollout resume ID`: the shared record first, then the state file.
  if (cmd.resume !== undefined && cmd.file === undefined) {
    const { workspace, concurrency, maxFailures, timeoutMs } = cmd;
    return policyRolloutResume(ctx, { name: "policy rollout resume", id: cmd.resume, workspace, concurrency, maxFailures, timeoutMs });
  }
  const selector = cmd.labelSelector;
  if (selector === undefined || isGatewayExact(selector)) return policyRollout(ctx, cmd);
  const names = (await listSandboxes(ctx.client, { selector, workspace: cmd.workspace }, ctx.signal))
    .map((sb) => sb.metadata?.name ?? "")
    .filter((n) => n !== "")
    .sort();
  if (names.length === 0) {
    // As policyRollout says it: most likely a mistyped selector, which a deploy script must not read as success.
    ctx.out.error(`no sandboxes match ${cmd.selector}: nothing was sent`);
    ctx.out.json({ id: null, selector: cmd.selector ?? null, total: 0 });
    return EXIT.failed;
  }
  return policyRollout(ctx, { ...cmd, sandboxes: names });
}
