import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { isTransient } from "../../src/retry.js";

describe("which failures are transient", () => {
  it("an HTTP/2 stream reset with CANCEL (the gateway process died under an open call) is transient", () => {
    expect(isTransient(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled))).toBe(true);
  });

  it("any other CANCELED, such as the caller's own abort, is not", () => {
    expect(isTransient(new ConnectError("This operation was aborted", Code.Canceled))).toBe(false);
    expect(isTransient(new ConnectError("operation cancelled by the server", Code.Canceled))).toBe(false);
  });
});
