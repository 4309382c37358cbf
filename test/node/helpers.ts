// Shared wiring for the Node-path behaviour tests: a fake gateway served through Connect's
// in-memory router transport, and a client talking to it.

import { createRouterTransport } from "@connectrpc/connect";
import { createConfigClient, type ConfigClient, type ConfigClientOptions } from "../../src/index.js";
import { createFakeGateway, type FakeGateway, type FakeGatewayOptions } from "../support/fake-gateway.js";

export { samplePolicy } from "../support/fake-gateway.js";

/** Client options that keep the tests fast: short retry backoff and polling delays. */
export const FAST: Omit<ConfigClientOptions, "transport" | "baseUrl"> = {
  retry: { retries: 3, minDelayMs: 1, maxDelayMs: 5 },
  pollDelayMs: { min: 2, max: 10 },
  defaultWaitTimeoutMs: 3_000,
};

export interface Harness {
  gw: FakeGateway;
  client: ConfigClient;
  /** Another client on the same gateway, as another process would create it. */
  freshClient(options?: Omit<ConfigClientOptions, "transport" | "baseUrl">): ConfigClient;
}

/** A gateway with a ready sandbox named `dev` and a client wired to it. */
export function setup(
  gatewayOptions: FakeGatewayOptions = {},
  clientOptions: Omit<ConfigClientOptions, "transport" | "baseUrl"> = {},
): Harness {
  const gw = createFakeGateway(gatewayOptions);
  gw.addSandbox("dev");
  const freshClient = (options: Omit<ConfigClientOptions, "transport" | "baseUrl"> = {}) =>
    createConfigClient({ ...FAST, ...options, transport: createRouterTransport(gw.routes) });
  return { gw, client: freshClient(clientOptions), freshClient };
}

/** Resolves once `predicate` holds; fails the test after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 2_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The only operation the gateway holds (fails when there is not exactly one). */
export function onlyOperationId(gw: FakeGateway): string {
  const ops = gw.operations();
  if (ops.length !== 1) throw new Error(`expected one operation, found ${ops.length}`);
  return ops[0]!.operationId;
}

/** Captures a rejection so that its fields can be asserted. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject, but it resolved");
}
