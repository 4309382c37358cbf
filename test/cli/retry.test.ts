// The one retry rule of the command line (cli/retry.ts), as a Connect interceptor: unary calls
// that fail to reach the gateway are sent again after each pause of the rule, with one line per
// outage; anything else fails at once; streams pass through; Ctrl-C stops the pauses.

import { describe, expect, it } from "vitest";
import { Code, ConnectError, createContextValues, type UnaryRequest } from "@connectrpc/connect";
import { GatewayUnreachableError, isUnreachable, lineReport, ONE_ATTEMPT, retryInterceptor, RETRY_RULE } from "../../cli/retry.js";

const refused = () => new ConnectError("connect ECONNREFUSED 127.0.0.1:9", Code.Unavailable, undefined, undefined, Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
const fast = { delaysMs: [0, 0, 0] };

function run(results: (() => unknown)[], options: { stream?: boolean; signal?: AbortSignal; oneAttempt?: boolean } = {}) {
  const notes: string[] = [];
  let calls = 0;
  const next = async () => {
    const r = results[Math.min(calls++, results.length - 1)]!();
    if (r instanceof Error) throw r;
    return r;
  };
  const call = retryInterceptor(lineReport((l) => notes.push(l)), fast)(next as never);
  const contextValues = createContextValues();
  if (options.oneAttempt) contextValues.set(ONE_ATTEMPT, true);
  const req = { stream: options.stream ?? false, signal: options.signal ?? new AbortController().signal, contextValues } as unknown as UnaryRequest;
  return { promise: call(req), notes, calls: () => calls };
}

describe("the retry rule", () => {
  it("is 3 retries after 0.5 s, 1 s and 2 s", () => {
    expect(RETRY_RULE.delaysMs).toEqual([500, 1_000, 2_000]);
  });

  it("sends a call again until it reaches the gateway, with one line for the outage", async () => {
    const r = run([refused, refused, () => "ok"]);
    await expect(r.promise).resolves.toBe("ok");
    expect(r.calls()).toBe(3);
    expect(r.notes).toEqual(["gateway unreachable (connect ECONNREFUSED 127.0.0.1:9); retrying 3 times within 0ms…"]);
  });

  it("fails with GatewayUnreachableError after the last retry, carrying no cause a caller would retry", async () => {
    const r = run([refused]);
    const err = await r.promise.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayUnreachableError);
    expect(err).toMatchObject({ attempts: 4, reason: "connect ECONNREFUSED 127.0.0.1:9" });
    expect(isUnreachable(err)).toBe(false);
    expect(r.calls()).toBe(4);
  });

  it("does not retry the gateway's own answers, nor streams", async () => {
    const denied = run([() => new ConnectError("no", Code.PermissionDenied), () => "ok"]);
    await expect(denied.promise).rejects.toMatchObject({ code: Code.PermissionDenied });
    expect(denied.calls()).toBe(1);
    const stream = run([refused, () => "ok"], { stream: true });
    await expect(stream.promise).rejects.toMatchObject({ code: Code.Unavailable });
    expect(stream.notes).toEqual([]);
  });

  it("tries a call marked for one attempt once, without a line", async () => {
    const r = run([refused, () => "ok"], { oneAttempt: true });
    await expect(r.promise).rejects.toMatchObject({ code: Code.Unavailable });
    expect(r.calls()).toBe(1);
    expect(r.notes).toEqual([]);
  });

  it("stops at once when the call is cancelled (Ctrl-C)", async () => {
    const controller = new AbortController();
    controller.abort(new Error("interrupted"));
    const r = run([refused, () => "ok"], { signal: controller.signal });
    await expect(r.promise).rejects.toMatchObject({ code: Code.Unavailable });
    expect(r.calls()).toBe(1);
  });

  it("prints one line per outage, again after the gateway was reached in between", () => {
    const notes: string[] = [];
    const report = lineReport((l) => notes.push(l));
    report.retrying("x", fast);
    report.retrying("x", fast);
    report.recovered();
    report.retrying("y", fast);
    expect(notes).toHaveLength(2);
  });

  it("takes a broken connection under a call for unreachable, as connect-node reports it", () => {
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(isUnreachable(new ConnectError("x", Code.Internal, undefined, undefined, reset))).toBe(true);
    expect(isUnreachable(new ConnectError("x", Code.Internal))).toBe(false);
    expect(isUnreachable(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled))).toBe(true);
  });
});
