// A whole gateway (in-memory SQLite store, every RPC, the production interceptors) behind the
// production server on a loopback port, for the TLS, client-certificate, OIDC and sandbox-listener
// tests; everything it logs (at debug) is kept to check that no secret reaches a log line.

import { Writable } from "node:stream";
import { createGateway, type Gateway } from "../../src/gateway.js";
import type { AuthFile } from "../../src/auth/auth-file.js";
import type { OidcVerifier } from "../../src/auth/oidc-verifier.js";
import type { TlsMaterial } from "../../src/http/tls-files.js";
import { createLogger, type Logger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import type { RunningServer } from "../../src/server.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { serveGateway } from "../serve-gateway.js";

export interface TlsTestGateway {
  readonly server: RunningServer;
  readonly gateway: Gateway;
  readonly store: Store;
  readonly logger: Logger;
  /** Every line logged so far. */
  logs(): string;
  close(): Promise<void>;
}

export interface TlsTestGatewayOptions {
  readonly auth: AuthFile | undefined;
  readonly tls?: TlsMaterial;
  /** Makes the verifier with the gateway's logger. */
  readonly oidc?: (logger: Logger) => OidcVerifier;
  readonly sandboxListener?: boolean;
}

export async function startTlsTestGateway(options: TlsTestGatewayOptions): Promise<TlsTestGateway> {
  let text = "";
  const logger = createLogger({
    level: "debug",
    destination: new Writable({
      write(chunk, _enc, cb) {
        text += String(chunk);
        cb();
      },
    }),
  });
  const store = await openStore("sqlite::memory:");
  const metrics = createMetrics();
  const oidc = options.oidc?.(logger);
  const gateway = createGateway({ store, logger, metrics, auth: options.auth, ...(oidc ? { oidc } : {}) });
  await gateway.start();
  const server = await serveGateway(gateway, logger, metrics, { ...(options.tls ? { tls: options.tls } : {}), ...(options.sandboxListener ? { sandboxListener: { port: 0 } } : {}) });
  return {
    server,
    gateway,
    store,
    logger,
    logs: () => text,
    async close() {
      await server.close({ graceMs: 500 });
      oidc?.close();
      await store.close();
    },
  };
}
