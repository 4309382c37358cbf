// `openshell-config gateway list` and `gateway current`, and the one-line errors of a registry
// gateway that cannot be used, from the built binary in a throwaway home (no gateway is needed:
// these fail or answer before any connection). The 80-column screens come from a real
// pseudo-terminal (tmux) and are saved to test-results/.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "../../examples/tls/pki.js";
import { BIN, build, ROOT, runBash, runBinary, type Run } from "./harness.js";
import { createFakeHome, type FakeHome } from "./registry-fixture.js";
import { hasTmux, startInPane } from "./tmux.js";

let home: FakeHome;
let pki: TestPki;
let tokenFile: string;
let expiredTokenFile: string;
const ACCESS = "eyJ-access-token-value-that-must-never-be-printed";
const REFRESH = "refresh-token-value-that-must-never-be-printed";

function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return runBinary(args, home.dir, { PATH: process.env.PATH, ...home.env, ...env });
}

beforeAll(async () => {
  [pki] = await Promise.all([createTestPki(), build()]);
  home = createFakeHome();
  home.gateway("openshell", "https://127.0.0.1:17670");
  home.bundle("openshell", pki.ca, pki.client);
  home.gateway("lab", "https://lab.example:8443", { auth_mode: "oidc", oidc_issuer: "https://idp.example", oidc_client_id: "openshell-cli" });
  tokenFile = home.oidcToken("lab", { access_token: ACCESS, refresh_token: REFRESH, expires_at: 4102444800, issuer: "https://idp.example", client_id: "openshell-cli" });
  home.gateway("lab", "https://system-lab.example:8443", {}, "system");
  home.gateway("sys", "https://sys.example:17670", {}, "system");
  home.gateway("plain", "http://plain.example:8080", { auth_mode: "plaintext" }, "system");
  home.gateway("cf", "https://cf.example", { auth_mode: "cloudflare_jwt", cf_team_domain: "team.cloudflareaccess.com" });
  home.gateway("nokey", "https://127.0.0.1:1");
  home.bundle("nokey", pki.ca, pki.client);
  rmSync(join(home.user, "gateways", "nokey", "mtls", "tls.key"));
  home.gateway("expired", "https://lab.example:8443", { auth_mode: "oidc" });
  expiredTokenFile = home.oidcToken("expired", { access_token: ACCESS, expires_at: 1000, issuer: "https://idp.example", client_id: "openshell-cli" });
  home.active("openshell");
}, 120_000);

afterAll(() => home?.cleanup());

const LIST = [
  "ACTIVE  NAME       ENDPOINT                   AUTH            SOURCE",
  "        cf         https://cf.example         cloudflare_jwt  user",
  "        expired    https://lab.example:8443   oidc            user",
  "        lab        https://lab.example:8443   oidc            user",
  "        nokey      https://127.0.0.1:1        mtls            user",
  "*       openshell  https://127.0.0.1:17670    mtls            user",
  "        plain      http://plain.example:8080  plaintext       system",
  "        sys        https://sys.example:17670  mtls            system",
];

describe("gateway list", () => {
  it("lists both registries by name, the user's lab hiding the system's, the active one starred; nothing else on stdout", async () => {
    const r = await cli(["gateway", "list"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${LIST.join("\n")}\n`);
  });

  it("-o json and -o yaml print the same entries as one document", async () => {
    const r = await cli(["gateway", "list", "-o", "json"]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { gateways: { name: string; endpoint: string; authMode: string; source: string; active: boolean; metadataFile: string }[]; active: { name: string; file: string } };
    expect(doc.gateways.map((g) => [g.name, g.source, g.active])).toEqual([
      ["cf", "user", false],
      ["expired", "user", false],
      ["lab", "user", false],
      ["nokey", "user", false],
      ["openshell", "user", true],
      ["plain", "system", false],
      ["sys", "system", false],
    ]);
    expect(doc.gateways[2]).toEqual({ name: "lab", endpoint: "https://lab.example:8443", authMode: "oidc", source: "user", active: false, metadataFile: join(home.user, "gateways", "lab", "metadata.json") });
    expect(doc.active).toEqual({ name: "openshell", file: join(home.user, "active_gateway") });
    const yaml = await cli(["gateway", "list", "-o", "yaml"]);
    expect(yaml.stdout).toMatch(/^gateways:\n {2}- name: cf\n/);
  });

  it("an empty registry prints nothing on stdout and a hint on stderr", async () => {
    const empty = join(home.dir, "empty");
    const r = await cli(["gateway", "list"], { XDG_CONFIG_HOME: join(empty, "xdg"), OPENSHELL_SYSTEM_GATEWAY_DIR: join(empty, "system") });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `no gateways registered in ${join(empty, "xdg", "openshell")} or ${join(empty, "system")}; register one with "openshell gateway add URL", or pass --gateway-endpoint URL\n`,
    );
  });

  it("an entry that cannot be read is skipped with a warning naming its file", async () => {
    const broken = home.rawMetadata("broken", "{}", "system");
    try {
      const r = await cli(["gateway", "list"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${LIST.join("\n")}\n`);
      expect(r.stderr).toBe(`warning: gateway metadata ${broken}: "name" is required (a non-empty string)\n`);
    } finally {
      rmSync(join(home.system, "gateways", "broken"), { recursive: true });
    }
  });
});

