// Issue 8 §3, network faults: hundreds of supervisor sessions reach the gateway through a TCP
// proxy that delays chunks, refuses new connections and cuts live ones, while the SDK keeps
// updating. Once the churn stops, no operation may still be pending after two ack timeouts, and
// the ledger checks hold. 10 s of churn in `npm test`, a minute under `npm run test:reliability`.

import { afterEach, describe, expect, it } from "vitest";
import { FaultStack, LONG, sleep, until } from "./fault-stack.js";
import { checkLedger, expectLedgerClean } from "./ledger-checks.js";
import { NO_FAULTS, TcpFaultProxy } from "./tcp-fault-proxy.js";
import { basePolicy, UpdateLoad } from "./update-load.js";

const CHURN_MS = LONG ? 60_000 : 10_000;
const SANDBOXES = LONG ? 400 : 200;
const ACK_TIMEOUT_MS = 3_000;
// One TCP connection carries a whole fleet's sessions, so each cut ends every session at once.
const FAULTS = { maxDelayMs: 150, dropRate: 0.3, cutEveryMs: 1_000 };

let stack: FaultStack | undefined;
let proxy: TcpFaultProxy | undefined;
afterEach(async () => {
  await proxy?.stop();
  await stack?.stop();
  stack = undefined;
  proxy = undefined;
});

describe("supervisor connections through a proxy that delays, drops and cuts", () => {
  it(
    `after ${CHURN_MS / 1000} s of churn across ${SANDBOXES} sessions, no operation is pending two ack timeouts after the churn stops, and nothing acknowledged is lost or applied twice`,
    async () => {
      stack = await FaultStack.start({
        backend: "sqlite",
        label: "churn",
        fleet: { prefix: "nc-", count: SANDBOXES },
        gatewayArgs: ["--reconcile", "250ms", "--ack-timeout", `${ACK_TIMEOUT_MS}ms`, "--log-level", "warn"],
      });
      const s = stack;
      try {
        proxy = await TcpFaultProxy.start(Number(new URL(s.url).port));
        await s.createSandboxes(basePolicy);
        // The fleet shares one HTTP/2 connection per gateway URL: a cut ends every session at once,
        // and a refused connection delays every reconnect — the harshest churn for the sessions.
        const fleets = [s.startSupervisor(["--log-level", "info"], proxy.url)];
        await s.waitReady();
        const load = new UpdateLoad({ client: s.client, sandboxes: s.sandboxes, workers: 16, label: "churn" });
        load.start();
        proxy.set(FAULTS);
        await sleep(CHURN_MS);
        proxy.set(NO_FAULTS);
        const calmAt = Date.now();
        const stopping = load.stop();
        // The gauge reads the store: pending operations of every sandbox.
        const drained = until(async () => (await s.pendingOperations()) === 0, "no pending operation", 60_000, 100).then(() => Date.now() - calmAt);
        await sleep(2 * ACK_TIMEOUT_MS);
        const pendingAfterBound = await s.pendingOperations();
        const drainMs = await drained;
        await stopping;
        const report = await checkLedger(s, load, fleets);
        const sessionEnds = fleets.flatMap((f) => f.json()).filter((l) => l.msg === "supervisor stream ended; reconnecting").length;
        const figures = {
          churnMs: CHURN_MS,
          sandboxes: SANDBOXES,
          faults: FAULTS,
          proxy: proxy.counters,
          sessionEnds,
          sent: load.sent.size,
          acknowledged: report.acknowledged,
          resumedByKey: report.resumedByKey,
          lost: report.lost.length + report.missingRevisions.length,
          duplicateRevisions: report.duplicateRevisions.length + report.supervisorConflicts.length,
          pendingAfterBound,
          drainMs,
          states: report.states,
          clientErrors: Object.fromEntries(load.errors),
        };
        process.stdout.write(`reliability figures (network churn): ${JSON.stringify(figures)}\n`);
        expect(sessionEnds, "sessions ended by the faults").toBeGreaterThan(SANDBOXES);
        expect(pendingAfterBound, `operations still pending ${2 * ACK_TIMEOUT_MS} ms after the churn stopped (all done after ${drainMs} ms)`).toBe(0);
        expectLedgerClean(report);
      } catch (err) {
        throw s.keepFor(err);
      }
    },
    LONG ? 600_000 : 180_000,
  );
});
