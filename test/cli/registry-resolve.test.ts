// Which gateway, credentials and workspace a command uses (cli/config.ts), rung by rung: flags
// (--gateway-endpoint/--url, -g), the environment (OPENSHELL_GATEWAY_ENDPOINT/_URL,
// OPENSHELL_GATEWAY), this CLI's config file, the registry's active gateway (user, then system);
// the token (--token, OPENSHELL_TOKEN, the config file's only for an unnamed gateway, the
// registered gateway's OIDC session); TLS, --gateway-insecure and OPENSHELL_WORKSPACE. Real files
// in a throwaway home.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseCommandLine, withWorkspaceDefault } from "../../cli/args.js";
import { assertSupported, ConfigError, resolveConfig, type ConnectionFlags } from "../../cli/config.js";
import { resumeCommand } from "../../cli/connection.js";
import { createFakeHome, type FakeHome, configError } from "./registry-fixture.js";

let home: FakeHome;
let configFile: string;

beforeEach(() => {
  home = createFakeHome();
  home.gateway("openshell", "https://127.0.0.1:17670");
  home.gateway("lab", "https://lab.example:8443", { auth_mode: "oidc", oidc_issuer: "https://idp.example", oidc_client_id: "cli" });
  home.gateway("plain", "http://plain.example:8080", { auth_mode: "plaintext" });
  home.gateway("sys", "https://sys.example:17670", {}, "system");
  home.gateway("cf", "https://cf.example", { auth_mode: "cloudflare_jwt", cf_team_domain: "team.cloudflareaccess.com" });
  home.active("openshell");
  home.active("sys", "system");
  configFile = join(home.xdg, "openshell-config", "config.json");
});
afterEach(() => home.cleanup());

function writeConfig(content: unknown): void {
  mkdirSync(join(home.xdg, "openshell-config"), { recursive: true });
  writeFileSync(configFile, JSON.stringify(content));
}

const resolve = (flags: ConnectionFlags = {}, env: Record<string, string> = {}) => resolveConfig(flags, { ...home.env, ...env }, { home: home.dir });


const ENV_ENDPOINT = { OPENSHELL_GATEWAY_ENDPOINT: "https://env-endpoint.example:1" };

