// The command line: flags, environment fallbacks, and usage errors that say what is wrong.

import { describe, expect, it } from "vitest";
import { parseCommandLine, parseDuration, UsageError, type GatewayConfig } from "../../src/config.js";

function serve(argv: string[], env: Record<string, string> = {}): GatewayConfig {
  const parsed = parseCommandLine(argv, env);
  if (parsed.kind !== "serve") throw new Error("expected serve");
  return parsed.config;
}

function usageError(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseCommandLine(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    return (err as Error).message.split("\n")[0]!;
  }
  throw new Error("accepted");
}

const base = ["serve", "--db", "sqlite::memory:", "--port", "8080"];

describe("command line mistakes", () => {
  it("suggests the flag a mistyped option was meant to be, and says where the options are", () => {
    expect(usageError([...base, "--auth-fle", "./auth.json"])).toBe("unknown option --auth-fle (did you mean --auth-file?)");
    expect(usageError([...base, "--no-auth", "--db-poll", "4"])).toBe("unknown option --db-poll (did you mean --db-pool?)");
    expect(usageError([...base, "--no-auth", "--tls-cret", "c.pem"])).toBe("unknown option --tls-cret (did you mean --tls-cert?)");
    expect(usageError([...base, "--no-auth", "--zzz", "1"])).toBe("unknown option --zzz");
    // Another word, not a typo: no suggestion rather than a wrong one.
    expect(usageError([...base, "--no-auth", "--max-wait", "30s"])).toBe("unknown option --max-wait");
    expect(usageError([...base, "--no-auth", "--supervisor-port", "9"])).toBe("unknown option --supervisor-port");
    let message = "";
    try {
      parseCommandLine([...base, "--auth-fle", "x"]);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split("\n")).toEqual(["unknown option --auth-fle (did you mean --auth-file?)", "run `openshell-gateway --help` for the options"]);
  });

  it("suggests serve for a mistyped command", () => {
    expect(usageError(["serv", "--db", "sqlite::memory:"])).toBe('unknown command "serv" (did you mean serve?): expected `serve`');
    expect(usageError(["start"])).toBe('unknown command "start": expected `serve`');
  });
});

