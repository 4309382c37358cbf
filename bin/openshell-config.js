#!/usr/bin/env node
// The `openshell-config` command (package.json "bin"): runs the built command line,
// dist/cli/main.js. It is a committed file of its own so that the command exists before the first
// build: npm links a bin only when its file exists, and `npx openshell-config` in a clone links
// it once into npm's npx cache and keeps that link, so a bin inside dist/ run before
// `npm run build` stayed "not found" even after the build.

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(`openshell-config: ${fileURLToPath(main)} is missing: run \`npm run build\` in ${fileURLToPath(new URL("..", import.meta.url))} first\n`);
  process.exit(1);
}
await import(main.href);
