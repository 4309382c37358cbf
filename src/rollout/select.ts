// Choosing a rollout's sandboxes: an explicit list of names, or every sandbox of a workspace whose
// labels match a kubectl selector (label-selector.ts): ListSandboxes, every page, with the part
// the gateway evaluates (`k=v,k2=v2`), and the rest checked here. Only this module loads the ListSandboxes
// descriptors (and GetSandbox, which a rollback reads), so a client that never rolls out does not carry them.

import type { GenService } from "@bufbuild/protobuf/codegenv2";
import type { ConfigClient } from "../client.js";
import { createServiceSubset } from "../rpc.js";
import { InvalidArgumentError, toSdkError } from "../errors.js";
import {
  GetSandboxRequestSchema,
  ListSandboxesRequestSchema,
  ListSandboxesResponseSchema,
  SandboxResponseSchema,
  type SandboxStatus,
} from "../gen/openshell/v1/sandboxes_pb.js";
import { workspaceScope } from "../workspace.js";
import { formatLabelSelector, gatewayLabelSelector, isGatewayExact, matchesLabelSelector, parseLabelSelector } from "./label-selector.js";

/** The one sandbox-lifecycle method a rollout calls; wire-identical to `OpenShell.ListSandboxes`. */
export type ListSandboxesService = GenService<{
  listSandboxes: { methodKind: "unary"; input: typeof ListSandboxesRequestSchema; output: typeof ListSandboxesResponseSchema };
}>;

/** `OpenShell` reduced to ListSandboxes. */
export const ListSandboxesRpc = createServiceSubset([
  ["ListSandboxes", "unary", ListSandboxesRequestSchema, ListSandboxesResponseSchema],
]) as ListSandboxesService;

// Any name a gateway may use, as long as the idempotency key derived from it stays within the
// gateway's 256 bytes (`rollout/<id ≤ 128>/<name>`); the gateway itself judges the rest.
const NAME = /^[^\s\p{Cc}]+$/u;
const MAX_NAME_BYTES = 120;
const encoder = new TextEncoder();

/** A selector in canonical form (`env in (dev,staging),team=a`); throws InvalidArgumentError naming `labelSelector`. */
export const normalizeSelector = (selector: string): string => formatLabelSelector(parseLabelSelector(selector));

/** The part of a (normalized) selector the gateway evaluates; "" for none, or one that cannot be read. */
function gatewayPart(selector: string | undefined): string {
  try {
    return selector === undefined ? "" : gatewayLabelSelector(parseLabelSelector(selector));
  } catch {
    return "";
  }
}

/** Checks an explicit list of names: non-empty, valid, no duplicates. */
export function checkSandboxNames(names: readonly unknown[]): string[] {
  if (names.length === 0) throw new InvalidArgumentError("sandboxes must not be empty", { field: "sandboxes" });
  const seen = new Set<string>();
  names.forEach((n, i) => {
    if (typeof n !== "string" || !NAME.test(n) || encoder.encode(n).length > MAX_NAME_BYTES) {
      throw new InvalidArgumentError(`sandboxes[${i}] is not a sandbox name`, { field: `sandboxes[${i}]` });
    }
    if (seen.has(n)) throw new InvalidArgumentError(`sandboxes[${i}] repeats "${n}"`, { field: `sandboxes[${i}]` });
    seen.add(n);
  });
  return [...seen];
}

/**
 * The names of every sandbox in `workspace` (`default` when undefined) whose labels match
 * `selector` (normalized), sorted. A selector the gateway evaluates whole is left to it, as before
 * set forms existed; otherwise the gateway narrows by the equality part and the rest is checked here.
 */
export async function selectByLabels(
  client: ConfigClient,
  selector: string,
  workspace: string | undefined,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const rpc = client.raw(ListSandboxesRpc);
  const parsed = parseLabelSelector(selector);
  const exact = isGatewayExact(parsed);
  const names: string[] = [];
  let pageToken = "";
  try {
    do {
      const page = await rpc.listSandboxes(
        { labelSelector: exact ? selector : gatewayLabelSelector(parsed), pageSize: 1000, pageToken, workspaceScope: workspaceScope(workspace) },
        signal ? { signal } : {},
      );
      for (const sb of page.sandboxes) if (sb.metadata?.name && (exact || matchesLabelSelector(parsed, sb.metadata.labels))) names.push(sb.metadata.name);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw toSdkError(err);
  }
  return names.sort();
}

/** `OpenShell` reduced to GetSandbox: a rollback reads a sandbox's `resource_version` with it. */
export const GetSandboxRpc = createServiceSubset([["GetSandbox", "unary", GetSandboxRequestSchema, SandboxResponseSchema]]) as GenService<{
  getSandbox: { methodKind: "unary"; input: typeof GetSandboxRequestSchema; output: typeof SandboxResponseSchema };
}>;

/**
 * The status of every sandbox of `workspace` whose labels match the gateway's part of `selector`
 * (every sandbox when undefined or none), by name: one ListSandboxes call per page of 1000. A
 * superset of the rollout's targets, read by name.
 */
export async function listSandboxStatuses(
  client: ConfigClient,
  selector: string | undefined,
  workspace: string | undefined,
  signal: AbortSignal | undefined,
): Promise<Map<string, SandboxStatus | undefined>> {
  const rpc = client.raw(ListSandboxesRpc);
  const out = new Map<string, SandboxStatus | undefined>();
  let pageToken = "";
  try {
    do {
      const page = await rpc.listSandboxes(
        { labelSelector: gatewayPart(selector), pageSize: 1000, pageToken, workspaceScope: workspaceScope(workspace) },
        signal ? { signal } : {},
      );
      for (const sb of page.sandboxes) if (sb.metadata?.name) out.set(sb.metadata.name, sb.status);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw toSdkError(err);
  }
  return out;
}
