// `npm run gateway`: a gateway on ./.openshell-local/gateway.db and supervisors for three
// sandboxes (dev, staging, prod; examples/demo-sandboxes.ts) that stay up for interactive use
// (the command line, the SDK, the dashboard, curl). Prints the URL, the admin token and the
// `export` line the command line reads. Ctrl-C stops all.
//
// `npm run gateway -- --mtls`: the same on HTTPS with mutual TLS, as a stock OpenShell install
// runs its gateway. A verified client certificate is the platform admin; supervisors dial a
// sandbox listener of their own. The client bundle and metadata.json are written in the upstream
// registry layout under the state directory, and the `export` line points the command line at
// that entry (OPENSHELL_SYSTEM_GATEWAY_DIR, OPENSHELL_GATEWAY), so that it needs no flags.
//
// The admin token and supervisor tokens are kept in the state directory's auth.json, so they
// survive a restart as the database does. On a busy port it says what runs there and exits 1
// without changing anything.
//
// Env: OPENSHELL_GATEWAY_PORT (default 8080), OPENSHELL_LOCAL_DIR (default ./.openshell-local),
// DASHBOARD_PORT (default 5173: the origin the gateway allows, for `npm run dashboard` to attach).

import { OpenShell } from "openshell-config/raw";
import { DEMO_SANDBOXES, ensureDemoSandboxes } from "./demo-sandboxes.js";
import { startLocalStack, type LocalStack } from "./local-stack.js";
import { createStackAdminClient } from "./stack-admin.js";
import { parseStackArgs } from "./stack-args.js";
import { busyPortLine, PortInUseError } from "./stack-ports.js";
import { readStackAdminToken } from "./stack-tokens.js";
import { stopOnSignals } from "./stop-signals.js";
import { registryExportLine } from "./tls-stack.js";

const { mtls, dir } = parseStackArgs("gateway");
const port = Number(process.env.OPENSHELL_GATEWAY_PORT ?? 8080);

// The dashboard's origin (DASHBOARD_PORT, as `npm run dashboard` uses it), so that it can attach.
const dashboardPort = Number(process.env.DASHBOARD_PORT ?? 5173);

let stack: LocalStack;
try {
  stack = await startLocalStack({
    sandboxes: DEMO_SANDBOXES,
    dir,
    port,
    ...(mtls ? { tls: "mtls" as const } : { corsOrigins: [`http://localhost:${dashboardPort}`, `http://127.0.0.1:${dashboardPort}`] }),
  });
} catch (err) {
  // A busy port: one line, and nothing was written or started (stack-ports.ts).
  const line = err instanceof PortInUseError ? await busyPortLine(err, port, readStackAdminToken(dir), "OPENSHELL_GATEWAY_PORT", { stateDir: dir, forDashboard: false }) : (err as Error).message;
  console.error(`error: ${line}`);
  process.exit(1);
}
const shutdown = (code: number) => void stack.stop().then(() => process.exit(code));
stopOnSignals(() => stack.stop());
let warnings: string[] = [];
try {
  warnings = await ensureDemoSandboxes(createStackAdminClient(stack).raw(OpenShell), dir);
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  shutdown(1);
  await new Promise(() => {});
}
for (const name of DEMO_SANDBOXES) stack.startSupervisor({ sandbox: name });

if (stack.registry) {
  // The admin token is not printed: on the mutual-TLS listener the client certificate is what
  // signs a caller in (the platform admin), and the sandbox listener serves supervisors only.
  console.log(`gateway:     ${stack.url}  (mutual TLS: a client certificate is required)`);
  console.log(`client:      ${stack.registry.bundleDir}  (ca.crt, tls.crt, tls.key: the platform admin)`);
  console.log(`supervisors: ${stack.sandboxUrl}  (sandbox listener: server certificate, supervisor tokens)`);
} else {
  console.log(`gateway:     ${stack.url}  (gRPC, gRPC-Web and Connect)`);
  console.log(`admin token: ${stack.adminToken}`);
}
console.log(`sandboxes:   ${DEMO_SANDBOXES.join(", ")}`);
console.log(`state:       ${dir}`);
console.log(`logs:        ${stack.logFile}`);
for (const w of warnings) console.log(`warning:     ${w}`);
console.log();
console.log("For the command line (npx openshell-config, see the README), paste:");
console.log(stack.registry ? registryExportLine(stack.registry) : `export OPENSHELL_GATEWAY_URL=${stack.url} OPENSHELL_TOKEN=${stack.adminToken}`);
if (!stack.registry) {
  // Shared rollouts are for teams: a second admin shows one operator approving another's rollout.
  console.log("A second operator (demo-reviewer, an admin too), in another terminal:");
  console.log(`export OPENSHELL_GATEWAY_URL=${stack.url} OPENSHELL_TOKEN=${stack.reviewerToken}`);
}
console.log();
console.log("Ctrl-C to stop.");
