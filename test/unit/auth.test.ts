import { describe, expect, it } from "vitest";
import { assertTokenTransportSafe, authorizationHeader, isLoopbackHost } from "../../src/auth.js";
import { InsecureTransportError } from "../../src/errors.js";

describe("token transport safety", () => {
  it.each(["localhost", "127.0.0.1", "127.8.9.10", "[::1]", "::1"])("treats %s as loopback", (h) => {
    expect(isLoopbackHost(h)).toBe(true);
  });

  // *.localhost is not: Node resolves it through the system resolver, which may ask DNS.
  it.each(["gateway.example.com", "10.0.0.1", "128.0.0.1", "localhost.example.com", "[::2]", "api.localhost", "issuer.attacker.localhost"])("treats %s as remote", (h) => {
    expect(isLoopbackHost(h)).toBe(false);
  });

  it("refuses plain http to a remote host and says how to proceed", () => {
    expect(() => assertTokenTransportSafe("http://gateway.example.com:8080", false)).toThrow(InsecureTransportError);
    expect(() => assertTokenTransportSafe("http://gateway.example.com:8080", false)).toThrow(/use https/);
  });

  it("allows https, loopback http, relative URLs and an explicit opt-in", () => {
    expect(() => assertTokenTransportSafe("https://gateway.example.com", false)).not.toThrow();
    expect(() => assertTokenTransportSafe("http://127.0.0.1:8080", false)).not.toThrow();
    expect(() => assertTokenTransportSafe("/api", false)).not.toThrow();
    expect(() => assertTokenTransportSafe("http://gateway.example.com", true)).not.toThrow();
  });

  it("builds the bearer header from a string or an async provider, and none from an empty token", async () => {
    expect(await authorizationHeader("abc")).toBe("Bearer abc");
    expect(await authorizationHeader(async () => "fresh")).toBe("Bearer fresh");
    expect(await authorizationHeader("")).toBeUndefined();
    expect(await authorizationHeader(undefined)).toBeUndefined();
  });
});
