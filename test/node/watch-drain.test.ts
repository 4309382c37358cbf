// How a wait over WatchConfigUpdateOperations ends once it has the outcome. An HTTP/2 server
// closes a whole connection after a burst of cancelled streams, so a watch that has its answer
// reads on until the gateway ends the stream instead of cancelling it, and cancels only a stream
// that the gateway keeps open.

import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { createRouterTransport } from "@connectrpc/connect";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import { ConfigUpdateOperationSchema, ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { createConfigClient } from "../../src/index.js";

const OP = "7d0c3c7e-8a0b-4b47-9a4c-2f9a1f3b6e01";

/** A gateway whose watch sends the applied operation, then ends the stream after `endAfterMs` (or never). */
function gatewayEndingWatch(endAfterMs: number | undefined) {
  const seen = { cancelled: undefined as boolean | undefined };
  const transport = createRouterTransport((router) =>
    router.service(OpenShell, {
      async *watchConfigUpdateOperations(_req, ctx) {
        try {
          const now = timestampNow();
          yield { operation: create(ConfigUpdateOperationSchema, { operationId: OP, sandboxId: "sb", state: State.APPLIED, outcome: Outcome.APPLIED, createdTime: now, updatedTime: now, completedTime: now }), initial: true };
          await new Promise<void>((resolve) => {
            if (endAfterMs !== undefined) setTimeout(resolve, endAfterMs);
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
          });
        } finally {
          seen.cancelled = ctx.signal.aborted;
        }
      },
    }),
  );
  return { client: createConfigClient({ transport }), seen };
}

describe("a watch that has the outcome", () => {
  it("returns at once and lets the gateway end the stream instead of cancelling it", async () => {
    const { client, seen } = gatewayEndingWatch(300);
    const completion = await client.awaitCompletion({ operationId: OP }, { timeoutMs: 2_000 });
    expect(completion.state).toBe("applied");
    // The outcome arrived before the stream ended: the wait did not wait for the end.
    expect(seen.cancelled).toBeUndefined();
    await expect.poll(() => seen.cancelled, { timeout: 1_000 }).toBe(false);
  });

  it("cancels a stream the gateway keeps open, shortly after the outcome", async () => {
    const { client, seen } = gatewayEndingWatch(undefined);
    const completion = await client.awaitCompletion({ operationId: OP }, { timeoutMs: 2_000 });
    expect(completion.state).toBe("applied");
    await expect.poll(() => seen.cancelled, { timeout: 2_000 }).toBe(true);
  });
});
