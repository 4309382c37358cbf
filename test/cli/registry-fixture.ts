// A throwaway home for the tests of the gateway registry: a temporary directory with
// $XDG_CONFIG_HOME (the user registry under xdg/openshell) and a system registry (passed as
// OPENSHELL_SYSTEM_GATEWAY_DIR), and helpers that write what the openshell CLI and its installer
// write there: active_gateway, gateways/<name>/metadata.json, an mTLS bundle, oidc_token.json.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { writeMtlsBundle, type Pem } from "../../examples/tls/pki.js";
import { ConfigError } from "../../cli/config.js";

export type Which = "user" | "system";

export interface FakeHome {
  /** The temporary directory (HOME). */
  readonly dir: string;
  /** $XDG_CONFIG_HOME. */
  readonly xdg: string;
  /** The user registry: $XDG_CONFIG_HOME/openshell. */
  readonly user: string;
  /** The system registry (OPENSHELL_SYSTEM_GATEWAY_DIR). */
  readonly system: string;
  /** HOME, XDG_CONFIG_HOME and OPENSHELL_SYSTEM_GATEWAY_DIR. */
  readonly env: Record<string, string>;
  root(which: Which): string;
  /** Writes gateways/<name>/metadata.json (`{ name, gateway_endpoint, is_remote, gateway_port, ...extra }`); returns its path. */
  gateway(name: string, endpoint: string, extra?: Record<string, unknown>, which?: Which): string;
  /** Writes raw text as gateways/<name>/metadata.json. */
  rawMetadata(name: string, text: string, which?: Which): string;
  /** Writes the mTLS bundle of `name` (ca.crt, tls.crt, tls.key); returns the directory. */
  bundle(name: string, ca: Pem, client: Pem, which?: Which): string;
  /** Writes active_gateway. */
  active(name: string, which?: Which): string;
  /** Writes gateways/<name>/oidc_token.json with `mode` (default 0600); returns its path. */
  oidcToken(name: string, fields: Record<string, unknown>, which?: Which, mode?: number): string;
  cleanup(): void;
}

export function createFakeHome(): FakeHome {
  // A short name: `gateway current` prints whole paths, and its 80-column screen is tested.
  const dir = mkdtempSync(join(tmpdir(), "osr-"));
  const xdg = join(dir, "xdg");
  const user = join(xdg, "openshell");
  const system = join(dir, "etc-openshell");
  mkdirSync(user, { recursive: true });
  mkdirSync(system, { recursive: true });
  const root = (which: Which) => (which === "user" ? user : system);
  const gwDir = (name: string, which: Which) => {
    const d = join(root(which), "gateways", name);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    return d;
  };
  return {
    dir,
    xdg,
    user,
    system,
    env: { HOME: dir, XDG_CONFIG_HOME: xdg, OPENSHELL_SYSTEM_GATEWAY_DIR: system },
    root,
    gateway(name, endpoint, extra = {}, which = "user") {
      const u = new URL(endpoint);
      const metadata = { name, gateway_endpoint: endpoint, is_remote: false, gateway_port: Number(u.port || (u.protocol === "https:" ? 443 : 80)), ...extra };
      const file = join(gwDir(name, which), "metadata.json");
      writeFileSync(file, JSON.stringify(metadata, null, 2));
      return file;
    },
    rawMetadata(name, text, which = "user") {
      const file = join(gwDir(name, which), "metadata.json");
      writeFileSync(file, text);
      return file;
    },
    bundle(name, ca, client, which = "user") {
      return writeMtlsBundle(join(gwDir(name, which), "mtls"), ca, client);
    },
    active(name, which = "user") {
      const file = join(root(which), "active_gateway");
      writeFileSync(file, `${name}\n`);
      return file;
    },
    oidcToken(name, fields, which = "user", mode = 0o600) {
      const file = join(gwDir(name, which), "oidc_token.json");
      writeFileSync(file, JSON.stringify(fields, null, 2), { mode });
      chmodSync(file, mode);
      return file;
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The message of the ConfigError `f` throws; fails the test when it throws none. */
export function configError(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}
