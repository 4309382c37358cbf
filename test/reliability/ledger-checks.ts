// What every fault test checks once its faults stop, against the ledger of acknowledged commits:
// each acknowledged operation exists and reaches a terminal state; a retry by idempotency key
// returns the original operation and revision; the store holds each version once, each key's
// content at most once, and every acknowledged revision with its hash; and the supervisor never
// ran two different configurations under one policy version.

import { expect } from "vitest";
import type { ConfigClient } from "openshell-config";
import { workspaceScope } from "openshell-config/raw";
import { configRevision } from "../../gateway/src/model/snapshot.js";
import type { FaultStack, Proc } from "./fault-stack.js";
import type { Ack, UpdateLoad } from "./update-load.js";

export interface LedgerReport {
  /** Commits acknowledged (including keys resumed after an error on the client side). */
  readonly acknowledged: number;
  /** Keys that ended in an error on the client side during the faults and were resumed by key. */
  readonly resumedByKey: number;
  /** Acknowledged operations the gateway no longer knows. Must be empty. */
  readonly lost: string[];
  /** Acknowledged operations not terminal within the bound. Must be empty. */
  readonly notTerminal: string[];
  /** Retries by key that answered another operation or revision. Must be empty. */
  readonly retryMismatches: string[];
  /** A version stored twice, a key's content under two versions, or an acknowledged revision missing or changed. Must be empty. */
  readonly duplicateRevisions: string[];
  readonly missingRevisions: string[];
  /** One policy version run by the supervisor with two configurations, or with one the store does not hold. Must be empty. */
  readonly supervisorConflicts: string[];
  /** Terminal states, counted. */
  readonly states: Record<string, number>;
}

/** Runs `fn` over `items`, at most `limit` at a time. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}

/** Every stored policy revision of a sandbox, all pages. */
async function revisionsOf(stack: FaultStack, sandbox: string) {
  const all: { version: number; policyHash: string }[] = [];
  let pageToken = "";
  do {
    const page = await stack.raw.listSandboxPolicies({ sandbox, pageSize: 1000, pageToken, workspaceScope: workspaceScope() });
    all.push(...page.revisions.map((r) => ({ version: r.version, policyHash: r.policyHash })));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return all;
}

async function replay(client: ConfigClient, load: UpdateLoad, key: string): Promise<Ack> {
  const s = load.sent.get(key)!;
  const r = await client.updatePolicy({ sandbox: s.sandbox, policy: s.policy, idempotencyKey: key });
  return { key, sandbox: s.sandbox, operationId: r.operation!.operationId, policyVersion: r.policyVersion, policyHash: r.policyHash };
}

/** Checks the ledger against the gateway, the store and the supervisors' logs (after the faults). */
export async function checkLedger(stack: FaultStack, load: UpdateLoad, supervisors: readonly Proc[], waitMs = 60_000): Promise<LedgerReport> {
  const { client } = stack;
  const retryMismatches: string[] = [];
  const acks = new Map(load.acks);

  // Keys that failed on this side: resuming by key commits them at most once; when the gateway
  // had acknowledged them before, the resume must answer that same operation.
  for (const key of load.unresolved) {
    const resumed = await replay(client, load, key);
    const earlier = acks.get(key);
    if (earlier && (earlier.operationId !== resumed.operationId || earlier.policyVersion !== resumed.policyVersion)) {
      retryMismatches.push(`${key}: acknowledged ${earlier.operationId} v${earlier.policyVersion}, resumed ${resumed.operationId} v${resumed.policyVersion}`);
    }
    acks.set(key, earlier ?? resumed);
  }

  const lost: string[] = [];
  const notTerminal: string[] = [];
  const states: Record<string, number> = {};
  await mapLimit([...acks.values()], 32, async (a) => {
    try {
      const c = await client.awaitCompletion({ operationId: a.operationId }, { timeoutMs: waitMs });
      states[c.state] = (states[c.state] ?? 0) + 1;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "not-found") lost.push(`${a.key}: operation ${a.operationId} not found`);
      else notTerminal.push(`${a.key}: ${code ?? String(err)}`);
    }
    // The retry after the crash: the same key and payload answer the original operation.
    const again = await replay(client, load, a.key);
    if (again.operationId !== a.operationId || again.policyVersion !== a.policyVersion || again.policyHash !== a.policyHash) {
      retryMismatches.push(`${a.key}: acknowledged ${a.operationId} v${a.policyVersion}, retry answered ${again.operationId} v${again.policyVersion}`);
    }
  });

  const duplicateRevisions: string[] = [];
  const missingRevisions: string[] = [];
  const supervisorConflicts: string[] = [];
  const stored = new Map<string, Map<number, string>>();
  await mapLimit(stack.sandboxes, 8, async (sandbox) => {
    const revs = await revisionsOf(stack, sandbox);
    const byVersion = new Map<number, string>();
    const byHash = new Map<string, number>();
    for (const r of revs) {
      if (byVersion.has(r.version)) duplicateRevisions.push(`${sandbox}: version ${r.version} stored twice`);
      if (byHash.has(r.policyHash)) duplicateRevisions.push(`${sandbox}: one content under versions ${byHash.get(r.policyHash)} and ${r.version}`);
      byVersion.set(r.version, r.policyHash);
      byHash.set(r.policyHash, r.version);
    }
    stored.set(sandbox, byVersion);
  });
  for (const a of acks.values()) {
    const hash = stored.get(a.sandbox)?.get(a.policyVersion);
    if (hash === undefined) missingRevisions.push(`${a.key}: ${a.sandbox} v${a.policyVersion} acknowledged but not stored`);
    else if (hash !== a.policyHash) duplicateRevisions.push(`${a.key}: ${a.sandbox} v${a.policyVersion} acknowledged as ${a.policyHash.slice(0, 12)}, stored as ${hash.slice(0, 12)}`);
  }

  // The supervisors' logs: every snapshot they processed names its policy version and its config
  // revision, a fingerprint of the content (the tests change no settings, so policy alone).
  const seen = new Map<string, Set<string>>();
  for (const p of supervisors) {
    for (const l of p.json()) {
      if (l.msg !== "sandbox config processed" || typeof l.sandbox !== "string") continue;
      const id = `${l.sandbox} v${String(l.policyVersion)}`;
      const set = seen.get(id) ?? new Set<string>();
      set.add(String(l.configRevision));
      seen.set(id, set);
      const hash = stored.get(l.sandbox)?.get(Number(l.policyVersion));
      const expected = hash === undefined ? undefined : configRevision(hash, new Map()).toString();
      if (expected !== String(l.configRevision)) supervisorConflicts.push(`${id}: ran config revision ${String(l.configRevision)}, the store's is ${expected ?? "missing"}`);
    }
  }
  for (const [id, set] of seen) if (set.size > 1) supervisorConflicts.push(`${id}: ran ${set.size} different configurations`);

  return {
    acknowledged: acks.size,
    resumedByKey: load.unresolved.size,
    lost,
    notTerminal,
    retryMismatches,
    duplicateRevisions,
    missingRevisions,
    supervisorConflicts: [...new Set(supervisorConflicts)],
    states,
  };
}

/** The promise every fault test ends with: nothing acknowledged lost, unfinished, answered differently or applied twice. */
export function expectLedgerClean(report: LedgerReport): void {
  expect(report.lost).toEqual([]);
  expect(report.missingRevisions).toEqual([]);
  expect(report.notTerminal).toEqual([]);
  expect(report.retryMismatches).toEqual([]);
  expect(report.duplicateRevisions).toEqual([]);
  expect(report.supervisorConflicts).toEqual([]);
}
