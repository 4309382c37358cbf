// Serves the in-memory fake gateway to the SDK's fetch-based (browser) transport through msw:
// every Connect handler of the gateway's router becomes an msw `http.post` handler, so requests
// leave the SDK as real fetch() calls to an https origin and come back as real fetch Responses
// (streamed bodies, headers, gRPC-Web trailers), exactly as in a browser, minus the network.

import { afterAll, afterEach, beforeAll } from "vitest";
import { http, type HttpHandler } from "msw";
import { setupServer } from "msw/node";
import { createFetchHandler } from "@connectrpc/connect/protocol";
import { fakeGatewayRouter, type FakeGateway } from "./fake-gateway.js";

/** A non-loopback https origin: nothing listens there, so only msw can answer. */
export const BASE = "https://gateway.test";

/** What msw saw of one request, before the gateway handled it. */
export interface RecordedRequest {
  /** The procedure path, e.g. `/openshell.v1.OpenShell/UpdateConfig`. */
  readonly path: string;
  readonly url: string;
  readonly method: string;
  readonly contentType: string | null;
  readonly authorization: string | null;
  /** The request's signal: aborted once the client gave up on the call (e.g. closed a stream). */
  readonly signal: AbortSignal;
  /**
   * The request itself, kept with its signal: a Request's signal follows the caller's through a
   * weak reference to the Request's own abort controller, so once the Request is collected its
   * signal no longer aborts (whether it was collected before the client's abort was up to the GC).
   */
  readonly request: Request;
}

/**
 * msw handlers serving `gw` under `base`. Each request is appended to `log`. The fetch handlers
 * say HTTP/1.1, which is what fetch gives a browser page talking Connect or gRPC-Web.
 */
export function gatewayHandlers(gw: FakeGateway, log: RecordedRequest[] = [], base: string = BASE): HttpHandler[] {
  return fakeGatewayRouter(gw).handlers.map((handler) => {
    const fetchHandler = createFetchHandler(handler, { httpVersion: "1.1" });
    return http.post(`${base}${handler.requestPath}`, ({ request }) => {
      log.push({
        path: new URL(request.url).pathname,
        url: request.url,
        method: request.method,
        contentType: request.headers.get("content-type"),
        authorization: request.headers.get("authorization"),
        signal: request.signal,
        request,
      });
      return fetchHandler(request);
    });
  });
}

/** The msw server of one test file; `serve` swaps in the gateway of the current test. */
export interface MswGateway {
  /** Serves `gw` at `BASE` until the end of the current test; returns the log of requests msw intercepted. */
  serve(gw: FakeGateway): RecordedRequest[];
}

/**
 * Starts an msw server for the calling test file (listen before all tests, reset after each,
 * close after all). Any request no handler matches fails the request and is reported by msw.
 */
export function useMswGateway(): MswGateway {
  const server = setupServer();
  beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
  afterEach(() => server.resetHandlers());
  afterAll(() => server.close());
  return {
    serve(gw) {
      const log: RecordedRequest[] = [];
      server.use(...gatewayHandlers(gw, log));
      return log;
    },
  };
}
