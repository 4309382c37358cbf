// The replica flags of `openshell-gateway serve`: defaults on PostgreSQL, their checks, and their
// refusal on SQLite, whose database file serves a single gateway process.

import { describe, expect, it } from "vitest";
import { parseCommandLine, UsageError, type GatewayConfig } from "../../src/config.js";

const pg = ["serve", "--db", "postgres://gw@db.internal/openshell", "--port", "8080", "--no-auth"];

function serve(argv: string[]): GatewayConfig {
  const parsed = parseCommandLine(argv, {});
  if (parsed.kind !== "serve") throw new Error("expected serve");
  return parsed.config;
}

function usageError(argv: string[]): string {
  try {
    parseCommandLine(argv, {});
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message.split("\n")[0]!;
  }
  throw new Error("accepted");
}

describe("replica flags", () => {
  it("a PostgreSQL gateway runs as a replica with a generated id, a 15 s lease and notifications on by default", () => {
    expect(serve(pg)).toMatchObject({ replica: { id: undefined, leaseMs: 15_000, notify: true }, dbPoolSize: undefined });
  });

  it("--replica-id, --lease, --notify off and --db-pool are taken as given", () => {
    const config = serve([...pg, "--replica-id", "gw-0.eu_1", "--lease", "3s", "--notify=off", "--db-pool", "24"]);
    expect(config).toMatchObject({ replica: { id: "gw-0.eu_1", leaseMs: 3_000, notify: false }, dbPoolSize: 24 });
  });

  it("a malformed replica id, notify value, lease or pool size is a usage error naming the flag", () => {
    expect(usageError([...pg, "--replica-id", "a b"])).toMatch(/^--replica-id "a b"/);
    expect(usageError([...pg, "--notify", "yes"])).toMatch(/^--notify "yes": expected on or off/);
    expect(usageError([...pg, "--lease", "0s"])).toMatch(/^--lease/);
    expect(usageError([...pg, "--db-pool", "0"])).toMatch(/^--db-pool/);
  });

  it("replica flags on a SQLite database are refused, and a SQLite gateway has no replica settings", () => {
    const sqlite = ["serve", "--db", "sqlite::memory:", "--port", "8080", "--no-auth"];
    expect(usageError([...sqlite, "--replica-id", "a"])).toMatch(/--replica-id needs a postgres:\/\/ --db/);
    expect(usageError([...sqlite, "--notify", "off"])).toMatch(/--notify needs a postgres/);
    expect(serve(sqlite).replica).toBeUndefined();
  });
});
