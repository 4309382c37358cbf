// Issue 8 §2, database faults on PostgreSQL: a private cluster is stopped (immediate mode, a crash)
// and started again under load. While it is down the gateway answers UNAVAILABLE quickly, neither
// hanging nor exiting; once it is back the gateway serves again without being restarted, and
// every acknowledged update is stored, terminal and replayed by key. One restart in `npm test`,
// five under `npm run test:reliability`.

import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { FaultStack, LONG, sleep, until } from "./fault-stack.js";
import { checkLedger, expectLedgerClean } from "./ledger-checks.js";
import { PrivateCluster } from "./private-postgres.js";
import { basePolicy, policyFor, UpdateLoad } from "./update-load.js";

const RESTARTS = LONG ? 5 : 1;
const DOWN_MS = LONG ? 8_000 : 3_000;
const SANDBOXES = LONG ? 100 : 30;
/** The longest a request may take to fail while the database is down. */
const ANSWER_BOUND_MS = 12_000;

let cluster: PrivateCluster | undefined;
let stack: FaultStack | undefined;

beforeAll(async () => {
  cluster = await PrivateCluster.create();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await cluster?.destroy();
});

describe("a private PostgreSQL cluster restarted under load", () => {
  it(
    `while the database is down the gateway answers UNAVAILABLE within ${ANSWER_BOUND_MS / 1000} s and stays up; afterwards it recovers by itself and nothing acknowledged is lost`,
    async () => {
      const c = cluster!;
      stack = await FaultStack.start({ backend: "postgres", dbUrl: c.url(), label: "pg-restart", fleet: { prefix: "pr-", count: SANDBOXES }, gatewayArgs: ["--reconcile", "250ms", "--ack-timeout", "3s"] });
      const s = stack;
      try {
        await s.createSandboxes(basePolicy);
        const fleet = s.startSupervisor(["--apply-delay-ms", "20"]);
        await s.waitReady();
        // A probe client that never retries: each answer shows what the gateway says right now.
        const probe = createConfigClient({ transport: createNodeTransport({ baseUrl: s.url, protocol: "grpc" }), token: s.adminToken, retry: { retries: 0 } }).raw(OpenShell);
        const load = new UpdateLoad({ client: s.client, sandboxes: s.sandboxes, workers: 8, label: "pg-restart" });
        load.start();
        const answers: { code: string; ms: number }[] = [];
        const recoveryMs: number[] = [];
        for (let r = 0; r < RESTARTS; r++) {
          await sleep(1_000 + Math.random() * 1_000);
          await c.stop("immediate");
          const downAt = Date.now();
          while (Date.now() - downAt < DOWN_MS) {
            const t0 = Date.now();
            const signal = AbortSignal.timeout(ANSWER_BOUND_MS * 2);
            const key = `pg-probe-${r}-${t0}`;
            const code = await probe
              .updateConfig({ sandbox: s.sandboxes[0]!, idempotencyKey: key, policy: policyFor(key), workspaceScope: workspaceScope() }, { signal })
              .then(() => "OK", (err: unknown) => Code[ConnectError.from(err).code]);
            answers.push({ code, ms: Date.now() - t0 });
            await sleep(200);
          }
          expect(s.gateway.running, "the gateway exited while the database was down").toBe(true);
          await c.start();
          const upAt = Date.now();
          // Recovered: a read and a commit succeed again, without restarting the gateway.
          await until(async () => {
            try {
              await probe.getSandbox({ name: s.sandboxes[0]!, workspaceScope: workspaceScope() });
              const key = `pg-after-${r}-${Date.now()}`;
              await probe.updateConfig({ sandbox: s.sandboxes[0]!, idempotencyKey: key, policy: policyFor(key), workspaceScope: workspaceScope() });
              return true;
            } catch {
              return false;
            }
          }, "the gateway to serve again after the database came back", 60_000, 100);
          recoveryMs.push(Date.now() - upAt);
        }
        await sleep(2_000);
        await load.stop();
        const report = await checkLedger(s, load, [fleet]);
        const codes = Object.fromEntries([...new Set(answers.map((a) => a.code))].map((k) => [k, answers.filter((a) => a.code === k).length]));
        const figures = {
          restarts: RESTARTS,
          downMs: DOWN_MS,
          sandboxes: SANDBOXES,
          sent: load.sent.size,
          acknowledged: report.acknowledged,
          resumedByKey: report.resumedByKey,
          lost: report.lost.length + report.missingRevisions.length,
          duplicateRevisions: report.duplicateRevisions.length + report.supervisorConflicts.length,
          probeAnswersWhileDown: codes,
          slowestAnswerWhileDownMs: Math.max(...answers.map((a) => a.ms)),
          longestRecoveryMs: Math.max(...recoveryMs),
          states: report.states,
          clientErrors: Object.fromEntries(load.errors),
        };
        process.stdout.write(`reliability figures (postgres restart): ${JSON.stringify(figures)}\n`);
        // Down means down: every probe is refused as UNAVAILABLE (none accepted, none an internal error).
        expect(Object.keys(codes)).toEqual(["Unavailable"]);
        expect(figures.slowestAnswerWhileDownMs).toBeLessThan(ANSWER_BOUND_MS);
        expectLedgerClean(report);
      } catch (err) {
        throw s.keepFor(err);
      }
    },
    LONG ? 600_000 : 180_000,
  );
});
