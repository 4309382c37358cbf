import { defineConfig, type Options } from "tsup";

// Every public entry point. The keys become the paths under dist/ and must match the `exports`
// map in package.json: dist/index.{js,cjs,d.ts,d.cts}, dist/raw.*, dist/transport/{node,web}.*
const entry = {
  index: "src/index.ts",
  raw: "src/raw.ts",
  "transport/node": "src/transport/node.ts",
  "transport/web": "src/transport/web.ts",
};

const common = {
  entry,
  outDir: "dist",
  // Declarations per format: .d.ts next to the ESM .js files, .d.cts next to the CJS .cjs files.
  dts: true,
  sourcemap: true,
  target: "es2022",
  platform: "neutral",
  minify: false,
} satisfies Options;

// Two builds that run in parallel. Each cleans only its own outputs (tsup never deletes
// declarations when `dts` is on; rollup overwrites them), so neither can delete the other's files.
export default defineConfig([
  {
    ...common,
    format: "esm",
    // Shared code (errors, generated descriptors) goes into chunks, loaded once however many
    // entry points an application imports.
    splitting: true,
    clean: ["!**/*.cjs", "!**/*.cjs.map"],
  },
  {
    ...common,
    format: "cjs",
    // Each CJS entry is self-contained (no chunks).
    splitting: false,
    clean: ["!**/*.js", "!**/*.js.map"],
    // p-retry is ESM-only. esbuild's Node-mode interop would turn `import pRetry from "p-retry"`
    // into the module namespace (not the function) under require(esm), and Node before 20.19
    // cannot require it at all; bundling it keeps `require("openshell-config")` working on
    // every Node 20. The ESM build keeps it external.
    noExternal: ["p-retry"],
  },
]);
