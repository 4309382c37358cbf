import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { isTransient } from "../../src/retry.js";
import { ConflictError, UnavailableError, toSdkError } from "../../src/errors.js";

/** What connect-node makes of a node error under a call: the code it picks, the node error as cause. */
function fromNode(code: Code, nodeCode: string, message = "read ECONNRESET"): ConnectError {
  const cause = Object.assign(new Error(message), { code: nodeCode });
  return new ConnectError(message, code, undefined, undefined, cause);
}

describe("which failures are transient", () => {
  it("an HTTP/2 stream reset with CANCEL (the gateway process died under an open call) is transient", () => {
    expect(isTransient(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled))).toBe(true);
  });

  it("any other CANCELED, such as the caller's own abort, is not", () => {
    expect(isTransient(new ConnectError("This operation was aborted", Code.Canceled))).toBe(false);
    expect(isTransient(new ConnectError("operation cancelled by the server", Code.Canceled))).toBe(false);
  });

  it("a connection reset under a call, which connect-node reports as ABORTED, is transient and surfaces as unavailable", () => {
    const reset = fromNode(Code.Aborted, "ECONNRESET");
    expect(isTransient(reset)).toBe(true);
    expect(toSdkError(reset)).toBeInstanceOf(UnavailableError);
  });

  it("the gateway's own ABORTED (a resource version mismatch) is a conflict and is not retried", () => {
    const conflict = new ConnectError("resource version mismatch: expected 3, sandbox is at 4", Code.Aborted);
    expect(isTransient(conflict)).toBe(false);
    expect(toSdkError(conflict)).toBeInstanceOf(ConflictError);
  });

  it("an HTTP/2 session or stream torn down by the peer is transient", () => {
    expect(isTransient(fromNode(Code.Internal, "ERR_HTTP2_SESSION_ERROR", "Session closed with error code 2"))).toBe(true);
    expect(isTransient(fromNode(Code.Internal, "ERR_HTTP2_STREAM_ERROR", "Stream closed with error code NGHTTP2_INTERNAL_ERROR"))).toBe(true);
    expect(isTransient(new ConnectError("Session closed with error code 2", Code.Internal))).toBe(false);
  });
});
