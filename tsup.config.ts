import { defineConfig, type Options } from "tsup";

// Every public entry point. The keys become the paths under dist/ and must match the `exports`
// map in package.json: dist/index.{js,cjs,d.ts,d.cts}, dist/oidc.*, dist/raw.*, dist/rollout.*,
// dist/transport/{node,web}.*
const entry = {
  index: "src/index.ts",
  oidc: "src/oidc.ts",
  raw: "src/raw.ts",
  rollout: "src/rollout.ts",
  "transport/node": "src/transport/node.ts",
  "transport/web": "src/transport/web.ts",
};

const common = {
  entry,
  outDir: "dist",
  // Declarations per format: .d.ts next to the ESM .js files, .d.cts next to the CJS .cjs files.
  dts: true,
  // No source maps in the package. The output is not minified (readable as it is, with the
  // sources' names), and a map would have to either embed every source (`sourcesContent`: 1.2 MB
  // unpacked, more than the code itself) or point at src/, which is not published, so a debugger
  // would show "source not found". Stack traces name dist/ files and lines a reader can open.
  sourcemap: false,
  target: "es2022",
  platform: "neutral",
  minify: false,
} satisfies Options;

// The `openshell-config` command line (cli/, started by bin/openshell-config.js): Node only, ESM only, no declarations
// (it is not an API entry point). The SDK's own modules stay external and are imported by package
// name, which Node resolves to this package's dist/ (self-reference through "exports"): the CLI
// uses the public API exactly as an application would, and adds no second copy of the SDK.
const cli = {
  entry: { main: "cli/main.ts" },
  outDir: "dist/cli",
  format: "esm",
  platform: "node",
  target: "node20",
  dts: false,
  // Unminified and without maps, like the SDK builds above.
  sourcemap: false,
  splitting: false,
  minify: false,
  // Only dist/cli/: the SDK builds exclude it from their own cleaning.
  clean: true,
  // A plugin outranks tsconfig `paths`, which map these names to the sources for typechecking.
  external: [/^openshell-config(\/.*)?$/],
  // tsup marks a file that starts with a shebang executable.
  banner: { js: "#!/usr/bin/env node" },
} satisfies Options;

// Three builds that run in parallel. Each cleans only its own outputs (tsup never deletes
// declarations when `dts` is on; rollup overwrites them), so none can delete another's files.
export default defineConfig([
  {
    ...common,
    format: "esm",
    // Shared code (errors, generated descriptors) goes into chunks, loaded once however many
    // entry points an application imports.
    splitting: true,
    clean: ["!**/*.cjs", "!cli/**"],
  },
  {
    ...common,
    format: "cjs",
    // Each CJS entry is self-contained (no chunks).
    splitting: false,
    clean: ["!**/*.js", "!cli/**"],
    // oauth4webapi (only in dist/oidc.cjs) is ESM-only: Node before 20.19 cannot require it at
    // all, and esbuild's Node-mode interop would hand later ones the module namespace; bundling it
    // keeps `require("openshell-config/oidc")` working on every Node 20. The ESM build keeps it
    // external.
    noExternal: ["oauth4webapi"],
  },
  cli,
]);
