// Issue 8 §1, crash: under steady load (a fleet of sandboxes in one supervisor process, concurrent
// waited updates from the SDK) the gateway is killed with SIGKILL at random moments and started
// again on the same database, on SQLite and on PostgreSQL. Afterwards every acknowledged commit is
// stored, terminal and answered again by a retry with its key; no version or content is stored
// twice; the supervisor never ran two configurations under one version. 3 cycles per backend in
// `npm test`, 20 under `npm run test:reliability`; the figures go to docs/reliability.md.

import { afterEach, describe, expect, it } from "vitest";
import { FaultStack, LONG, sleep, type Backend } from "./fault-stack.js";
import { checkLedger, expectLedgerClean } from "./ledger-checks.js";
import { basePolicy, UpdateLoad } from "./update-load.js";

const CYCLES = LONG ? 20 : 3;
const SANDBOXES = LONG ? 200 : 40;
const WORKERS = LONG ? 24 : 12;

let stack: FaultStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

describe.each<Backend>(["sqlite", "postgres"])("gateway killed with SIGKILL under load (%s)", (backend) => {
  it(
    `every acknowledged update survives ${CYCLES} kill -9 and restart cycles: terminal, stored once, replayed by key, never applied twice under one version`,
    async () => {
      stack = await FaultStack.start({ backend, label: `crash-${backend}`, fleet: { prefix: "cr-", count: SANDBOXES }, gatewayArgs: ["--reconcile", "250ms", "--ack-timeout", "3s"] });
      const s = stack;
      try {
        await s.createSandboxes(basePolicy);
        // A short apply delay keeps updates in flight at the supervisor when the gateway dies.
        const fleet = s.startSupervisor(["--apply-delay-ms", "30", "--log-level", "info"]);
        await s.waitReady();
        const load = new UpdateLoad({ client: s.client, sandboxes: s.sandboxes, workers: WORKERS, label: `crash-${backend}` });
        load.start();
        const restartMs: number[] = [];
        const recoverMs: number[] = [];
        for (let cycle = 0; cycle < CYCLES; cycle++) {
          await sleep(300 + Math.random() * (LONG ? 2_700 : 1_200));
          const inFlight = load.ackedNotTerminal();
          const killedAt = Date.now();
          await s.killGateway("SIGKILL");
          await s.startGateway();
          restartMs.push(Date.now() - killedAt);
          // Recovered: every operation acknowledged before the kill is terminal again.
          await Promise.all(inFlight.map((a) => s.client.awaitCompletion({ operationId: a.operationId }, { timeoutMs: 60_000 })));
          recoverMs.push(Date.now() - killedAt);
        }
        await load.stop();
        const report = await checkLedger(s, load, [fleet]);
        const figures = {
          backend,
          cycles: CYCLES,
          sandboxes: SANDBOXES,
          workers: WORKERS,
          sent: load.sent.size,
          ...report,
          clientErrors: Object.fromEntries(load.errors),
          clientErrorSamples: Object.fromEntries(load.errorSamples),
          longestRestartMs: Math.max(...restartMs),
          longestRecoveryMs: Math.max(...recoverMs),
        };
        process.stdout.write(`reliability figures (crash): ${JSON.stringify({ ...figures, lost: report.lost.length, notTerminal: report.notTerminal.length, retryMismatches: report.retryMismatches.length, duplicateRevisions: report.duplicateRevisions.length, missingRevisions: report.missingRevisions.length, supervisorConflicts: report.supervisorConflicts.length })}\n`);
        expect(report.acknowledged).toBeGreaterThan(CYCLES * 10);
        expectLedgerClean(report);
      } catch (err) {
        throw s.keepFor(err);
      }
    },
    LONG ? 900_000 : 180_000,
  );
});
