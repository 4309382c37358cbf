// The reader of the openshell CLI's gateway registry (cli/registry*.ts) against real files in a
// throwaway home: the user and system registries and which one wins, active_gateway, the checks of
// metadata.json (each error names the file and the field), gateway names that must stay one path
// component, the sanitised mTLS directory, and the bounds on what is read.

import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../cli/config-error.js";
import { createRegistry, MAX_ENTRIES } from "../../cli/registry.js";
import { MAX_METADATA_BYTES, parseGatewayMetadata } from "../../cli/registry-metadata.js";
import { gatewayNameProblem, mtlsDir, nameForEndpoint, sanitizeName, systemRegistryDir, userRegistryDir } from "../../cli/registry-paths.js";
import { createFakeHome, type FakeHome, configError } from "./registry-fixture.js";

let home: FakeHome;
beforeEach(() => {
  home = createFakeHome();
});
afterEach(() => home.cleanup());

const registry = () => createRegistry(home.env, home.dir);


describe("where the registries are", () => {
  it("puts the user registry under $XDG_CONFIG_HOME/openshell, else ~/.config/openshell", () => {
    expect(userRegistryDir({ XDG_CONFIG_HOME: "/xdg" }, "/home/u")).toBe("/xdg/openshell");
    expect(userRegistryDir({}, "/home/u")).toBe("/home/u/.config/openshell");
  });

  it("takes OPENSHELL_SYSTEM_GATEWAY_DIR only when it is an absolute path, else /etc/openshell", () => {
    expect(systemRegistryDir({ OPENSHELL_SYSTEM_GATEWAY_DIR: "/opt/osh" })).toEqual({ dir: "/opt/osh", fromEnv: true });
    expect(systemRegistryDir({})).toEqual({ dir: "/etc/openshell", fromEnv: false });
    expect(systemRegistryDir({ OPENSHELL_SYSTEM_GATEWAY_DIR: "relative/dir" })).toEqual({ dir: "/etc/openshell", fromEnv: false, ignored: "relative" });
    expect(systemRegistryDir({ OPENSHELL_SYSTEM_GATEWAY_DIR: "" })).toEqual({ dir: "/etc/openshell", fromEnv: false, ignored: "empty" });
  });

  it("ignores a relative OPENSHELL_SYSTEM_GATEWAY_DIR even when that relative directory holds a registry", () => {
    home.gateway("sys", "https://10.0.0.1:17670", {}, "system");
    const r = createRegistry({ ...home.env, OPENSHELL_SYSTEM_GATEWAY_DIR: "etc-openshell" }, home.dir);
    const cwd = process.cwd();
    process.chdir(home.dir);
    try {
      expect(r.systemDir).toBe("/etc/openshell");
      expect(r.entry("sys")).toBeUndefined();
    } finally {
      process.chdir(cwd);
    }
  });
});

