// openshell-config/oidc is browser-safe: esbuild bundles src/oidc.ts for the browser with no Node
// built-in anywhere in what it imports, and the bundle, run as it is, gets a token from the test
// issuer through the fetch it is handed (the global one made to fail meanwhile).

import { builtinModules } from "node:module";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import type * as OidcModule from "../../src/oidc.js";
import { issuerForTest, verified } from "./oidc-helpers.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Records every import of a Node built-in instead of letting esbuild fail on the first. */
function builtinSpy(found: string[]): Plugin {
  return {
    name: "node-builtins",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!args.path.startsWith("node:") && !BUILTINS.has(args.path)) return undefined;
        found.push(`${args.path} (imported by ${args.importer.slice(ROOT.length + 1)})`);
        return { path: args.path, external: true };
      });
    },
  };
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe("openshell-config/oidc in a browser", () => {
  it("bundles for platform browser with no Node built-in, and runs against the issuer with the fetch it is given", async () => {
    const found: string[] = [];
    const result = await build({
      entryPoints: [join(ROOT, "src/oidc.ts")],
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      logLevel: "silent",
      plugins: [builtinSpy(found)],
    });
    expect(found).toEqual([]);
    const code = result.outputFiles[0]!.text;
    expect(code).toContain("oauth4webapi");
    expect(code).not.toMatch(/\brequire\(\s*["']/);

    const dir = await mkdtemp(join(tmpdir(), "oidc-browser-"));
    dirs.push(dir);
    const file = join(dir, "oidc.mjs");
    await writeFile(file, code);
    const bundled = (await import(pathToFileURL(file).href)) as typeof OidcModule;

    const issuer = await issuerForTest({ clients: { svc: { secret: "browser-secret" } } });
    const realFetch = globalThis.fetch;
    const asked: string[] = [];
    const token = bundled.oidcClientCredentials({
      issuer: issuer.issuer,
      clientId: "svc",
      clientSecret: "browser-secret",
      fetch: (url, init) => (asked.push(url), realFetch(url, init)),
    });
    globalThis.fetch = () => Promise.reject(new Error("the global fetch was used"));
    let jwt: string;
    try {
      jwt = await token();
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(asked).toEqual([`${issuer.issuer}/.well-known/openid-configuration`, issuer.tokenEndpoint]);
    expect(await verified(issuer, jwt, "svc")).toMatchObject({ sub: "svc" });
  });
});
