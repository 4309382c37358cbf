// A client made with only a baseUrl uses the fetch-based Connect transport over globalThis.fetch,
// which is what a browser bundle gets and what msw (like any fetch polyfill) replaces.

import { afterEach, describe, expect, it, vi } from "vitest";
import { InsecureTransportError, createConfigClient, type ProgressEvent } from "../../src/index.js";
import { ConfigApplyOutcome as Outcome, ConfigUpdateOperationState as State } from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway, samplePolicy } from "../support/fake-gateway.js";
import { BASE, useMswGateway } from "../support/msw-gateway.js";

const msw = useMswGateway();

const UPDATE = "/openshell.v1.OpenShell/UpdateConfig";
const WATCH = "/openshell.v1.OpenShell/WatchConfigUpdateOperations";

function urlOf(input: unknown): string {
  if (typeof input === "string") return input;
  if (input instanceof URL) return input.href;
  return (input as Request).url;
}

describe("createConfigClient with only a baseUrl", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("sends a waited update through globalThis.fetch as Connect binary", async () => {
    const gw = createFakeGateway({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }) });
    gw.addSandbox("dev");
    const log = msw.serve(gw);
    const client = createConfigClient({ baseUrl: BASE });
    // Installed after the client was created: the transport must look fetch up at call time.
    const fetchSpy = vi.spyOn(globalThis, "fetch");

    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });

    expect(res.completion.state).toBe("applied");
    expect(fetchSpy).toHaveBeenCalledTimes(1);
    expect(urlOf(fetchSpy.mock.calls[0]![0])).toBe(`${BASE}${UPDATE}`);
    expect(log.map((r) => [r.path, r.contentType])).toEqual([[UPDATE, "application/proto"]]);
  });

  it("watches an operation through globalThis.fetch and reports its progress", async () => {
    const gw = createFakeGateway();
    gw.addSandbox("dev");
    const log = msw.serve(gw);
    const client = createConfigClient({ baseUrl: BASE, token: "s3cret" });
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const events: ProgressEvent[] = [];

    const completion = await client.awaitCompletion(
      { operationId: committed.operation!.operationId },
      {
        timeoutMs: 2_000,
        onProgress: (e) => {
          events.push(e);
          if (e.type === "state" && e.status.state === "pending") {
            setTimeout(() => gw.complete(e.status.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 10);
          }
        },
      },
    );

    expect(completion.state).toBe("applied");
    expect(events.map((e) => (e.type === "state" ? e.status.state : e.type))).toEqual(["pending", "applied"]);
    expect(fetchSpy.mock.calls.map((c) => urlOf(c[0]))).toEqual([`${BASE}${WATCH}`]);
    const watch = log.find((r) => r.path === WATCH)!;
    expect(watch.contentType).toBe("application/connect+proto");
    expect(watch.authorization).toBe("Bearer s3cret");
  });

  it("refuses a token for a plain-http remote gateway before sending anything", () => {
    const gw = createFakeGateway();
    const log = msw.serve(gw);
    const fetchSpy = vi.spyOn(globalThis, "fetch");

    expect(() => createConfigClient({ baseUrl: "http://gateway.test", token: "s3cret" })).toThrow(InsecureTransportError);
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(log).toEqual([]);
  });
});
