// Builds the `openshell-gateway` executable: gateway/src/cli.ts bundled into dist/cli.js with the
// SDK's generated code (`openshell-config/raw`, resolved to ../src/raw.ts) compiled in, and every
// runtime dependency (Connect, protobuf, pino, prom-client, database drivers) left external.

import { fileURLToPath } from "node:url";
import { defineConfig } from "tsup";

const sdk = (p: string) => fileURLToPath(new URL(`../src/${p}`, import.meta.url));

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
  // The SDK is not a dependency of the gateway package: compile the parts it imports into the bundle.
  noExternal: ["openshell-config"],
  esbuildOptions(options) {
    options.alias = {
      ...options.alias,
      "openshell-config/raw": sdk("raw.ts"),
    };
  },
  // Dependencies listed in package.json stay external (tsup's default), including the
  // @bufbuild/protobuf runtime the generated code imports and native better-sqlite3.
  external: ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node", "better-sqlite3", "pg", "pino", "prom-client"],
  // src/cli.ts starts with `#!/usr/bin/env node`; esbuild keeps it and tsup marks the file executable.
});
