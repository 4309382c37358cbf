// Scenario 6, browser bundle: `npx size-limit --json` (package.json "size-limit": brotli sizes
// of what a browser app importing createConfigClient ships). dist/ is rebuilt first only when a
// source file is newer than it. Beside it, connect-web's own floor: the same five methods over
// connect-web alone, bundled the same way as createConfigClient.

import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync } from "node:zlib";
import { buildSync } from "esbuild";
import { ROOT } from "../lib/proc.js";
import type { Context } from "./common.js";

export interface SizeEntry {
  readonly name: string;
  readonly bytes: number;
  readonly limitBytes: number;
  readonly passed: boolean;
}

export interface SizeResult {
  readonly entries: SizeEntry[];
  /** The createConfigClient entry. */
  readonly createConfigClient: SizeEntry | undefined;
  readonly rebuilt: boolean;
  /**
   * connect-web's own floor, by one measure for both (esbuild bundle, minified, brotli): a browser
   * client of the same five methods (src/rpc.ts ConfigRpc) over connect-web's Connect transport,
   * against `createConfigClient` from dist/index.js.
   */
  readonly floor?: { readonly floorBytes: number; readonly oursBytes: number };
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export function sizeScenario(ctx: Context): SizeResult {
  const dist = join(ROOT, "dist/index.js");
  const stale = !existsSync(dist) || newestMtime(join(ROOT, "src")) > statSync(dist).mtimeMs;
  if (stale) {
    ctx.say("size: dist/ is older than src/; npm run build");
    execFileSync("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  }
  let out: string;
  try {
    out = execFileSync("npx", ["size-limit", "--json"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    // A budget exceeded exits 1 and still prints the figures.
    out = String((err as { stdout?: unknown }).stdout ?? "");
    if (!out.trim().startsWith("[")) throw err;
  }
  const parsed = JSON.parse(out) as { name: string; size: number; sizeLimit: number; passed: boolean }[];
  const entries = parsed.map((e) => ({ name: e.name, bytes: e.size, limitBytes: e.sizeLimit, passed: e.passed }));
  return { entries, createConfigClient: entries.find((e) => e.name.startsWith("createConfigClient")), rebuilt: stale, floor: webFloor() };
}

/** Bundles `source` for the browser (esbuild, minified, tree-shaken) and returns its brotli size. */
function bundledBrotli(source: string): number {
  const out = buildSync({
    stdin: { contents: source, resolveDir: ROOT, loader: "ts" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  return brotliCompressSync(out.outputFiles[0]!.contents).length;
}

function webFloor(): SizeResult["floor"] {
  const floorBytes = bundledBrotli(
    [
      `import { createClient } from "@connectrpc/connect";`,
      `import { createConnectTransport } from "@connectrpc/connect-web";`,
      `import { ConfigRpc } from "./src/rpc.ts";`,
      `export const connect = (baseUrl: string) => createClient(ConfigRpc, createConnectTransport({ baseUrl, useBinaryFormat: true }));`,
    ].join("\n"),
  );
  const oursBytes = bundledBrotli(`export { createConfigClient } from "./dist/index.js";`);
  return { floorBytes, oursBytes };
}
