// Where the command line gets the gateway URL and the token (cli/config.ts): flags win over
// the environment, which wins over the config file, for each of the two independently.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, defaultConfigPath, resolveConfig } from "../../cli/config.js";

/** A home directory whose config file holds `content` (an object, or raw text). */
const homes: string[] = [];
afterAll(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function home(content?: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "openshell-cli-config-"));
  homes.push(dir);
  if (content !== undefined) {
    mkdirSync(join(dir, ".config", "openshell-config"), { recursive: true });
    writeFileSync(join(dir, ".config", "openshell-config", "config.json"), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

const FILE = { url: "http://file.example:1", token: "file-token" };
const ENV = { OPENSHELL_GATEWAY_URL: "http://env.example:2", OPENSHELL_TOKEN: "env-token" };
const FLAGS = { url: "http://flag.example:3", token: "flag-token" };

function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration precedence", () => {
  it("takes the URL and token from the config file when nothing else gives them", () => {
    const c = resolveConfig({}, {}, { home: home(FILE) });
    expect(c).toMatchObject({ url: FILE.url, urlSource: "file", token: FILE.token, tokenSource: "file" });
  });

  it("prefers the environment over the config file", () => {
    const c = resolveConfig({}, ENV, { home: home(FILE) });
    expect(c).toMatchObject({ url: ENV.OPENSHELL_GATEWAY_URL, urlSource: "env", token: "env-token", tokenSource: "env" });
  });

  it("prefers flags over the environment and the config file", () => {
    const c = resolveConfig(FLAGS, ENV, { home: home(FILE) });
    expect(c).toMatchObject({ url: FLAGS.url, urlSource: "flag", token: "flag-token", tokenSource: "flag" });
  });

  it("resolves the URL and the token independently of each other", () => {
    const c = resolveConfig({ url: FLAGS.url }, { OPENSHELL_TOKEN: "env-token" }, { home: home(FILE) });
    expect(c).toMatchObject({ url: FLAGS.url, urlSource: "flag", token: "env-token", tokenSource: "env" });
    const d = resolveConfig({}, { OPENSHELL_GATEWAY_URL: ENV.OPENSHELL_GATEWAY_URL }, { home: home(FILE) });
    expect(d).toMatchObject({ urlSource: "env", token: "file-token", tokenSource: "file" });
  });

  it("treats an empty environment variable as unset", () => {
    const c = resolveConfig({}, { OPENSHELL_GATEWAY_URL: "", OPENSHELL_TOKEN: "" }, { home: home(FILE) });
    expect(c).toMatchObject({ urlSource: "file", tokenSource: "file" });
  });

  it("runs without a token when none is given anywhere (the gateway decides)", () => {
    const c = resolveConfig({ url: FLAGS.url }, {}, { home: home() });
    expect(c.token).toBeUndefined();
    expect(c.tokenSource).toBeUndefined();
  });

  it("does not read the config file when flags and environment give everything", () => {
    const c = resolveConfig(FLAGS, {}, { home: home("{ not json") });
    expect(c.urlSource).toBe("flag");
  });

  it("uses $XDG_CONFIG_HOME for the default config file when it is set", () => {
    expect(defaultConfigPath({ XDG_CONFIG_HOME: "/xdg" }, "/home/u")).toBe("/xdg/openshell-config/config.json");
    expect(defaultConfigPath({}, "/home/u")).toBe("/home/u/.config/openshell-config/config.json");
  });

  it("reads --config FILE instead of the default, and requires it to exist", () => {
    const dir = home();
    const file = join(dir, "other.json");
    writeFileSync(file, JSON.stringify({ url: "http://other.example:4" }));
    expect(resolveConfig({ config: file }, {}, { home: home(FILE) })).toMatchObject({ url: "http://other.example:4", token: undefined, file });
    expect(configError(() => resolveConfig({ config: join(dir, "missing.json"), url: FLAGS.url }, {})).message).toMatch(/cannot read config file .*missing\.json: no such file/);
  });
});

describe("configuration errors", () => {
  it("names every place a gateway can come from when there is none", () => {
    const dir = home();
    const err = configError(() => resolveConfig({}, { OPENSHELL_SYSTEM_GATEWAY_DIR: join(dir, "system") }, { home: dir }));
    expect(err.message).toBe(
      `no gateway: pass -g NAME or --url URL, set OPENSHELL_GATEWAY or OPENSHELL_GATEWAY_URL, put "url" in ${join(dir, ".config", "openshell-config", "config.json")}, or register one with the openshell CLI (no active_gateway in ${join(dir, ".config", "openshell")} or ${join(dir, "system")})`,
    );
  });

  it("rejects a config file that is not a JSON object, naming the file", () => {
    expect(configError(() => resolveConfig({}, {}, { home: home("{ url: ") })).message).toMatch(/config file .*config\.json is not valid JSON \(at position 2\)$/);
    // The parser's own message would quote the text, which may be the token.
    const quoted = configError(() => resolveConfig({}, {}, { home: home("s3cret-token") })).message;
    expect(quoted).toMatch(/config file .*config\.json is not valid JSON$/);
    expect(quoted).not.toContain("s3cret");
    expect(configError(() => resolveConfig({}, {}, { home: home("[]") })).message).toMatch(/must hold a JSON object/);
  });

  it("refuses a config file larger than 64 KiB, or one that is not a regular file, naming it", () => {
    const big = home(JSON.stringify({ url: FILE.url, token: "x".repeat(70_000) }));
    expect(configError(() => resolveConfig({}, {}, { home: big })).message).toMatch(/^cannot read config file .*config\.json: it is larger than 64 KiB \(\d+ bytes\)$/);
    const dir = home();
    mkdirSync(join(dir, "as-dir.json"));
    expect(configError(() => resolveConfig({ config: join(dir, "as-dir.json") }, {})).message).toBe(`cannot read config file ${join(dir, "as-dir.json")}: it is a directory`);
  });

  it("rejects unknown keys and non-string values without echoing the values", () => {
    expect(configError(() => resolveConfig({}, {}, { home: home({ url: FILE.url, tokne: "s3cret-value" }) })).message).toMatch(/unknown key "tokne"/);
    const err = configError(() => resolveConfig({}, {}, { home: home({ url: FILE.url, token: 12345678 }) }));
    expect(err.message).toMatch(/"token" must be a non-empty string/);
    expect(err.message).not.toContain("12345678");
  });

  it("rejects a URL that is not http(s), or that carries credentials, naming where it came from", () => {
    expect(configError(() => resolveConfig({ url: "gateway:8080" }, {})).message).toMatch(/--url must be an http:\/\/ or https:\/\/ URL/);
    expect(configError(() => resolveConfig({}, { OPENSHELL_GATEWAY_URL: "not a url" })).message).toMatch(/OPENSHELL_GATEWAY_URL is not a URL/);
    const err = configError(() => resolveConfig({}, {}, { home: home({ url: "https://user:hunter2@gw.example" }) }));
    expect(err.message).toMatch(/"url" in .*config\.json must not contain credentials/);
    expect(err.message).not.toContain("hunter2");
    // Neither when the URL is refused for another reason first (a bad port, another scheme).
    for (const url of ["https://admin:s3cretpassword@gw:99999", "ftp://admin:s3cretpassword@gw/"]) {
      const bad = configError(() => resolveConfig({ url }, {}));
      expect(bad.message).toContain("…@gw");
      expect(bad.message, bad.message).not.toContain("s3cretpassword");
    }
  });
});