describe("entries", () => {
  it("reads a user entry: endpoint, auth mode (absent means mtls), its source and file", () => {
    const file = home.gateway("openshell", "https://127.0.0.1:17670");
    expect(registry().entry("openshell")).toMatchObject({
      name: "openshell",
      source: "user",
      metadataFile: file,
      metadata: { endpoint: "https://127.0.0.1:17670", authMode: "mtls", authModeDefaulted: true, isRemote: false, gatewayPort: 17670 },
    });
  });

  it("finds a system entry when the user registry has none, and a user entry of the same name shadows it", () => {
    home.gateway("lab", "https://system.example:8443", {}, "system");
    expect(registry().entry("lab")).toMatchObject({ source: "system", metadata: { endpoint: "https://system.example:8443" } });
    home.gateway("lab", "https://user.example:8443", { auth_mode: "plaintext" });
    expect(registry().entry("lab")).toMatchObject({ source: "user", metadata: { endpoint: "https://user.example:8443", authMode: "plaintext" } });
  });

  it("a user directory with only a bundle (no metadata.json) does not shadow the system entry", async () => {
    home.gateway("lab", "https://system.example:8443", {}, "system");
    mkdirSync(join(home.user, "gateways", "lab", "mtls"), { recursive: true });
    expect(registry().entry("lab")?.source).toBe("system");
  });

  it("a broken user metadata.json is an error naming it, not a fall-back to the system entry", () => {
    home.gateway("lab", "https://system.example:8443", {}, "system");
    const file = home.rawMetadata("lab", "{");
    expect(configError(() => registry().entry("lab"))).toBe(`gateway metadata ${file} is not valid JSON (at position 1)`);
  });

  it("returns nothing for a name neither registry has", () => {
    expect(registry().entry("nowhere")).toBeUndefined();
  });

  it("rejects gateway names that are not one path component, before touching the disk", () => {
    for (const bad of ["../x", "a/b", ".", "..", "", "a\0b", "x".repeat(256)]) {
      expect(gatewayNameProblem(bad), JSON.stringify(bad)).toBeDefined();
      expect(configError(() => registry().entry(bad))).toMatch(/is not a gateway name \(one path component\)/);
    }
    expect(gatewayNameProblem("lab east.1_x-y")).toBeUndefined();
  });
});

describe("the active gateway", () => {
  it("is the user's active_gateway, else the system's, trimmed; an empty file names none", () => {
    expect(registry().active()).toBeUndefined();
    const sys = home.active("from-system", "system");
    expect(registry().active()).toEqual({ name: "from-system", source: "system", file: sys });
    const user = home.active("from-user");
    expect(registry().active()).toEqual({ name: "from-user", source: "user", file: user });
    writeFileSync(user, "  \n");
    expect(registry().active()?.name).toBe("from-system");
  });

  it("refuses an active_gateway that names a path, naming the file", () => {
    const file = home.active("../../etc");
    expect(configError(() => registry().active())).toBe(`the active gateway in ${file} is not a gateway name (one path component): it contains /`);
  });

  it("refuses an active_gateway larger than 1 KiB", () => {
    const file = join(home.user, "active_gateway");
    writeFileSync(file, "x".repeat(2000));
    expect(configError(() => registry().active())).toBe(`cannot read ${file}: it is larger than 1 KiB (2000 bytes)`);
  });
});