describe("which gateway: each rung beats the ones below it", () => {
  it("4. with nothing else, the user registry's active gateway, from its metadata.json", () => {
    const c = resolve();
    expect(c).toMatchObject({ url: "https://127.0.0.1:17670", urlSource: "registry", urlFrom: join(home.user, "gateways", "openshell", "metadata.json"), authMode: "mtls" });
    expect(c.gateway).toMatchObject({ name: "openshell", source: "active", activeFile: join(home.user, "active_gateway"), entry: { source: "user" } });
  });

  it("4. without a user active_gateway, the system registry's", () => {
    home.cleanup();
    home = createFakeHome();
    home.gateway("sys", "https://sys.example:17670", {}, "system");
    home.active("sys", "system");
    expect(resolve()).toMatchObject({ url: "https://sys.example:17670", gateway: { name: "sys", source: "active", entry: { source: "system" } } });
  });

  it("3. the config file's url beats the active gateway", () => {
    writeConfig({ url: "http://from-file.example:9" });
    expect(resolve()).toMatchObject({ url: "http://from-file.example:9", urlSource: "file", gateway: undefined, authMode: undefined, tls: undefined, fileConsulted: true });
  });

  it("2. OPENSHELL_GATEWAY beats the config file, and so do OPENSHELL_GATEWAY_ENDPOINT and OPENSHELL_GATEWAY_URL", () => {
    writeConfig({ url: "http://from-file.example:9" });
    expect(resolve({}, { OPENSHELL_GATEWAY: "plain" })).toMatchObject({ url: "http://plain.example:8080", urlSource: "registry", gateway: { name: "plain", source: "env" } });
    expect(resolve({}, ENV_ENDPOINT)).toMatchObject({ url: ENV_ENDPOINT.OPENSHELL_GATEWAY_ENDPOINT, urlSource: "env", urlFrom: "OPENSHELL_GATEWAY_ENDPOINT", gateway: undefined });
    expect(resolve({}, { OPENSHELL_GATEWAY_URL: "http://legacy.example:2" })).toMatchObject({ url: "http://legacy.example:2", urlSource: "env", urlFrom: "OPENSHELL_GATEWAY_URL" });
  });

  it("2. OPENSHELL_GATEWAY_ENDPOINT with OPENSHELL_GATEWAY: that endpoint, with the named gateway's auth mode and bundle", () => {
    const c = resolve({}, { ...ENV_ENDPOINT, OPENSHELL_GATEWAY: "openshell" });
    expect(c).toMatchObject({ url: ENV_ENDPOINT.OPENSHELL_GATEWAY_ENDPOINT, urlSource: "env", authMode: "mtls", gateway: { name: "openshell", source: "env" } });
    expect(c.tls).toEqual({ bundleDir: join(home.user, "gateways", "openshell", "mtls"), bundleName: "openshell", bundle: "required" });
  });

  it("refuses an http:// endpoint, from the environment or a flag, for a gateway registered with mutual TLS, naming where each came from", () => {
    expect(configError(() => resolve({}, { OPENSHELL_GATEWAY: "openshell", OPENSHELL_GATEWAY_URL: "http://127.0.0.1:8080" }))).toBe(
      'gateway "openshell" (OPENSHELL_GATEWAY) is registered for mutual TLS (no auth_mode, which means mtls) at https://127.0.0.1:17670, but OPENSHELL_GATEWAY_URL gives http://127.0.0.1:8080, plain HTTP: leave OPENSHELL_GATEWAY_URL out to use the registered endpoint, or unset OPENSHELL_GATEWAY to use http://127.0.0.1:8080 on its own',
    );
    // A leftover OPENSHELL_GATEWAY with an endpoint flag: the line says the name may be what is left over.
    expect(configError(() => resolve({ url: "http://127.0.0.1:8080" }, { OPENSHELL_GATEWAY: "openshell" }))).toMatch(/^gateway "openshell" \(OPENSHELL_GATEWAY\) is registered for mutual TLS .* but --url gives http:\/\/127\.0\.0\.1:8080, plain HTTP: leave --url out to use the registered endpoint, or unset OPENSHELL_GATEWAY to use http:\/\/127\.0\.0\.1:8080 on its own$/);
    expect(configError(() => resolve({ gateway: "openshell", url: "http://127.0.0.1:8080" }))).toMatch(/^gateway "openshell" \(-g\) .* or drop -g to use/);
    // An http:// endpoint with a plaintext gateway's name is fine, and so is one for an entry whose own endpoint is http.
    expect(resolve({}, { OPENSHELL_GATEWAY: "plain", OPENSHELL_GATEWAY_URL: "http://127.0.0.1:8080" }).url).toBe("http://127.0.0.1:8080");
    home.gateway("legacy", "http://127.0.0.1:17670");
    expect(resolve({}, { OPENSHELL_GATEWAY: "legacy", OPENSHELL_GATEWAY_URL: "http://127.0.0.1:17670" }).url).toBe("http://127.0.0.1:17670");
  });

  it("1. -g beats the environment's endpoint and name and everything below", () => {
    writeConfig({ url: "http://from-file.example:9" });
    const c = resolve({ gateway: "lab" }, { ...ENV_ENDPOINT, OPENSHELL_GATEWAY: "plain", OPENSHELL_GATEWAY_URL: ENV_ENDPOINT.OPENSHELL_GATEWAY_ENDPOINT });
    expect(c).toMatchObject({ url: "https://lab.example:8443", urlSource: "registry", authMode: "oidc", gateway: { name: "lab", source: "flag" } });
  });

  it("1. --gateway-endpoint (or --url) beats the environment, the file and the registry, and is used without metadata", () => {
    writeConfig({ url: "http://from-file.example:9" });
    for (const flags of [{ gatewayEndpoint: "https://direct.example:443" }, { url: "https://direct.example:443" }]) {
      const c = resolve(flags, { OPENSHELL_GATEWAY_URL: "http://legacy.example:2" });
      expect(c).toMatchObject({ url: "https://direct.example:443", urlSource: "flag", gateway: undefined, authMode: undefined });
      expect(c.tls).toEqual({ bundleDir: join(home.user, "gateways", "direct.example", "mtls"), bundleName: "direct.example", bundle: "optional" });
    }
  });

  it("1. -g with --gateway-endpoint: the endpoint overrides the name's, the name gives auth mode and credentials (as upstream)", () => {
    const c = resolve({ gateway: "openshell", gatewayEndpoint: "https://127.0.0.1:9999" });
    expect(c).toMatchObject({ url: "https://127.0.0.1:9999", urlSource: "flag", authMode: "mtls", gateway: { name: "openshell", source: "flag", entry: { name: "openshell" } } });
    expect(c.tls?.bundle).toBe("required");
  });

  it("1. an endpoint flag with OPENSHELL_GATEWAY: the bundle is looked up by that name; a name with an endpoint need not be registered", () => {
    const c = resolve({ gatewayEndpoint: "https://10.1.2.3:17670" }, { OPENSHELL_GATEWAY: "not-registered" });
    expect(c.gateway).toMatchObject({ name: "not-registered", source: "env", entry: undefined });
    expect(c.tls).toMatchObject({ bundleName: "not-registered", bundle: "optional" });
  });

  it("a bare endpoint on 127.0.0.1 or localhost looks for the stock install's bundle, gateways/openshell/mtls", () => {
    expect(resolve({ url: "https://localhost:17670" }).tls).toMatchObject({ bundleDir: join(home.user, "gateways", "openshell", "mtls"), bundleName: "openshell" });
  });

  it("refuses two different endpoints given at one level, without echoing them", () => {
    expect(configError(() => resolve({ url: "https://a.example", gatewayEndpoint: "https://u:pw@b.example" }))).toBe("--url and --gateway-endpoint name different gateways; give one");
    expect(configError(() => resolve({}, { OPENSHELL_GATEWAY_URL: "https://a.example", OPENSHELL_GATEWAY_ENDPOINT: "https://b.example" }))).toBe(
      "OPENSHELL_GATEWAY_URL and OPENSHELL_GATEWAY_ENDPOINT name different gateways; give one",
    );
    expect(resolve({ url: "https://a.example", gatewayEndpoint: "https://a.example" }).url).toBe("https://a.example");
  });
});

