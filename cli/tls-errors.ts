// A TLS failure as the command line says it: the SDK's one line (TlsError, from an SDK call or,
// through tlsErrorOf, from a raw one), with what it tells a program to pass (`tls.ca`, `tls.cert`)
// said as the files of the gateway's mTLS bundle and the flags of this command line. A phrase the
// SDK words differently is left as the SDK says it.

import { tlsErrorOf } from "openshell-config";
import type { ResolvedConfig } from "./config.js";
import { bundleFiles } from "./registry-paths.js";

/** The line for a TLS failure in `err`, or undefined when it is not one (a bundle file that cannot be read is not: that is configuration). */
export function describeTlsFailure(err: unknown, config: ResolvedConfig | undefined): string | undefined {
  const tls = tlsErrorOf(err);
  if (tls === undefined || tls.reason === "bundle") return undefined;
  let message = tls.message;
  message = message.replace("use an http:// baseUrl", "use an http:// endpoint").replace("check the baseUrl", "check the endpoint");
  if (config?.tls === undefined) return message;
  const files = bundleFiles(config.tls.bundleDir);
  return message
    .replace("pass its CA as tls.ca (the mTLS bundle's ca.crt)", `${files.ca} must hold the CA that signed it (--gateway-insecure skips this check)`)
    .replace("pass tls.cert and tls.key (the mTLS bundle's tls.crt and tls.key)", `put the client certificate and its key in ${files.cert} and ${files.key}`)
    .replace("pass a certificate and key issued by a CA the gateway trusts (the mTLS bundle's tls.crt and tls.key)", `${files.cert} must be issued by a CA the gateway trusts`)
    .replace(", or set tls.serverName to one", "");
}
