// Property: whatever a supervisor sends on its ConnectSupervisor stream (a hello that is wrong
// or right, then heartbeats, bootstrap and update results with made-up revisions, ids and
// outcomes, and payloads the gateway does not use), the stream ends with OK or a clear request
// code, never a server fault; no stored row changes (no made-up result matches a real
// revision; only the delivery's record of which revision a pending operation was sent as may be
// written); and the gateway keeps serving.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ServiceStatus, workspaceScope, type SupervisorMessageSchema } from "openshell-config/raw";
import { policy } from "../rpc/fixtures.js";
import { startReliabilityGateway, type ReliabilityGateway } from "./reliability-gateway.js";
import { createTally, outcomeName, runs, SERVER_FAULT_CODES, settle, timeoutFor } from "./property-support.js";

type Message = MessageInitShape<typeof SupervisorMessageSchema>;

const text = fc.oneof(fc.constantFrom("", "dev", "other", "\u0000", "💥"), fc.string({ maxLength: 20 }));
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const revision = fc.oneof(
  fc.constant(undefined),
  fc.record({ configRevision: u64, policyVersion: fc.nat(), globalPolicyVersion: fc.nat(), settingsRevision: u64 }).map((v) => ({
    component: { case: "sandboxConfig" as const, value: v },
  })),
  u64.map((v) => ({ component: { case: "providerEnvironment" as const, value: v } })),
);
const result = fc.record({
  component: fc.integer({ min: 0, max: 4 }),
  requestedRevision: revision,
  appliedRevision: revision,
  outcome: fc.integer({ min: 0, max: 12 }),
  failure: fc.option(fc.record({ code: text, message: text, retryable: fc.boolean() }), { nil: undefined }),
});
const admission = fc.option(fc.record({ instanceId: text, state: fc.integer({ min: 0, max: 4 }) }), { nil: undefined });

const hello = fc.record({
  sandboxId: fc.oneof({ weight: 4, arbitrary: fc.constant("dev") }, { weight: 1, arbitrary: text }),
  instanceId: text,
  connectionEpoch: u64,
  supportsConfigSnapshots: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.boolean() }),
  supportsConfigApply: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.boolean() }),
}).map((value): Message => ({ payload: { case: "hello", value } }));

const later: fc.Arbitrary<Message> = fc.oneof(
  fc.constant({ payload: { case: "heartbeat" as const, value: {} } }),
  fc.constant({ payload: { case: "runtimeReady" as const, value: {} } }),
  fc.constant({}),
  fc.record({ results: fc.array(result, { maxLength: 3 }), admission }).map((value) => ({ payload: { case: "configBootstrapResult" as const, value } })),
  fc.record({ updateId: text, componentSequence: u64, result: fc.option(result, { nil: undefined }), admission }).map((value) => ({
    payload: { case: "configUpdateResult" as const, value },
  })),
);

const conversation = fc.tuple(fc.oneof({ weight: 5, arbitrary: hello }, { weight: 1, arbitrary: later }), fc.array(later, { maxLength: 6 }));

describe("the supervisor stream under generated messages", () => {
  let gw: ReliabilityGateway;
  const tally = createTally("ConnectSupervisor properties");
  beforeAll(async () => {
    gw = await startReliabilityGateway("sqlite");
    await gw.client("admin").createSandbox({ name: "dev", spec: { policy: policy() }, workspaceScope: workspaceScope() });
    // A pending operation that a made-up result must not complete.
    await gw.client("admin").updateConfig({ sandbox: "dev", policy: policy({ a: "a.example.com" }), workspaceScope: workspaceScope() });
    // A credential's first accepted hello binds it to its sandbox's instance (a row, issue 29
    // finding 2). Made here, so that every conversation below finds it bound already.
    const bound = new AbortController();
    async function* hello() {
      yield { payload: { case: "hello" as const, value: { sandboxId: "dev", supportsConfigSnapshots: true, supportsConfigApply: true } } };
      await new Promise((r) => bound.signal.addEventListener("abort", r));
    }
    await settle(
      (async () => {
        for await (const _ of gw.client("supervisor").connectSupervisor(hello(), { signal: bound.signal })) bound.abort();
      })(),
    );
  });
  afterAll(async () => {
    console.log(tally.report());
    await gw?.close();
  });

  const fast = 150;
  it(
    "every conversation ends with OK or a request code, no stored row changes, and the gateway keeps serving",
    async () => {
      await fc.assert(
        fc.asyncProperty(conversation, fc.constantFrom("supervisor", "ghostSupervisor", "teamBSupervisor") as fc.Arbitrary<"supervisor" | "ghostSupervisor" | "teamBSupervisor">, async ([first, rest], who) => {
          const dump = () => gw.dumpTables({ ignore: ["target"] });
          const before = await dump();
          async function* messages() {
            yield first;
            for (const m of rest) yield m;
          }
          const err = await settle(
            (async () => {
              for await (const _ of gw.client(who).connectSupervisor(messages(), { signal: AbortSignal.timeout(3_000) })) void _;
            })(),
          );
          tally.count(outcomeName(err));
          if (err) {
            expect(SERVER_FAULT_CODES.has(err.code), `${Code[err.code]}: ${err.rawMessage}`).toBe(false);
            expect(err.code).not.toBe(Code.DeadlineExceeded);
            expect(err.rawMessage.length).toBeGreaterThan(0);
          }
          expect(await dump()).toBe(before);
        }),
        { numRuns: runs(fast) },
      );
      expect((await gw.client("anonymous").health({})).status).toBe(ServiceStatus.HEALTHY);
      expect(await gw.store.countPending()).toBe(1);
    },
    timeoutFor(fast, 80),
  );
});