describe("which gateway: errors", () => {
  it("an unknown -g names where it looked and suggests a near name", () => {
    expect(configError(() => resolve({ gateway: "labb" }))).toBe(
      `unknown gateway "labb" (-g): no metadata.json in ${home.user}/gateways/labb or ${home.system}/gateways/labb; did you mean "lab"?`,
    );
    expect(configError(() => resolve({}, { OPENSHELL_GATEWAY: "zzz-nothing-like-it" }))).toBe(
      `unknown gateway "zzz-nothing-like-it" (OPENSHELL_GATEWAY): no metadata.json in ${home.user}/gateways/zzz-nothing-like-it or ${home.system}/gateways/zzz-nothing-like-it; "openshell-config gateway list" shows the registered ones`,
    );
  });

  it("a name that is a path is refused whichever way it comes", () => {
    expect(configError(() => resolve({ gateway: "../../etc" }))).toBe('-g "../../etc" is not a gateway name (one path component): it contains /');
    expect(configError(() => resolve({}, { OPENSHELL_GATEWAY: ".." }))).toBe('OPENSHELL_GATEWAY ".." is not a gateway name (one path component): ".." is not a directory name');
  });

  it("an active gateway that is not registered names the active_gateway file", () => {
    const file = home.active("gone");
    expect(configError(() => resolve())).toBe(`the active gateway "gone" (named in ${file}) is not registered: no metadata.json in ${home.user}/gateways/gone or ${home.system}/gateways/gone`);
  });

  it("with nothing anywhere, says every way to name a gateway", () => {
    home.cleanup();
    home = createFakeHome();
    expect(configError(() => resolve())).toBe(
      `no gateway: pass -g NAME or --url URL, set OPENSHELL_GATEWAY or OPENSHELL_GATEWAY_URL, put "url" in ${join(home.xdg, "openshell-config", "config.json")}, or register one with the openshell CLI (no active_gateway in ${home.user} or ${home.system})`,
    );
  });

  it("a Cloudflare Access gateway is one line saying it is not supported", () => {
    expect(configError(() => assertSupported(resolve({ gateway: "cf" })))).toBe(
      'gateway "cf" uses Cloudflare Access (auth_mode cloudflare_jwt), which openshell-config does not support; use a gateway with mtls, oidc or plaintext',
    );
  });
});

