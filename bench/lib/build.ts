// Builds every program a benchmark runs (the gateway, the supervisor, the bench client and the
// three floor programs) with one esbuild configuration into one directory, so ours and the floor
// run the same way: plain `node file.mjs`, no TypeScript loader in the process. Under tsx every
// closure our code creates at run time goes through a name-keeping helper and each process
// carries a loader thread, a cost the shipped gateway (tsup, dist/cli.js) does not have and that
// weighed on ours far more than on the floor (it creates few closures). Packages stay external,
// except the SDK, which is compiled from its sources as tsconfig.json maps it.

import { build, type Plugin } from "esbuild";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT, useBuiltPrograms } from "./proc.js";

export const PROGRAMS = {
  "gateway/src/cli.ts": "gateway.mjs",
  "supervisor/src/cli.ts": "supervisor.mjs",
  "bench/client.ts": "client.mjs",
  "bench/floor/gateway.ts": "floor-gateway.mjs",
  "bench/floor/supervisor.ts": "floor-supervisor.mjs",
  "bench/floor/client.ts": "floor-client.mjs",
} as const;

/** Leaves every bare import but the SDK's own to Node's resolution at run time. */
const externalPackages: Plugin = {
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (a) => (a.path === "openshell-config" || a.path.startsWith("openshell-config/") ? undefined : { path: a.path, external: true }));
  },
};

/** Builds the programs into `dir`; returns a map from each source path to its built file. */
export async function buildPrograms(dir: string): Promise<Map<string, string>> {
  mkdirSync(dir, { recursive: true });
  const out = new Map<string, string>();
  await build({
    absWorkingDir: ROOT,
    entryPoints: Object.entries(PROGRAMS).map(([src, file]) => ({ in: src, out: file.replace(/\.mjs$/, "") })),
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    tsconfig: join(ROOT, "tsconfig.json"),
    sourcemap: "linked",
    plugins: [externalPackages],
    logLevel: "warning",
  });
  for (const [src, file] of Object.entries(PROGRAMS)) out.set(src, join(dir, file));
  return out;
}

/**
 * Builds the programs (a second or so) and has every child process run them; with
 * OSC_BENCH_FROM_SOURCE=1 children run from source under tsx instead (for stack traces into .ts).
 */
export async function runBuiltPrograms(): Promise<"built" | "source"> {
  if (process.env.OSC_BENCH_FROM_SOURCE) return "source";
  // Under node_modules so that the built files resolve their packages from the repository's.
  useBuiltPrograms(await buildPrograms(join(ROOT, "node_modules", ".cache", "openshell-bench")));
  return "built";
}
