// `npm run dashboard`: a local stack (gateway on ./.openshell-local/gateway.db and supervisors for
// the sandboxes dev, staging and prod of examples/demo-sandboxes.ts, as `npm run gateway` starts)
// plus the dashboard's Vite dev server, with CORS on the gateway for the dashboard's origin.
// Prints the URL and the admin token to paste into the sign-in form, and the `export` line for
// the command line. Ctrl-C stops everything.
//
// Env: OPENSHELL_GATEWAY_PORT (default 8080), DASHBOARD_PORT (default 5173), OPENSHELL_LOCAL_DIR.

import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { createServer } from "vite";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell } from "openshell-config/raw";
import { DEMO_SANDBOXES, ensureDemoSandboxes } from "../demo-sandboxes.js";
import { startLocalStack } from "../local-stack.js";
import { dashboardConfig } from "./vite.config.js";

const dir = resolve(process.env.OPENSHELL_LOCAL_DIR ?? ".openshell-local");
mkdirSync(dir, { recursive: true });
const gatewayPort = Number(process.env.OPENSHELL_GATEWAY_PORT ?? 8080);
const dashboardPort = Number(process.env.DASHBOARD_PORT ?? 5173);

const stack = await startLocalStack({
  sandboxes: DEMO_SANDBOXES,
  dir,
  port: gatewayPort,
  corsOrigins: [`http://localhost:${dashboardPort}`, `http://127.0.0.1:${dashboardPort}`],
});
let vite: Awaited<ReturnType<typeof createServer>> | undefined;
const shutdown = (code: number) => void Promise.allSettled([vite?.close(), stack.stop()]).then(() => process.exit(code));
process.once("SIGINT", () => shutdown(0));
process.once("SIGTERM", () => shutdown(0));

let warnings: string[] = [];
try {
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  warnings = await ensureDemoSandboxes(raw, dir);
  for (const name of DEMO_SANDBOXES) stack.startSupervisor({ sandbox: name });
  // strictPort: the gateway allows exactly this origin.
  vite = await createServer({ ...dashboardConfig({ gatewayUrl: stack.url }), configFile: false, server: { port: dashboardPort, strictPort: true } });
  await vite.listen();
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  shutdown(1);
  await new Promise(() => {});
}

console.log();
console.log(`dashboard:   http://localhost:${dashboardPort}/`);
console.log(`gateway:     ${stack.url}  (CORS for http://localhost:${dashboardPort})`);
console.log(`admin token: ${stack.adminToken}   (paste it into the sign-in form)`);
console.log(`sandboxes:   ${DEMO_SANDBOXES.join(", ")}`);
console.log(`state:       ${dir}   logs: ${stack.logFile}`);
for (const w of warnings) console.log(`warning:     ${w}`);
console.log(`command line: export OPENSHELL_GATEWAY_URL=${stack.url} OPENSHELL_TOKEN=${stack.adminToken}`);
console.log("Ctrl-C to stop.");
