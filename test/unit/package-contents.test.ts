// What `npm publish` would ship, as `npm pack --dry-run` lists it (without running prepack, so
// the listing is of the dist/ that is there; it also works before a build): the licence text
// that package.json names, and no source maps (tsup.config.ts says why: they embedded every
// source, or would point at src/, which is not published); and that every entry point in
// "exports" is built by tsup.config.ts and documented by typedoc.json.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function packedFiles(): string[] {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const [pack] = JSON.parse(out) as [{ files: { path: string }[] }];
  return pack.files.map((f) => f.path);
}

describe("the published package", () => {
  const files = packedFiles();

  it("ships LICENSE, the Apache License 2.0 that package.json's license names", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { license: string };
    expect(pkg.license).toBe("Apache-2.0");
    expect(files).toContain("LICENSE");
    const text = readFileSync(join(ROOT, "LICENSE"), "utf8");
    expect(text).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
    expect(text).toContain("Copyright 2026 the openshell-config authors");
  });

  it("builds, documents and exports the same entry points (openshell-config/oidc among them)", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    const exported = Object.keys(pkg.exports)
      .filter((k) => k !== "./package.json")
      .map((k) => (k === "." ? "index" : k.slice(2)))
      .sort();
    const tsup = readFileSync(join(ROOT, "tsup.config.ts"), "utf8");
    const entryBlock = /const entry = \{([^}]*)\}/.exec(tsup)![1]!;
    const built = [...entryBlock.matchAll(/^\s*"?([\w/]+)"?:\s*"src\/([\w/.-]+)\.ts"/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(built.map(([name]) => name).sort()).toEqual(exported);
    const typedoc = JSON.parse(readFileSync(join(ROOT, "typedoc.json"), "utf8")) as { entryPoints: string[] };
    expect([...typedoc.entryPoints].sort()).toEqual(built.map(([, source]) => `src/${source}.ts`).sort());
    expect(exported).toContain("oidc");
  });

  it("ships no source maps", () => {
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
    const config = readFileSync(join(ROOT, "tsup.config.ts"), "utf8");
    expect(config).not.toMatch(/sourcemap:\s*(true|"inline")/);
  });
});
