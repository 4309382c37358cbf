// Reads the gateway's TLS files at startup (--tls-cert, --tls-key, --tls-client-ca) and checks
// them before anything listens, so a bad file is one line naming it rather than a stack trace or
// a server that fails every handshake.

import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createSecureContext } from "node:tls";

/** PEM text for the listener (what server.ts takes). */
export interface TlsMaterial {
  /** Server certificate chain, leaf first. */
  readonly cert: string;
  readonly key: string;
  /** CA certificates that client certificates must chain to; absent = no client certificates asked. */
  readonly clientCa?: string;
}

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile?: string | undefined;
}

/** A TLS file that cannot be used; the message is one line naming the flag and file. */
export class TlsFileError extends Error {
  override readonly name = "TlsFileError";
}

/** Reads and checks the files; throws TlsFileError. */
export async function loadTlsFiles(files: TlsFiles): Promise<TlsMaterial & { readonly leaf: X509Certificate }> {
  const cert = await read("--tls-cert", files.certFile);
  const key = await read("--tls-key", files.keyFile);
  const clientCa = files.clientCaFile === undefined ? undefined : await read("--tls-client-ca", files.clientCaFile);
  const chain = certificates("--tls-cert", files.certFile, cert);
  const leaf = chain[0]!;
  const privateKey = parseKey(files.keyFile, key);
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsFileError(`--tls-key ${files.keyFile}: does not match the certificate in --tls-cert ${files.certFile}`);
  }
  if (clientCa !== undefined) certificates("--tls-client-ca", files.clientCaFile!, clientCa);
  try {
    createSecureContext({ cert, key, ...(clientCa !== undefined ? { ca: clientCa } : {}) });
  } catch (err) {
    throw new TlsFileError(`TLS files ${files.certFile}, ${files.keyFile}: ${(err as Error).message}`);
  }
  return { cert, key, ...(clientCa !== undefined ? { clientCa } : {}), leaf };
}

async function read(flag: string, file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new TlsFileError(`${flag} ${file}: cannot read${code ? ` (${code})` : ""}`);
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function certificates(flag: string, file: string, pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new TlsFileError(`${flag} ${file}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new TlsFileError(`${flag} ${file}: certificate ${i + 1} is not a valid PEM certificate`);
    }
  });
}

function parseKey(file: string, pem: string): KeyObject {
  // PKCS#8 and legacy OpenSSL encryption; node's own error for either depends on its version.
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) {
    throw new TlsFileError(`--tls-key ${file}: the key is encrypted; give an unencrypted PEM key`);
  }
  try {
    return createPrivateKey(pem);
  } catch {
    throw new TlsFileError(`--tls-key ${file}: not a PEM private key`);
  }
}
