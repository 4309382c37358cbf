// Checks the published package's types with Are the Types Wrong, on a tarball packed here.
//
// `attw --pack` runs `npm pack` with its output discarded, and that pack runs `prepack` (a second
// full build): when it fails, CI shows only "Command failed: npm pack". Here the tarball is packed
// without scripts from the `dist/` the build step made, into a temporary folder, and npm's own
// output is shown when packing fails.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
if (!existsSync(join(root, "dist", "index.js"))) {
  console.error("check:package: dist/ is missing; run `npm run build` first");
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "osc-pack-"));
let status = 1;
try {
  const pack = spawnSync(
    "npm",
    ["pack", "--ignore-scripts", "--json", "--pack-destination", dir],
    { cwd: root, encoding: "utf8" },
  );
  if (pack.status !== 0) {
    process.stderr.write(pack.stdout ?? "");
    process.stderr.write(pack.stderr ?? "");
    console.error(`check:package: npm pack failed (exit ${pack.status ?? pack.signal})`);
  } else {
    const [{ filename }] = JSON.parse(pack.stdout);
    const attw = spawnSync(
      process.execPath,
      [join(root, "node_modules", "@arethetypeswrong", "cli", "dist", "index.js"), join(dir, filename), "--profile", "node16"],
      { cwd: root, stdio: "inherit" },
    );
    status = attw.status ?? 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
