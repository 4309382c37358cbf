// `--selector` (and `-l`): kubectl label selectors, parsed by the SDK's parser (openshell-config/
// rollout, label-selector.ts) that the rollout's labelSelector and the dashboard use too, so all
// three read the same text alike. Repeated --selector flags AND, as the commas inside one do.
// The gateway's ListSandboxes takes only `k=v,k2=v2`: the equality part narrows the listing there
// (`gatewaySelector`) and `matches` checks every requirement on the listed sandboxes.

import {
  formatLabelSelector,
  gatewayLabelSelector,
  isGatewayExact,
  matchesLabelSelector,
  parseLabelSelector,
  type LabelRequirement,
  type LabelSelector,
} from "openshell-config/rollout";

export type Requirement = LabelRequirement;
export type Selector = LabelSelector;

/** Parses one or more `--selector` values (they AND). Undefined when none is given. Errors name `--selector "text"`. */
export function parseSelector(parts: readonly string[]): Selector | undefined {
  if (parts.length === 0) return undefined;
  return { requirements: parts.flatMap((p) => parseLabelSelector(p, "--selector").requirements) };
}

export { formatLabelSelector as formatSelector, gatewayLabelSelector as gatewaySelector, isGatewayExact, matchesLabelSelector as matches };