describe("the token", () => {
  beforeEach(() => writeConfig({ url: "http://from-file.example:9", token: "file-token" }));

  it("--token beats OPENSHELL_TOKEN, which beats the config file's token", () => {
    expect(resolve({ token: "flag-token" }, { OPENSHELL_TOKEN: "env-token" })).toMatchObject({ token: "flag-token", tokenSource: "flag" });
    expect(resolve({}, { OPENSHELL_TOKEN: "env-token" })).toMatchObject({ token: "env-token", tokenSource: "env" });
    expect(resolve()).toMatchObject({ token: "file-token", tokenSource: "file" });
    expect(resolve({ url: "https://other.example" })).toMatchObject({ token: "file-token", tokenSource: "file" });
  });

  it("sends the config file's token to an endpoint of the openshell CLI's names only when it is the file's own gateway", () => {
    expect(resolve({}, { OPENSHELL_GATEWAY_ENDPOINT: "https://elsewhere.example" })).toMatchObject({ url: "https://elsewhere.example", token: undefined, tokenSource: undefined });
    expect(resolve({ gatewayEndpoint: "https://elsewhere.example" })).toMatchObject({ token: undefined, tokenSource: undefined });
    expect(resolve({}, { OPENSHELL_GATEWAY_ENDPOINT: "http://from-file.example:9" })).toMatchObject({ token: "file-token", tokenSource: "file" });
    // This command line's own names take the file's token as they always did.
    expect(resolve({}, { OPENSHELL_GATEWAY_URL: "https://elsewhere.example" })).toMatchObject({ token: "file-token", tokenSource: "file" });
  });

  it("never sends the config file's token to a gateway chosen by name (-g, OPENSHELL_GATEWAY, active)", () => {
    expect(resolve({ gateway: "openshell" })).toMatchObject({ token: undefined, tokenSource: undefined });
    expect(resolve({}, { OPENSHELL_GATEWAY: "plain" })).toMatchObject({ token: undefined, tokenSource: undefined });
    writeConfig({ token: "file-token" });
    expect(resolve()).toMatchObject({ gateway: { source: "active" }, token: undefined, tokenSource: undefined, fileConsulted: true });
  });

  it("an oidc gateway's token is its OIDC session, unless --token or OPENSHELL_TOKEN is given", () => {
    expect(resolve({ gateway: "lab" })).toMatchObject({ token: undefined, tokenSource: "oidc" });
    expect(resolve({ gateway: "lab" }, { OPENSHELL_TOKEN: "env-token" })).toMatchObject({ token: "env-token", tokenSource: "env" });
  });
});

