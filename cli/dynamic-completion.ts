// Completion of values that live at the gateway or in this user's state: sandbox names (after
// -s/--sandbox), operation ids (operation get|wait) and rollout ids (policy rollout
// resume|approve|undo|status: the gateway's shared records not yet done, then the saved states). The completion scripts run the hidden `openshell-config __complete KIND
// WORDS...` with the words typed so far, from which the connection flags (--url, -g, --config,
// --token, --protocol, --gateway-insecure, --workspace, -A, --sandbox) are read; it prints one
// candidate per line. A shell waits for it, so it is bounded: one attempt, no retry, at most
// COMPLETE_BUDGET_MS in all and a few requests; on any failure (no gateway, a refusal, the budget)
// it prints nothing and exits 0, and never writes to stderr, which would garble the prompt.

import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, allWorkspacesScope, workspaceScope } from "openshell-config/raw";
import { listRollouts } from "openshell-config/rollout";
import { resolveConfig, type ConnectionFlags } from "./config.js";
import { gatewayConnection } from "./gateway-connection.js";
import { rolloutStateDir } from "./rollout-store.js";
import type { Protocol } from "./types.js";

export const COMPLETION_KINDS = ["sandbox", "operation", "rollout"] as const;
export type CompletionKind = (typeof COMPLETION_KINDS)[number];

/** The whole completion, gateway included, ends within this. */
export const COMPLETE_BUDGET_MS = 1_500;
/** What a candidate may be: sandbox names, UUIDs and rollout ids are all of this form. */
const SAFE_WORD = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/;
/** Candidates printed at most (a shell shows no more usefully). */
export const MAX_CANDIDATES = 200;
/** Without --sandbox, operation ids come from the newest operations of this many sandboxes. */
const OPERATION_SANDBOXES = 8;
const OPERATIONS_PER_SANDBOX = 10;

/** The flags of the typed words that say which gateway and where; values as given. */
export interface TypedFlags extends ConnectionFlags {
  readonly protocol?: Protocol;
  readonly workspace?: string;
  readonly allWorkspaces?: boolean;
  readonly sandbox?: string;
}

const VALUED: Readonly<Record<string, keyof TypedFlags>> = {
  "--url": "url",
  "--gateway-endpoint": "gatewayEndpoint",
  "-g": "gateway",
  "--gateway": "gateway",
  "--token": "token",
  "--config": "config",
  "--protocol": "protocol",
  "--workspace": "workspace",
  "-s": "sandbox",
  "--sandbox": "sandbox",
};

/** Reads the connection flags out of a partly typed command line (which need not parse yet). */
export function typedFlags(words: readonly string[]): TypedFlags {
  const flags: Record<string, unknown> = {};
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const eq = w.indexOf("=");
    const name = w.startsWith("--") && eq > 0 ? w.slice(0, eq) : w;
    const key = VALUED[name];
    if (key !== undefined) {
      const value = name === w ? words[++i] : w.slice(eq + 1);
      if (value !== undefined && value !== "") flags[key] = value;
    } else if (w === "--gateway-insecure") flags.gatewayInsecure = true;
    else if (w === "-A" || w === "--all-workspaces") flags.allWorkspaces = true;
  }
  if (flags.protocol !== "grpc" && flags.protocol !== "connect" && flags.protocol !== "grpc-web") delete flags.protocol;
  return flags as TypedFlags;
}

/** Candidates for `kind`, given the typed words; [] whenever they cannot be had within the budget. */
export async function completeValues(kind: CompletionKind, words: readonly string[], env: NodeJS.ProcessEnv, budgetMs = COMPLETE_BUDGET_MS): Promise<string[]> {
  const flags = typedFlags(words);
  const signal = AbortSignal.timeout(budgetMs);
  if (kind === "rollout") return [...new Set([...(await sharedRolloutIds(flags, env, signal)), ...rolloutIds(env)])].filter((v) => SAFE_WORD.test(v)).slice(0, MAX_CANDIDATES);
  try {
    const client = await clientFor(flags, env);
    const values = kind === "sandbox" ? await sandboxNames(client, flags, signal) : await operationIds(client, flags, signal);
    // Only plain words reach the shell: a name from the gateway is data, never shell syntax.
    return values.filter((v) => SAFE_WORD.test(v)).slice(0, MAX_CANDIDATES);
  } catch {
    return [];
  }
}

async function clientFor(flags: TypedFlags, env: NodeJS.ProcessEnv): Promise<ConfigClient> {
  const config = resolveConfig(flags, env);
  // Warnings are dropped: the prompt is no place for them.
  const connection = await gatewayConnection(config, { warn: () => undefined, redact: () => undefined });
  return createConfigClient({
    transport: createNodeTransport({ baseUrl: config.url, protocol: flags.protocol ?? "grpc", ...(connection.tls !== undefined ? { tls: connection.tls } : {}) }),
    token: connection.token,
    allowInsecureToken: false,
    // One attempt: a gateway that is not there now will not be there within the budget either.
    retry: { retries: 0 },
  });
}

async function sandboxNames(client: ConfigClient, flags: TypedFlags, signal: AbortSignal): Promise<string[]> {
  const scope = flags.allWorkspaces ? allWorkspacesScope() : workspaceScope(flags.workspace);
  const page = await client.raw(OpenShell).listSandboxes({ workspaceScope: scope, pageSize: MAX_CANDIDATES }, { signal });
  return [...new Set(page.sandboxes.map((s) => s.metadata?.name ?? "").filter((n) => n !== ""))];
}

/** Newest first: the named sandbox's operations, else those of the first few sandboxes listed. */
async function operationIds(client: ConfigClient, flags: TypedFlags, signal: AbortSignal): Promise<string[]> {
  const raw = client.raw(OpenShell);
  const scope = workspaceScope(flags.workspace);
  const sandboxes = flags.sandbox !== undefined ? [flags.sandbox] : (await sandboxNames(client, { ...flags, allWorkspaces: false }, signal)).slice(0, OPERATION_SANDBOXES);
  const pageSize = flags.sandbox !== undefined ? 50 : OPERATIONS_PER_SANDBOX;
  const lists = await Promise.all(
    sandboxes.map((sandbox) =>
      raw.listConfigUpdateOperations({ sandbox, workspaceScope: scope, pageSize }, { signal }).then(
        (r) => r.operations,
        () => [],
      ),
    ),
  );
  return lists
    .flat()
    .sort((a, b) => Number((b.createdTime?.seconds ?? 0n) - (a.createdTime?.seconds ?? 0n)))
    .map((o) => o.operationId);
}

/** The shared records of rollouts not yet done, newest first; [] without a gateway that keeps them. */
async function sharedRolloutIds(flags: TypedFlags, env: NodeJS.ProcessEnv, signal: AbortSignal): Promise<string[]> {
  try {
    const client = await clientFor(flags, env);
    const page = await listRollouts(client, { ...(flags.workspace !== undefined ? { workspace: flags.workspace } : {}), phases: ["running", "paused", "rolling-back"], pageSize: MAX_CANDIDATES, signal });
    return page.rollouts.map((r) => r.id);
  } catch {
    return [];
  }
}

/** This user's saved rollouts, newest first (no gateway needed). */
function rolloutIds(env: NodeJS.ProcessEnv): string[] {
  const dir = rolloutStateDir(env);
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .slice(0, 10_000)
      .map((f) => ({ id: f.slice(0, -".json".length), at: mtimeOf(join(dir, f)) }))
      .sort((a, b) => b.at - a.at)
      .slice(0, MAX_CANDIDATES)
      .map((r) => r.id);
  } catch {
    return [];
  }
}

function mtimeOf(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}
