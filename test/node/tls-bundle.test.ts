// readMtlsBundle: an upstream mTLS client bundle directory (ca.crt, tls.crt, tls.key) read into
// createNodeTransport's tls options, and every way a bundle can be unusable, each a TlsError
// "bundle" whose one line names the file.

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, writeMtlsBundle, type TestPki } from "../../examples/tls/pki.js";
import { TlsError } from "../../src/index.js";
import { readMtlsBundle } from "../../src/transport/node.js";
import { MAX_BUNDLE_FILE_BYTES } from "../../src/transport/tls-bundle.js";

let pki: TestPki;
let root: string;
let n = 0;

beforeAll(async () => {
  pki = await createTestPki();
  root = mkdtempSync(join(tmpdir(), "osc-bundle-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A fresh bundle directory written as the upstream CLI writes it. */
function bundle(): string {
  return writeMtlsBundle(join(root, `b${++n}`, "mtls"), pki.ca, pki.client);
}

function failure(dir: string, options?: { optional?: boolean }): TlsError {
  try {
    readMtlsBundle(dir, options);
  } catch (err) {
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("bundle");
    return err as TlsError;
  }
  throw new Error("expected readMtlsBundle to throw");
}

describe("readMtlsBundle", () => {
  it("reads the CA, the client certificate and its key, and names the three files by absolute path", () => {
    const dir = bundle();
    const read = readMtlsBundle(relative(process.cwd(), dir));
    expect(read.ca?.toString()).toBe(pki.ca.cert);
    expect(read.cert?.toString()).toBe(pki.client.cert);
    expect(read.key?.toString()).toBe(pki.client.key);
    expect(read.files).toEqual({ ca: join(dir, "ca.crt"), cert: join(dir, "tls.crt"), key: join(dir, "tls.key") });
  });

  it.each([
    ["ca.crt", "no mTLS CA certificate at"],
    ["tls.crt", "no mTLS client certificate at"],
    ["tls.key", "no mTLS client key at"],
  ])("a bundle without %s fails with '%s <path>'", (file, message) => {
    const dir = bundle();
    unlinkSync(join(dir, file));
    const err = failure(dir);
    expect(err.message).toBe(`${message} ${join(dir, file)}`);
    expect(err.file).toBe(join(dir, file));
  });

  it("a directory that does not exist fails on its CA certificate first", () => {
    const dir = join(root, "nowhere", "mtls");
    expect(failure(dir).message).toBe(`no mTLS CA certificate at ${join(dir, "ca.crt")}`);
  });

  it.each([
    ["ca.crt", "is not a PEM certificate"],
    ["tls.crt", "is not a PEM certificate"],
    ["tls.key", "is not a PEM private key"],
  ])("%s holding something else than PEM fails with '<path> %s'", (file, message) => {
    const dir = bundle();
    writeFileSync(join(dir, file), file === "tls.key" ? pki.client.cert : "just some text\n");
    const err = failure(dir);
    expect(err.message).toBe(`${join(dir, file)} ${message}`);
    expect(err.file).toBe(join(dir, file));
  });

  it.skipIf(process.getuid?.() === 0)("an unreadable key fails with 'cannot read <path>: EACCES …'", () => {
    const dir = bundle();
    chmodSync(join(dir, "tls.key"), 0o000);
    expect(failure(dir).message).toBe(`cannot read ${join(dir, "tls.key")}: EACCES: permission denied`);
  });

  it("a file that cannot be opened (a symbolic link loop, which root cannot open either) fails with 'cannot read <path>: <why>'", () => {
    const dir = bundle();
    unlinkSync(join(dir, "tls.key"));
    symlinkSync("tls.key", join(dir, "tls.key"));
    const err = failure(dir);
    expect(err.message).toBe(`cannot read ${join(dir, "tls.key")}: ELOOP: too many symbolic links encountered`);
    expect(err.file).toBe(join(dir, "tls.key"));
    expect((err.cause as { code?: string }).code).toBe("ELOOP");
  });

  it("a directory where a file should be fails with 'cannot read <path>: not a regular file'", () => {
    const dir = bundle();
    unlinkSync(join(dir, "tls.crt"));
    mkdirSync(join(dir, "tls.crt"));
    expect(failure(dir).message).toBe(`cannot read ${join(dir, "tls.crt")}: not a regular file`);
  });

  it("a FIFO where a file should be fails at once with 'not a regular file' instead of waiting for a writer", () => {
    const dir = bundle();
    const key = join(dir, "tls.key");
    unlinkSync(key);
    execFileSync("mkfifo", [key]);
    expect(failure(dir).message).toBe(`cannot read ${key}: not a regular file`);
  });

  it("a file of 1 MiB is read whole, one byte more is refused", () => {
    const dir = bundle();
    // A CA bundle padded to the bound is read in full: the certificate at its end is found.
    const pad = "# padding\n".repeat(Math.ceil(MAX_BUNDLE_FILE_BYTES / 10));
    writeFileSync(join(dir, "ca.crt"), pad.slice(0, MAX_BUNDLE_FILE_BYTES - pki.ca.cert.length) + pki.ca.cert);
    expect(readMtlsBundle(dir).ca?.length).toBe(MAX_BUNDLE_FILE_BYTES);
    // One byte more is refused.
    truncateSync(join(dir, "ca.crt"), MAX_BUNDLE_FILE_BYTES + 1);
    expect(failure(dir).message).toBe(`${join(dir, "ca.crt")} is larger than 1 MiB: not a certificate or key`);
  });
});

describe("readMtlsBundle with optional", () => {
  it("an empty or missing directory gives no certificates at all (the system roots, no client certificate)", () => {
    const empty = join(root, `b${++n}`);
    mkdirSync(empty);
    expect(readMtlsBundle(empty, { optional: true })).toEqual({
      files: { ca: join(empty, "ca.crt"), cert: join(empty, "tls.crt"), key: join(empty, "tls.key") },
    });
    expect(readMtlsBundle(join(root, "missing"), { optional: true }).ca).toBeUndefined();
  });

  it("a CA alone is read alone", () => {
    const dir = bundle();
    unlinkSync(join(dir, "tls.crt"));
    unlinkSync(join(dir, "tls.key"));
    const read = readMtlsBundle(dir, { optional: true });
    expect(read.ca?.toString()).toBe(pki.ca.cert);
    expect(read.cert).toBeUndefined();
    expect(read.key).toBeUndefined();
  });

  it("a client certificate without its key, or the reverse, still fails naming the missing file", () => {
    const dir = bundle();
    unlinkSync(join(dir, "tls.key"));
    expect(failure(dir, { optional: true }).message).toBe(`no mTLS client key at ${join(dir, "tls.key")}`);
    writeFileSync(join(dir, "tls.key"), pki.client.key);
    unlinkSync(join(dir, "tls.crt"));
    expect(failure(dir, { optional: true }).message).toBe(`no mTLS client certificate at ${join(dir, "tls.crt")}`);
  });

  it("files that are there are still checked", () => {
    const dir = bundle();
    writeFileSync(join(dir, "ca.crt"), "not pem");
    expect(failure(dir, { optional: true }).message).toBe(`${join(dir, "ca.crt")} is not a PEM certificate`);
    expect(readFileSync(join(dir, "tls.crt"), "utf8")).toBe(pki.client.cert);
  });
});
