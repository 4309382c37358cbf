import { defineConfig } from "tsup";

// One build for every public entry point. Entry names (the object keys) become the paths under
// dist/, so they must match the `exports` map in package.json:
//   dist/index.{js,cjs,d.ts,d.cts}, dist/raw.*, dist/transport/node.*, dist/transport/web.*
export default defineConfig({
  entry: {
    index: "src/index.ts",
    raw: "src/raw.ts",
    "transport/node": "src/transport/node.ts",
    "transport/web": "src/transport/web.ts",
  },
  format: ["esm", "cjs"],
  // With "type": "module", ESM gets .js/.d.ts and CJS gets .cjs/.d.cts.
  dts: true,
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "neutral",
  // `splitting` is left unset on purpose: tsup then splits the ESM build (shared code such as the
  // errors and generated descriptors goes into chunks, loaded once however many entry points are
  // imported) and leaves each CJS entry self-contained. `splitting: true` would also split CJS.
  minify: false,
  outDir: "dist",
});
