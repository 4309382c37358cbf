// The command line's retry interceptor (cli/retry.ts) and commits: it resends an UpdateConfig only
// when the request never left, and hands any other failure back to the SDK unchanged (only the SDK
// knows whether the gateway replays a resent commit by its key). Reads keep the old rule. A TLS
// failure is never taken for an unreachable gateway. And the one line a lost commit answer prints.

import { describe, expect, it } from "vitest";
import { Code, ConnectError, createContextValues, type UnaryRequest } from "@connectrpc/connect";
import { CommitOutcomeUnknownError } from "openshell-config";
import { GatewayUnreachableError, isUnreachable, lineReport, neverSent, retryInterceptor } from "../../cli/retry.js";
import { describeFailure } from "../../cli/errors.js";

const systemError = (message: string, code: string, syscall: string) => Object.assign(new Error(message), { code, syscall });
const refused = () => new ConnectError("connect ECONNREFUSED 127.0.0.1:9", Code.Unavailable, undefined, undefined, systemError("connect ECONNREFUSED 127.0.0.1:9", "ECONNREFUSED", "connect"));
const reset = () => new ConnectError("read ECONNRESET", Code.Aborted, undefined, undefined, systemError("read ECONNRESET", "ECONNRESET", "read"));
const unavailable = () => new ConnectError("gateway is shutting down", Code.Unavailable);

function run(method: string, results: (() => unknown)[]) {
  const notes: string[] = [];
  let calls = 0;
  const next = async () => {
    const r = results[Math.min(calls++, results.length - 1)]!();
    if (r instanceof Error) throw r;
    return r;
  };
  const call = retryInterceptor(lineReport((l) => notes.push(l)), { delaysMs: [0, 0, 0] })(next as never);
  const req = { stream: false, signal: new AbortController().signal, method: { name: method }, contextValues: createContextValues() } as unknown as UnaryRequest;
  return { promise: call(req), notes, calls: () => calls };
}

describe("the command line's retries of a commit", () => {
  it("a commit refused before it left is sent again, as any request", async () => {
    const r = run("UpdateConfig", [refused, refused, () => "ok"]);
    await expect(r.promise).resolves.toBe("ok");
    expect(r.calls()).toBe(3);
    expect(r.notes).toHaveLength(1);
  });

  it("a commit whose connection was reset is not sent again: the SDK gets the failure as it was", async () => {
    const failure = reset();
    const r = run("UpdateConfig", [() => failure, () => "ok"]);
    await expect(r.promise).rejects.toBe(failure);
    expect(r.calls()).toBe(1);
    expect(r.notes).toEqual([]);
  });

  it("a commit answered UNAVAILABLE is not sent again either", async () => {
    const r = run("UpdateConfig", [unavailable, () => "ok"]);
    await expect(r.promise).rejects.toMatchObject({ code: Code.Unavailable });
    expect(r.calls()).toBe(1);
  });

  it("a commit refused first and reset on its retry stops at the reset", async () => {
    const r = run("UpdateConfig", [refused, reset, () => "ok"]);
    await expect(r.promise).rejects.toMatchObject({ code: Code.Aborted });
    expect(r.calls()).toBe(2);
  });

  it("a read whose connection was reset is still sent again", async () => {
    const r = run("GetSandboxPolicyStatus", [reset, unavailable, () => "ok"]);
    await expect(r.promise).resolves.toBe("ok");
    expect(r.calls()).toBe(3);
  });

  it("a commit refused through every retry ends as GatewayUnreachableError, committing nothing", async () => {
    const r = run("UpdateConfig", [refused]);
    await expect(r.promise).rejects.toBeInstanceOf(GatewayUnreachableError);
    expect(r.calls()).toBe(4);
  });

  it("tells a request that never left from one that may have arrived", () => {
    expect(neverSent(refused())).toBe(true);
    expect(neverSent(new ConnectError("x", Code.Unavailable, undefined, undefined, systemError("getaddrinfo ENOTFOUND gw", "ENOTFOUND", "getaddrinfo")))).toBe(true);
    expect(neverSent(new ConnectError("x", Code.Unavailable, undefined, undefined, systemError("connect ETIMEDOUT", "ETIMEDOUT", "connect")))).toBe(true);
    expect(neverSent(reset())).toBe(false);
    expect(neverSent(unavailable())).toBe(false);
    expect(neverSent(new ConnectError("x", Code.Unavailable, undefined, undefined, systemError("read ETIMEDOUT", "ETIMEDOUT", "read")))).toBe(false);
  });
});

describe("TLS failures in the retry rule", () => {
  it("are never unreachable, so nothing is sent again: node's certificate errors and the SDK's TlsError", async () => {
    const cases = [
      new ConnectError("x", Code.Unavailable, undefined, undefined, Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" })),
      new ConnectError("x", Code.Unavailable, undefined, undefined, Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" })),
      new ConnectError("x", Code.Unavailable, undefined, undefined, Object.assign(new Error("alert"), { code: "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" })),
      new ConnectError("x", Code.Unavailable, undefined, undefined, Object.assign(new Error("the gateway requires a client certificate"), { name: "TlsError", cause: systemError("read ECONNRESET", "ECONNRESET", "read") })),
    ];
    for (const err of cases) expect(isUnreachable(err), String((err.cause as Error).message)).toBe(false);
    const r = run("ListSandboxes", [() => cases[0], () => "ok"]);
    await expect(r.promise).rejects.toBe(cases[0]);
    expect(r.calls()).toBe(1);
  });
});

describe("the line a lost commit answer prints", () => {
  it("is the SDK's message as is, exit 1, even though a reset is in its cause chain", () => {
    const message =
      'the answer to the commit to sandbox "dev" was lost and this gateway does not track operations, so it may or may not have been committed; check "openshell-config policy history --sandbox dev" before sending it again, or pin expectedResourceVersion';
    const err = new CommitOutcomeUnknownError(message, { sandbox: "dev", cause: reset(), connectCode: Code.Aborted });
    expect(describeFailure(err, undefined)).toEqual({ message, exitCode: 1 });
  });
});
