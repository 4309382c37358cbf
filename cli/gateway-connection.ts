// From a resolved gateway (config.ts) to what the SDK needs to reach it: the TLS options of
// `createNodeTransport` (the mTLS bundle read with the SDK's `readMtlsBundle`: all three files for
// auth_mode mtls, whichever are there otherwise) and the bearer token (given, or the registered
// gateway's OIDC session). Warnings go to stderr: an insecure connection, a key or token file
// other users can read. The SDK's own process warning about an insecure connection is left out
// by main.ts: this one says it in the command line's words (the flag, not the option).

import { statSync } from "node:fs";
import { readMtlsBundle, type NodeTransportOptions } from "openshell-config/transport/node";
import { kindOf } from "./bounded-file.js";
import { ConfigError, type ResolvedConfig } from "./config.js";
import { bundleFiles } from "./registry-paths.js";
import { oidcSession, type SessionHooks } from "./oidc-session.js";
import { tooOpen } from "./oidc-token-file.js";

export interface GatewayConnection {
  readonly tls: NodeTransportOptions["tls"];
  readonly token: string | (() => Promise<string>) | undefined;
}

/** Reads the credentials `config` names. Throws TlsError (reason "bundle") or ConfigError, naming the file. */
export async function gatewayConnection(config: ResolvedConfig, hooks: SessionHooks): Promise<GatewayConnection> {
  let tls: NodeTransportOptions["tls"];
  if (config.tls !== undefined) {
    // readMtlsBundle opens without O_NONBLOCK: a FIFO put in place of a file would hang it.
    for (const path of Object.values(bundleFiles(config.tls.bundleDir))) {
      const kind = kindOf(path);
      if (kind !== "file" && kind !== "missing") throw new ConfigError(`cannot read ${path}: ${kind === "directory" ? "it is a directory" : "it is not a regular file"}`);
    }
    const bundle = readMtlsBundle(config.tls.bundleDir, { optional: config.tls.bundle === "optional" });
    if (bundle.key !== undefined) {
      const mode = modeOf(bundle.files.key);
      if (mode !== undefined && tooOpen(mode)) {
        hooks.warn(`${bundle.files.key} can be read by other users (mode ${mode.toString(8).padStart(4, "0")}); run "chmod 600 ${bundle.files.key}"`);
      }
    }
    const insecure = config.insecure !== undefined;
    if (insecure) {
      hooks.warn(
        `${config.insecure === "flag" ? "--gateway-insecure" : "OPENSHELL_GATEWAY_INSECURE"}: the certificate of ${config.url} is not verified; anyone on the way can pose as the gateway`,
      );
    }
    tls = {
      ...(bundle.ca !== undefined ? { ca: bundle.ca } : {}),
      ...(bundle.cert !== undefined ? { cert: bundle.cert } : {}),
      ...(bundle.key !== undefined ? { key: bundle.key } : {}),
      ...(insecure ? { insecureSkipVerify: true } : {}),
      // For the SDK's errors: a key that is not the certificate's names both files.
      files: bundle.files,
    };
  }
  let token: GatewayConnection["token"] = config.token;
  if (config.tokenSource === "oidc") token = await oidcSession(config.gateway!.entry!, config.registry, hooks);
  return { tls, token };
}

function modeOf(path: string): number | undefined {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return undefined;
  }
}