describe("command line", () => {
  it("parses a full serve command with defaults for what is left out", () => {
    expect(serve([...base, "--auth-file", "/etc/openshell/auth.json"])).toEqual({
      db: "sqlite::memory:",
      host: "127.0.0.1",
      port: 8080,
      auth: { mode: "file", path: "/etc/openshell/auth.json" },
      corsOrigins: [],
      logLevel: "info",
      waitMaxMs: 3_600_000,
      withoutOperations: false,
      withoutSharedRollouts: false,
    });
  });

  it("accepts --flag=value, repeated --cors-origin, --host, --log-level and --wait-max", () => {
    const config = serve([
      "serve",
      "--db=postgres://u:p@db:5432/openshell",
      "--port=0",
      "--host",
      "0.0.0.0",
      "--auth-file=auth.json",
      "--cors-origin",
      "https://a.example.com",
      "--cors-origin=http://localhost:5173/",
      "--log-level",
      "debug",
      "--wait-max",
      "30m",
    ]);
    expect(config).toMatchObject({
      db: "postgres://u:p@db:5432/openshell",
      port: 0,
      host: "0.0.0.0",
      auth: { mode: "file", path: "auth.json" },
      corsOrigins: ["https://a.example.com", "http://localhost:5173"],
      logLevel: "debug",
      waitMaxMs: 1_800_000,
    });
  });

  it("falls back to OPENSHELL_GATEWAY_DB, _PORT and _AUTH_FILE, with flags taking precedence", () => {
    const env = { OPENSHELL_GATEWAY_DB: "sqlite:/var/lib/gw.db", OPENSHELL_GATEWAY_PORT: "9000", OPENSHELL_GATEWAY_AUTH_FILE: "/auth.json" };
    expect(serve(["serve"], env)).toMatchObject({ db: "sqlite:/var/lib/gw.db", port: 9000, auth: { mode: "file", path: "/auth.json" } });
    expect(serve(["serve", "--port", "1", "--no-auth"], env)).toMatchObject({ port: 1, auth: { mode: "none" } });
  });

  it("returns the usage text for --help, -h and help", () => {
    for (const argv of [["--help"], ["serve", "-h"], ["help"]]) {
      const parsed = parseCommandLine(argv, {});
      expect(parsed.kind).toBe("help");
      expect(parsed.kind === "help" && parsed.text).toContain("Usage: openshell-gateway serve");
    }
  });

  it("fits its usage text in an 80-column terminal, and names every option it accepts", () => {
    const parsed = parseCommandLine(["--help"], {});
    const text = parsed.kind === "help" ? parsed.text : "";
    const wide = text.split("\n").filter((line) => line.length > 80);
    expect(wide).toEqual([]);
    for (const flag of ["--db", "--port", "--auth-file", "--no-auth", "--tls-client-ca", "--oidc-issuer", "--sandbox-port", "--db-pool", "--without-shared-rollouts"]) {
      expect(text).toContain(flag);
    }
  });

  it("explains each usage error and exits with code 2", () => {
    expect(usageError([])).toBe("missing command: expected `serve`");
    expect(usageError(["run"])).toBe('unknown command "run": expected `serve`');
    expect(usageError(["serve", "--port", "1", "--no-auth"])).toBe("--db is required (or set OPENSHELL_GATEWAY_DB)");
    expect(usageError(["serve", "--db", "sqlite::memory:", "--no-auth"])).toBe("--port is required (or set OPENSHELL_GATEWAY_PORT)");
    expect(usageError(base)).toMatch(/^authentication not configured: pass --auth-file FILE/);
    expect(usageError([...base, "--no-auth", "--auth-file", "a.json"])).toBe("--auth-file and --no-auth exclude each other");
    expect(usageError(["serve", "--db", "mysql://x", "--port", "1", "--no-auth"])).toBe(
      "--db must be sqlite:PATH, sqlite::memory: or a postgres:// URL",
    );
    expect(usageError(["serve", "--db", "sqlite:", "--port", "1", "--no-auth"])).toMatch(/^--db sqlite: needs a file path/);
    expect(usageError(["serve", "--db", "sqlite::memory:", "--port", "70000", "--no-auth"])).toMatch(/^--port "70000": expected an integer/);
    expect(usageError([...base, "--no-auth", "--log-level", "loud"])).toMatch(/^--log-level "loud": expected one of fatal, error/);
    expect(usageError([...base, "--no-auth", "--wait-max", "soon"])).toMatch(/^--wait-max "soon": expected a positive duration/);
    expect(usageError([...base, "--no-auth", "--cors-origin", "https://a.example.com/app"])).toMatch(/^--cors-origin .*no path/);
    expect(usageError([...base, "--no-auth", "--verbose"])).toBe("unknown option --verbose");
    expect(usageError([...base, "--no-auth", "--port", "2"])).toBe("--port given more than once");
    expect(usageError([...base, "--no-auth", "--host"])).toBe("--host needs a value");
    expect(usageError([...base, "--no-auth", "extra"])).toBe('unexpected argument "extra"');
  });

  it("never repeats a database URL, which may hold a password, in an error", () => {
    expect(usageError(["serve", "--db", "mysql://root:hunter2@db/x", "--port", "1", "--no-auth"])).not.toContain("hunter2");
  });

  it("parses durations with ms, s, m and h units; a bare number is seconds", () => {
    expect(parseDuration("--wait-max", "250ms")).toBe(250);
    expect(parseDuration("--wait-max", "3600s")).toBe(3_600_000);
    expect(parseDuration("--wait-max", "1.5m")).toBe(90_000);
    expect(parseDuration("--wait-max", "2h")).toBe(7_200_000);
    expect(parseDuration("--wait-max", "60")).toBe(60_000);
    expect(() => parseDuration("--wait-max", "0s")).toThrow(UsageError);
    expect(() => parseDuration("--wait-max", "-1s")).toThrow(UsageError);
  });
});