describe("TLS", () => {
  it("requires the whole bundle for auth_mode mtls (absent), presents what is there for oidc, and has none for http://", () => {
    expect(resolve({ gateway: "openshell" }).tls).toEqual({ bundleDir: join(home.user, "gateways", "openshell", "mtls"), bundleName: "openshell", bundle: "required" });
    expect(resolve({ gateway: "lab" }).tls).toMatchObject({ bundle: "optional" });
    expect(resolve({ gateway: "plain" }).tls).toBeUndefined();
  });

  it("--gateway-insecure or OPENSHELL_GATEWAY_INSECURE (not empty, 0 or false) skips verification, for https only", () => {
    expect(resolve({ gateway: "openshell", gatewayInsecure: true }).insecure).toBe("flag");
    expect(resolve({ gateway: "openshell" }, { OPENSHELL_GATEWAY_INSECURE: "1" }).insecure).toBe("env");
    for (const off of ["", "0", "false", "FALSE"]) expect(resolve({ gateway: "openshell" }, { OPENSHELL_GATEWAY_INSECURE: off }).insecure).toBeUndefined();
    expect(resolve({ gateway: "plain", gatewayInsecure: true }).insecure).toBeUndefined();
  });
});

describe("follow-up commands repeat the connection as it was given, never a token", () => {
  const follow = (argv: string[], env: Record<string, string> = {}) => {
    const { global } = parseCommandLine([...argv, "sandbox", "list"]);
    return resumeCommand(global, resolve(global, env), "00000000-0000-4000-8000-000000000000", undefined);
  };
  const WAIT = "openshell-config operation wait 00000000-0000-4000-8000-000000000000";

  it("-g NAME for a gateway named by flag, not its URL; nothing for one named by the environment or the active one", () => {
    expect(follow(["-g", "lab", "--token", "s3cret-token"])).toBe(`${WAIT} -g lab`);
    expect(follow([], { OPENSHELL_GATEWAY: "lab" })).toBe(WAIT);
    expect(follow([])).toBe(WAIT);
  });

  it("the endpoint flag as it was given, with -g and --gateway-insecure when they were flags", () => {
    expect(follow(["--url", "https://10.0.0.1:8443"])).toBe(`${WAIT} --url https://10.0.0.1:8443`);
    expect(follow(["--gateway-endpoint", "https://10.0.0.1:8443", "-g", "openshell", "--gateway-insecure"])).toBe(
      `${WAIT} -g openshell --gateway-endpoint https://10.0.0.1:8443 --gateway-insecure`,
    );
    expect(follow(["--gateway-endpoint", "https://10.0.0.1:8443"], { OPENSHELL_GATEWAY: "openshell", OPENSHELL_GATEWAY_INSECURE: "1" })).toBe(
      `${WAIT} --gateway-endpoint https://10.0.0.1:8443`,
    );
  });
});

describe("OPENSHELL_WORKSPACE", () => {
  const env = { OPENSHELL_WORKSPACE: "team-a" };
  const cmd = (...argv: string[]) => withWorkspaceDefault(parseCommandLine(argv).command, env);

  it("is the workspace of commands that take --workspace and were not given one; the flag wins", () => {
    expect(cmd("policy", "get", "-s", "web")).toMatchObject({ workspace: "team-a" });
    expect(cmd("sandbox", "list")).toMatchObject({ workspace: "team-a" });
    expect(cmd("operation", "wait", "00000000-0000-4000-8000-000000000000")).toMatchObject({ workspace: "team-a" });
    expect(cmd("policy", "get", "-s", "web", "--workspace", "b")).toMatchObject({ workspace: "b" });
    expect(withWorkspaceDefault(parseCommandLine(["policy", "get", "-s", "web"]).command, { OPENSHELL_WORKSPACE: "" })).toMatchObject({ workspace: undefined });
  });

  it("leaves alone what has a workspace of its own: every workspace, a resumed rollout", () => {
    expect(cmd("sandbox", "list", "-A")).toMatchObject({ workspace: undefined, allWorkspaces: true });
    expect(cmd("policy", "rollout", "resume", "r-20260101-000000-abcdef")).toMatchObject({ workspace: undefined });
    expect(cmd("gateway", "list")).toEqual({ name: "gateway list" });
  });
});