describe("gateway current", () => {
  it("shows the active gateway, where each value came from and the files it reads", async () => {
    const r = await cli(["gateway", "current"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const mtls = join(home.user, "gateways", "openshell", "mtls");
    expect(r.stdout).toBe(
      [
        "gateway    openshell (the active gateway; user registry)",
        `endpoint   https://127.0.0.1:17670 (metadata.json)`,
        "auth       mtls (auth_mode absent)",
        "tls        https with the mTLS bundle below, all three files required",
        "token      none",
        "workspace  the gateway's default (no --workspace, no OPENSHELL_WORKSPACE)",
        "",
        "files:",
        // Consulted before the registry's active gateway: this CLI's own config file.
        `  missing  ${join(home.xdg, "openshell-config", "config.json")}`,
        `  present  ${join(home.user, "active_gateway")}`,
        `  present  ${join(home.user, "gateways", "openshell", "metadata.json")}`,
        `  present  ${join(mtls, "ca.crt")}`,
        `  present  ${join(mtls, "tls.crt")}`,
        `  present  ${join(mtls, "tls.key")}`,
        "",
      ].join("\n"),
    );
  });

  it("follows -g and OPENSHELL_WORKSPACE, shows the OIDC session's expiry and never a token", async () => {
    const r = await cli(["gateway", "current", "-g", "lab"], { OPENSHELL_WORKSPACE: "team-a" });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("gateway    lab (-g; user registry)\n");
    expect(r.stdout).toContain("token      OIDC session from oidc_token.json (expires 2100-01-01T00:00:00.000Z; refreshed with its refresh token when needed)\n");
    expect(r.stdout).toContain("workspace  team-a (OPENSHELL_WORKSPACE)\n");
    expect(r.stdout).toContain(`  present  ${tokenFile}\n`);
    for (const format of ["table", "json", "yaml"]) {
      const out = await cli(["gateway", "current", "-g", "lab", "-o", format]);
      expect(out.stdout).not.toContain(ACCESS);
      expect(out.stdout).not.toContain(REFRESH);
      expect(out.stdout).not.toContain("PRIVATE KEY");
    }
  });

  it("-o json says where each value came from, and which files exist and are required", async () => {
    const r = await cli(["gateway", "current", "-o", "json", "--gateway-endpoint", "https://127.0.0.1:9443"], { OPENSHELL_GATEWAY: "nokey", OPENSHELL_TOKEN: "tok-from-env" });
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Record<string, unknown>;
    const mtls = join(home.user, "gateways", "nokey", "mtls");
    expect(doc).toMatchObject({
      gateway: { name: "nokey", from: "env", registry: "user" },
      endpoint: "https://127.0.0.1:9443",
      endpointFrom: "flag",
      endpointSource: "--gateway-endpoint",
      authMode: "mtls",
      tls: { bundleDir: mtls, bundle: "required", insecure: false },
      token: { from: "env" },
      files: [
        { role: "metadata", path: join(home.user, "gateways", "nokey", "metadata.json"), exists: true, required: true },
        { role: "ca", path: join(mtls, "ca.crt"), exists: true, required: true },
        { role: "cert", path: join(mtls, "tls.crt"), exists: true, required: true },
        { role: "key", path: join(mtls, "tls.key"), exists: false, required: true },
      ],
    });
    expect(r.stdout).not.toContain("tok-from-env");
  });
});

describe("a registry gateway that cannot be used: one line, exit 2", () => {
  it("a missing client key names the file", async () => {
    const r = await cli(["sandbox", "list", "-g", "nokey"]);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: no mTLS client key at ${join(home.user, "gateways", "nokey", "mtls", "tls.key")}\n`);
    expect(r.code).toBe(2);
  });

  it("a FIFO in place of a bundle file is refused at once, not waited on", async () => {
    home.gateway("fifo", "https://127.0.0.1:1");
    const mtls = home.bundle("fifo", pki.ca, pki.client);
    rmSync(join(mtls, "tls.key"));
    execFileSync("mkfifo", [join(mtls, "tls.key")]);
    try {
      const r = await cli(["sandbox", "list", "-g", "fifo"]);
      expect(r.stderr).toBe(`error: cannot read ${join(mtls, "tls.key")}: it is not a regular file\n`);
      expect(r.code).toBe(2);
    } finally {
      rmSync(join(home.user, "gateways", "fifo"), { recursive: true });
    }
  });

  it("a Cloudflare Access gateway is not supported", async () => {
    const r = await cli(["policy", "get", "-s", "web", "-g", "cf"]);
    expect(r.stderr).toBe('error: gateway "cf" uses Cloudflare Access (auth_mode cloudflare_jwt), which openshell-config does not support; use a gateway with mtls, oidc or plaintext\n');
    expect(r.code).toBe(2);
  });

  it("an unknown -g suggests the near name", async () => {
    const r = await cli(["sandbox", "list", "-g", "opnshell"]);
    expect(r.stderr).toBe(
      `error: unknown gateway "opnshell" (-g): no metadata.json in ${home.user}/gateways/opnshell or ${home.system}/gateways/opnshell; did you mean "openshell"?\n`,
    );
    expect(r.code).toBe(2);
  });

  it("an oidc gateway whose session expired without a refresh token says to sign in again", async () => {
    const r = await cli(["sandbox", "list", "-g", "expired"]);
    expect(r.stderr).toBe(`error: the OIDC token in ${expiredTokenFile} expired at 1970-01-01T00:16:40.000Z and has no refresh token; run "openshell gateway login expired"\n`);
    expect(r.code).toBe(2);
  });
});

describe("completion", () => {
  it("bash completes -g and --gateway with the names registered in both registries", async () => {
    const script = (words: string[]) =>
      `source <("${process.execPath}" "${BIN}" completion bash); COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _openshell_config; echo "\${COMPREPLY[*]}"`;
    const complete = async (...words: string[]) => {
      const r = await runBash(script(words), undefined, { PATH: process.env.PATH, ...home.env });
      expect(r.stderr).toBe("");
      return r.stdout.trim().split(" ");
    };
    expect(await complete("openshell-config", "-g", "")).toEqual(["cf", "expired", "lab", "nokey", "openshell", "plain", "sys"]);
    expect(await complete("openshell-config", "sandbox", "list", "--gateway", "o")).toEqual(["openshell"]);
    expect(await complete("openshell-config", "gateway", "")).toEqual(["list", "current"]);

    // A directory name is data: one that reads as shell syntax is neither offered nor run.
    const evil = join(home.env.OPENSHELL_SYSTEM_GATEWAY_DIR!, "gateways", "$(touch pwned)");
    mkdirSync(evil, { recursive: true });
    writeFileSync(join(evil, "metadata.json"), "{}");
    try {
      expect(await complete("openshell-config", "-g", "")).toEqual(["cf", "expired", "lab", "nokey", "openshell", "plain", "sys"]);
      expect(existsSync(join(process.cwd(), "pwned"))).toBe(false);
    } finally {
      rmSync(evil, { recursive: true, force: true });
    }
  });
});

describe("at 80 columns in a terminal", () => {
  it("gateway list and gateway current fit, each printed line one row", async () => {
    if (!(await hasTmux())) throw new Error("this test needs tmux (e.g. apt-get install tmux)");
    // Short paths, as a user's would be: the pane's home is a short symbolic name.
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", ...home.env };
    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    for (const [name, args] of [
      ["gateway-list-80.txt", ["gateway", "list"]],
      ["gateway-current-80.txt", ["gateway", "current"]],
    ] as const) {
      const run = await startInPane(80, args, env, home.dir);
      const screen = await run.finish();
      expect(screen.code).toBe(0);
      // No line wrapped: as many rows as lines, and every row within 80 columns.
      expect(screen.rows).toEqual(screen.lines);
      for (const row of screen.rows) expect([...row].length).toBeLessThanOrEqual(80);
      if (name === "gateway-list-80.txt") expect(screen.rows).toEqual(LIST);
      else expect(screen.rows[0]).toBe("gateway    openshell (the active gateway; user registry)");
      writeFileSync(join(ROOT, "test-results", name), `${screen.rows.join("\n")}\n`);
    }
  });
});
