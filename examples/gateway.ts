// `npm run gateway`: a gateway on ./.openshell-local/gateway.db and supervisors for three
// sandboxes (dev, staging, prod; examples/demo-sandboxes.ts) that stay up for interactive use
// (the command line, the SDK, the dashboard, curl). Prints the URL, the admin token and the
// `export` line the command line reads. Ctrl-C stops all.
//
// Env: OPENSHELL_GATEWAY_PORT (default 8080), OPENSHELL_LOCAL_DIR (default ./.openshell-local).

import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell } from "openshell-config/raw";
import { DEMO_SANDBOXES, ensureDemoSandboxes } from "./demo-sandboxes.js";
import { startLocalStack } from "./local-stack.js";

const dir = resolve(process.env.OPENSHELL_LOCAL_DIR ?? ".openshell-local");
mkdirSync(dir, { recursive: true });
const port = Number(process.env.OPENSHELL_GATEWAY_PORT ?? 8080);

const stack = await startLocalStack({ sandboxes: DEMO_SANDBOXES, dir, port, corsOrigins: ["http://localhost:5173", "http://127.0.0.1:5173"] });
const shutdown = (code: number) => void stack.stop().then(() => process.exit(code));
process.once("SIGINT", () => shutdown(0));
process.once("SIGTERM", () => shutdown(0));
let warnings: string[] = [];
try {
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  warnings = await ensureDemoSandboxes(raw, dir);
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  shutdown(1);
  await new Promise(() => {});
}
for (const name of DEMO_SANDBOXES) stack.startSupervisor({ sandbox: name });

console.log(`gateway:     ${stack.url}  (gRPC, gRPC-Web and Connect)`);
console.log(`admin token: ${stack.adminToken}`);
console.log(`sandboxes:   ${DEMO_SANDBOXES.join(", ")}`);
console.log(`state:       ${dir}   logs: ${stack.logFile}`);
for (const w of warnings) console.log(`warning:     ${w}`);
console.log();
console.log("For the command line (npx openshell-config, see the README), paste:");
console.log(`export OPENSHELL_GATEWAY_URL=${stack.url} OPENSHELL_TOKEN=${stack.adminToken}`);
console.log();
console.log("Ctrl-C to stop.");