describe("metadata.json checks", () => {
  const FILE = "/r/gateways/lab/metadata.json";
  const parse = (value: unknown) => parseGatewayMetadata(typeof value === "string" ? value : JSON.stringify(value), FILE, "lab");
  const base = { name: "lab", gateway_endpoint: "https://lab.example:8443", is_remote: true, gateway_port: 8443 };

  it("reads every field, the old Cloudflare names as aliases, ignores unknown ones, defaults the audience to the client id", () => {
    const m = parse({
      ...base,
      auth_mode: "oidc",
      remote_host: "me@lab",
      resolved_host: "10.0.0.5",
      cf_team_domain: "team.cloudflareaccess.com",
      cf_auth_url: "https://team.example/auth",
      oidc_issuer: "https://idp.example/realms/x",
      oidc_client_id: "openshell-cli",
      oidc_scopes: "openid  offline_access sandbox:write",
      vm_driver_state_dir: "/var/lib/vm",
      something_new: { any: "thing" },
    });
    expect(m).toMatchObject({
      authMode: "oidc",
      authModeDefaulted: false,
      remoteHost: "me@lab",
      resolvedHost: "10.0.0.5",
      edgeTeamDomain: "team.cloudflareaccess.com",
      edgeAuthUrl: "https://team.example/auth",
      oidcIssuer: "https://idp.example/realms/x",
      oidcClientId: "openshell-cli",
      oidcAudience: "openshell-cli",
      oidcScopes: ["openid", "offline_access", "sandbox:write"],
      vmDriverStateDir: "/var/lib/vm",
    });
    expect(parse({ ...base, oidc_client_id: "c", oidc_audience: "api", remote_host: null })).toMatchObject({ oidcAudience: "api", remoteHost: undefined });
  });

  it.each([
    ["[]", "gateway metadata /r/gateways/lab/metadata.json must hold a JSON object"],
    [{ gateway_endpoint: "https://x" }, '"name" is required (a non-empty string)'],
    [{ ...base, name: "other" }, '"name" is "other", but the gateway\'s directory is "lab"'],
    [{ name: "lab" }, '"gateway_endpoint" is required (a non-empty string)'],
    [{ ...base, gateway_endpoint: 8443 }, '"gateway_endpoint" must be a string'],
    [{ ...base, gateway_endpoint: "lab:8443" }, '"gateway_endpoint" must be an http:// or https:// URL; got "lab:8443"'],
    [{ ...base, gateway_endpoint: "not a url" }, '"gateway_endpoint" is not a URL: "not a url"'],
    [{ ...base, is_remote: "yes" }, '"is_remote" must be true or false'],
    [{ ...base, gateway_port: 70000 }, '"gateway_port" must be a port number (0 to 65535)'],
    [{ ...base, auth_mode: "kerberos" }, '"auth_mode" must be mtls, plaintext, oidc or cloudflare_jwt (absent means mtls); got "kerberos"'],
    [{ ...base, oidc_issuer: 5 }, '"oidc_issuer" must be a string'],
    [{ ...base, edge_team_domain: "a", cf_team_domain: "b" }, '"edge_team_domain" and its old name "cf_team_domain" are both set; keep one'],
  ])("rejects %j, naming the file and the field", (value, message) => {
    let err: unknown;
    try {
      parse(value);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(FILE);
    expect((err as Error).message).toContain(message);
  });

  it("never echoes credentials in an endpoint, nor the text of a file that is not JSON", () => {
    const creds = () => parse({ ...base, gateway_endpoint: "https://admin:hunter2@lab.example" });
    expect(creds).toThrow('"gateway_endpoint" must not contain credentials');
    expect(creds).not.toThrow(/hunter2/);
    expect(() => parse("s3cret-token")).toThrow(`gateway metadata ${FILE} is not valid JSON`);
    expect(() => parse("s3cret-token")).not.toThrow(/s3cret/);
  });
});

describe("bounds and odd files", () => {
  it("refuses a metadata.json larger than 64 KiB, naming it", () => {
    const file = home.rawMetadata("big", JSON.stringify({ name: "big", gateway_endpoint: "https://x", pad: "x".repeat(MAX_METADATA_BYTES) }));
    expect(configError(() => registry().entry("big"))).toMatch(new RegExp(`^cannot read gateway metadata ${file}: it is larger than 64 KiB \\(\\d+ bytes\\)$`));
  });

  it("refuses a FIFO or a directory as metadata.json without blocking", () => {
    mkdirSync(join(home.user, "gateways", "fifo"), { recursive: true });
    const fifo = join(home.user, "gateways", "fifo", "metadata.json");
    execFileSync("mkfifo", [fifo]);
    expect(configError(() => registry().entry("fifo"))).toBe(`cannot read gateway metadata ${fifo}: it is not a regular file`);
    const dir = join(home.user, "gateways", "dir", "metadata.json");
    mkdirSync(dir, { recursive: true });
    expect(configError(() => registry().entry("dir"))).toBe(`cannot read gateway metadata ${dir}: it is a directory`);
  });

  it(`reads at most ${MAX_ENTRIES} entries of a gateways directory, and says so`, () => {
    for (let i = 0; i < MAX_ENTRIES + 5; i++) mkdirSync(join(home.user, "gateways", `g${String(i).padStart(4, "0")}`), { recursive: true });
    home.gateway("a-real-one", "https://x.example");
    const { entries, problems } = registry().list();
    expect(problems).toContain(`${join(home.user, "gateways")} has more than ${MAX_ENTRIES} entries; only the first ${MAX_ENTRIES} were read`);
    expect(entries.length).toBeLessThanOrEqual(1);
  });
});

describe("list", () => {
  it("lists both registries by name, a user entry hiding the system one, and reports a broken entry that still hides its system namesake", () => {
    home.gateway("openshell", "https://127.0.0.1:17670");
    home.gateway("zeta", "http://zeta.example:8080", { auth_mode: "plaintext" }, "system");
    home.gateway("lab", "https://system-lab.example", {}, "system");
    home.gateway("lab", "https://user-lab.example", { auth_mode: "oidc" });
    home.gateway("broken", "https://system-broken.example", {}, "system");
    const brokenFile = home.rawMetadata("broken", '{"name": "broken"}');
    const { entries, problems } = registry().list();
    expect(entries.map((e) => [e.name, e.source, e.metadata.endpoint])).toEqual([
      ["lab", "user", "https://user-lab.example"],
      ["openshell", "user", "https://127.0.0.1:17670"],
      ["zeta", "system", "http://zeta.example:8080"],
    ]);
    expect(problems).toEqual([`gateway metadata ${brokenFile}: "gateway_endpoint" is required (a non-empty string)`]);
  });
});

describe("the mTLS bundle and the OIDC token of an entry", () => {
  it("replaces characters outside [A-Za-z0-9._-] in the bundle directory's name, and never lets it climb", () => {
    expect(sanitizeName("lab east/1:2")).toBe("lab_east_1_2");
    expect(mtlsDir("/r", "gw.example.com")).toBe("/r/gateways/gw.example.com/mtls");
    expect(mtlsDir("/r", "[::1]")).toBe("/r/gateways/___1_/mtls");
    expect(mtlsDir("/r", "..")).toBe("/r/gateways/_/mtls");
  });

  it("maps a bare endpoint to the name of its bundle: the host, 127.0.0.1 and localhost being openshell", () => {
    expect(nameForEndpoint("https://127.0.0.1:17670")).toBe("openshell");
    expect(nameForEndpoint("https://LOCALHOST:1")).toBe("openshell");
    expect(nameForEndpoint("https://gw.example.com:8443/x")).toBe("gw.example.com");
  });

  it("takes a user entry's bundle from the user registry only; a system entry's from the user registry when there, else beside it", () => {
    home.gateway("mine", "https://mine.example");
    home.gateway("sys", "https://sys.example", {}, "system");
    const r = registry();
    expect(r.bundleDir("mine", r.entry("mine"))).toBe(join(home.user, "gateways", "mine", "mtls"));
    expect(r.bundleDir("sys", r.entry("sys"))).toBe(join(home.system, "gateways", "sys", "mtls"));
    mkdirSync(join(home.user, "gateways", "sys", "mtls"), { recursive: true });
    expect(r.bundleDir("sys", r.entry("sys"))).toBe(join(home.user, "gateways", "sys", "mtls"));
    // No entry (an endpoint given directly): wherever a bundle by that name is, else the user's.
    expect(r.bundleDir("nobody", undefined)).toBe(join(home.user, "gateways", "nobody", "mtls"));
    mkdirSync(join(home.system, "gateways", "nobody", "mtls"), { recursive: true });
    expect(r.bundleDir("nobody", undefined)).toBe(join(home.system, "gateways", "nobody", "mtls"));
  });

  it("reads a system entry's OIDC token beside it until the user registry has one, and writes a refreshed one to the user registry", () => {
    home.gateway("remote", "https://remote.example", { auth_mode: "oidc" }, "system");
    const r = registry();
    const userFile = join(home.user, "gateways", "remote", "oidc_token.json");
    expect(r.oidcTokenFiles(r.entry("remote")!)).toEqual({ read: join(home.system, "gateways", "remote", "oidc_token.json"), write: userFile });
    home.oidcToken("remote", { access_token: "a", issuer: "https://i", client_id: "c" });
    expect(r.oidcTokenFiles(r.entry("remote")!)).toEqual({ read: userFile, write: userFile });
  });
});
