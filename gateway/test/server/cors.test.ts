// Browser access: configured origins get CORS headers (preflight and actual calls), others none.

import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness.js";

const ALLOWED = "https://dashboard.example.com";
const OTHER = "https://evil.example.net";
let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 500 });
  t = undefined;
});

function preflight(url: string, origin: string): Promise<Response> {
  return fetch(`${url}/openshell.v1.OpenShell/UpdateConfig`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, connect-protocol-version",
    },
  });
}

function headerList(res: Response, name: string): string[] {
  return (res.headers.get(name) ?? "").split(",").map((h) => h.trim().toLowerCase()).filter(Boolean);
}

describe("CORS", () => {
  it("answers a preflight from an allowed origin with the methods, request headers and exposed headers browsers need", async () => {
    t = await startTestServer({ corsOrigins: [ALLOWED] });
    const res = await preflight(t.server.url, ALLOWED);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(headerList(res, "access-control-allow-methods")).toEqual(expect.arrayContaining(["post", "get"]));
    expect(headerList(res, "access-control-allow-headers")).toEqual(
      expect.arrayContaining(["authorization", "content-type", "connect-protocol-version", "connect-timeout-ms", "x-grpc-web", "grpc-timeout"]),
    );
    expect(headerList(res, "access-control-expose-headers")).toEqual(
      expect.arrayContaining(["grpc-status", "grpc-message", "grpc-status-details-bin", "connect-protocol-version", "operation-id"]),
    );
    expect(res.headers.get("vary")).toMatch(/origin/i);
  });

  it("gives a preflight from any other origin no CORS headers", async () => {
    t = await startTestServer({ corsOrigins: [ALLOWED] });
    const res = await preflight(t.server.url, OTHER);
    for (const name of ["access-control-allow-origin", "access-control-allow-headers", "access-control-allow-methods", "access-control-expose-headers"]) {
      expect(res.headers.get(name), name).toBeNull();
    }
  });

  it("adds allow-origin and expose-headers to an actual call from an allowed origin, and nothing for another origin", async () => {
    t = await startTestServer({ corsOrigins: [ALLOWED] });
    const call = (origin: string) =>
      fetch(`${t!.server.url}/openshell.v1.OpenShell/Health`, {
        method: "POST",
        headers: { origin, "content-type": "application/json", "connect-protocol-version": "1" },
        body: "{}",
      });
    const allowed = await call(ALLOWED);
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(headerList(allowed, "access-control-expose-headers")).toContain("operation-id");
    const other = await call(OTHER);
    expect(other.status).toBe(200);
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect(other.headers.get("access-control-expose-headers")).toBeNull();
  });

  it("matches origins after normalising case and default ports, and allows every origin with *", async () => {
    t = await startTestServer({ corsOrigins: ["https://Dashboard.Example.com:443"] });
    expect((await preflight(t.server.url, ALLOWED)).headers.get("access-control-allow-origin")).toBe(ALLOWED);
    await t.server.close({ graceMs: 100 });
    t = await startTestServer({ corsOrigins: ["*"] });
    expect((await preflight(t.server.url, OTHER)).headers.get("access-control-allow-origin")).toBe(OTHER);
  });

  it("sends no CORS headers at all when no origin is configured", async () => {
    t = await startTestServer();
    const res = await preflight(t.server.url, ALLOWED);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});