describe("TLS, client certificate, OIDC and sandbox listener flags", () => {
  it("leaves tls, oidc and sandboxPort undefined when their flags are absent", () => {
    expect(serve([...base, "--no-auth"])).toMatchObject({ tls: undefined, oidc: undefined, sandboxPort: undefined });
  });

  it("parses --tls-cert, --tls-key, --tls-client-ca, --oidc-issuer, --oidc-audience and --sandbox-port", () => {
    const config = serve([
      ...base,
      "--tls-cert", "/etc/gw/tls.crt",
      "--tls-key=/etc/gw/tls.key",
      "--tls-client-ca", "/etc/gw/ca.crt",
      "--oidc-issuer", "https://idp.example.com/realms/openshell",
      "--oidc-audience", "openshell-gateway",
      "--sandbox-port", "8081",
    ]);
    expect(config).toMatchObject({
      tls: { certFile: "/etc/gw/tls.crt", keyFile: "/etc/gw/tls.key", clientCaFile: "/etc/gw/ca.crt" },
      oidc: { issuer: "https://idp.example.com/realms/openshell", audience: "openshell-gateway" },
      sandboxPort: 8081,
      auth: { mode: "tls-or-oidc" },
    });
    expect(serve([...base, "--no-auth", "--tls-cert", "c.pem", "--tls-key", "k.pem"]).tls).toEqual({ certFile: "c.pem", keyFile: "k.pem", clientCaFile: undefined });
  });

  it("takes --tls-client-ca or --oidc-issuer as authentication without an auth file, and keeps the file when given too", () => {
    const tls = ["--tls-cert", "c.pem", "--tls-key", "k.pem"];
    expect(serve([...base, ...tls, "--tls-client-ca", "ca.pem"]).auth).toEqual({ mode: "tls-or-oidc" });
    expect(serve([...base, "--oidc-issuer", "http://127.0.0.1:9000", "--oidc-audience", "gw"]).auth).toEqual({ mode: "tls-or-oidc" });
    expect(serve([...base, ...tls, "--tls-client-ca", "ca.pem", "--auth-file", "a.json"]).auth).toEqual({ mode: "file", path: "a.json" });
    expect(serve([...base, ...tls, "--no-auth"]).auth).toEqual({ mode: "none" });
  });

  it("explains each usage error of the new flags", () => {
    expect(usageError([...base, "--no-auth", "--tls-cert", "c.pem"])).toBe("--tls-cert needs --tls-key (the certificate's private key)");
    expect(usageError([...base, "--no-auth", "--tls-key", "k.pem"])).toBe("--tls-key needs --tls-cert (the certificate of that key)");
    expect(usageError([...base, "--tls-client-ca", "ca.pem"])).toBe("--tls-client-ca needs --tls-cert and --tls-key: client certificates are asked for over TLS");
    expect(usageError([...base, "--no-auth", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem"])).toBe(
      "--tls-client-ca and --no-auth exclude each other",
    );
    expect(usageError([...base, "--no-auth", "--oidc-issuer", "https://idp.example.com", "--oidc-audience", "gw"])).toBe(
      "--oidc-issuer and --no-auth exclude each other",
    );
    expect(usageError([...base, "--oidc-issuer", "https://idp.example.com"])).toBe("--oidc-issuer needs --oidc-audience (the aud its tokens carry for this gateway)");
    expect(usageError([...base, "--oidc-audience", "gw"])).toBe("--oidc-audience needs --oidc-issuer");
    expect(usageError([...base, "--oidc-issuer", "http://idp.example.com", "--oidc-audience", "gw"])).toBe(
      '--oidc-issuer "http://idp.example.com": must be https (http only on 127.0.0.1, ::1 or localhost)',
    );
    expect(usageError([...base, "--oidc-issuer", "idp.example.com", "--oidc-audience", "gw"])).toBe('--oidc-issuer "idp.example.com": not a URL');
    expect(usageError([...base, "--oidc-issuer", "https://idp.example.com/?x=1", "--oidc-audience", "gw"])).toMatch(/without query, fragment or credentials$/);
    expect(usageError([...base, "--no-auth", "--sandbox-port", "8080"])).toBe("--sandbox-port must differ from --port");
    expect(usageError([...base, "--no-auth", "--sandbox-port", "x"])).toBe('--sandbox-port "x": expected an integer from 0 to 65535');
    expect(usageError([...base, "--no-auth", "--tls-cert"])).toBe("--tls-cert needs a value");
    expect(usageError(base)).toBe(
      "authentication not configured: pass --auth-file FILE (or set OPENSHELL_GATEWAY_AUTH_FILE), --tls-client-ca FILE or --oidc-issuer URL, or --no-auth",
    );
  });

  it("lists every new flag in the help text", () => {
    const parsed = parseCommandLine(["--help"], {});
    const text = parsed.kind === "help" ? parsed.text : "";
    for (const flag of ["--tls-cert FILE", "--tls-key FILE", "--tls-client-ca FILE", "--oidc-issuer URL", "--oidc-audience AUD", "--sandbox-port N"]) {
      expect(text).toContain(flag);
    }
  });
});
