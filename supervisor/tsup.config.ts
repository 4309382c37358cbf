// Builds the `openshell-supervisor` executable: supervisor/src/cli.ts bundled into dist/cli.js
// with the SDK's generated code (`openshell-config/raw`, resolved to ../src/raw.ts) compiled in,
// and the Connect and protobuf runtimes left external (they are this package's dependencies).

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "tsup";

const sdk = (p: string) => fileURLToPath(new URL(`../src/${p}`, import.meta.url));
const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as { version: string };

export default defineConfig({
  entry: { cli: "src/cli.ts" },
  outDir: "dist",
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
  splitting: false,
  // The root tsconfig maps `openshell-config/*` to the SDK sources.
  tsconfig: "../tsconfig.json",
  // The SDK is not a dependency of the supervisor package: compile the parts it imports into the bundle.
  noExternal: ["openshell-config"],
  esbuildOptions(options) {
    options.alias = { ...options.alias, "openshell-config/raw": sdk("raw.ts") };
  },
  define: { __SUPERVISOR_VERSION__: JSON.stringify(pkg.version) },
  external: ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node"],
  // src/cli.ts starts with `#!/usr/bin/env node`; esbuild keeps it and tsup marks the file executable.
});
