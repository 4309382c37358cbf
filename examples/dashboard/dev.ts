// `npm run dashboard`: a local stack (gateway on ./.openshell-local/gateway.db and supervisors for
// the sandboxes dev, staging and prod of examples/demo-sandboxes.ts, as `npm run gateway` starts)
// plus the dashboard's Vite dev server, with CORS on the gateway for the dashboard's origin.
// Prints the URL and the admin token to paste into the sign-in form, and the `export` line for
// the command line. Ctrl-C stops everything.
//
// `npm run dashboard -- --mtls`: the stack on mutual TLS (as `npm run gateway -- --mtls`). A
// browser cannot present the client bundle, so the page calls its own origin and the dev server
// forwards the calls to the gateway presenting it (gateway-proxy.ts); the sign-in form needs no
// token, the proxy's certificate being the platform admin.
//
// Beside a running `npm run gateway` (same folder and ports) it attaches: only the dashboard starts,
// on that gateway, with the admin token kept in the folder's auth.json. On any other busy port it
// says what is there and exits 1, having changed nothing.
//
// Env: OPENSHELL_GATEWAY_PORT (default 8080), DASHBOARD_PORT (default 5173), OPENSHELL_LOCAL_DIR.

import { createServer, type Plugin } from "vite";
import { OpenShell } from "openshell-config/raw";
import { DEMO_SANDBOXES, ensureDemoSandboxes } from "../demo-sandboxes.js";
import { startLocalStack, type LocalStack } from "../local-stack.js";
import { createStackAdminClient } from "../stack-admin.js";
import { parseStackArgs } from "../stack-args.js";
import { allowsOrigin, assertPortFree, busyPortLine, occupantOf, PortInUseError } from "../stack-ports.js";
import { readStackAdminToken } from "../stack-tokens.js";
import { stopOnSignals } from "../stop-signals.js";
import { registryExportLine } from "../tls-stack.js";
import { createGatewayProxy, type GatewayProxy } from "./gateway-proxy.js";
import { dashboardConfig } from "./vite.config.js";

const { mtls, dir } = parseStackArgs("dashboard");
const gatewayPort = Number(process.env.OPENSHELL_GATEWAY_PORT ?? 8080);
const dashboardPort = Number(process.env.DASHBOARD_PORT ?? 5173);

// Nothing starts on a busy dashboard port; on a busy gateway port the dashboard attaches to this
// folder's running gateway (`npm run gateway`) or says what is there.
const fail: (line: string) => never = (line) => {
  console.error(`error: ${line}`);
  process.exit(1);
};
try {
  await assertPortFree(dashboardPort, "the dashboard");
} catch (err) {
  fail(err instanceof PortInUseError ? await busyPortLine(err, gatewayPort, undefined, "DASHBOARD_PORT") : (err as Error).message);
}
const origin = `http://localhost:${dashboardPort}`;
let stack: LocalStack | undefined;
let attached: { url: string; adminToken: string } | undefined;
try {
  stack = await startLocalStack({
    sandboxes: DEMO_SANDBOXES,
    dir,
    port: gatewayPort,
    ...(mtls ? { tls: "mtls" as const } : { corsOrigins: [origin, `http://127.0.0.1:${dashboardPort}`] }),
  });
} catch (err) {
  if (!(err instanceof PortInUseError)) fail((err as Error).message);
  const adminToken = readStackAdminToken(dir);
  const occupant = adminToken === undefined || mtls ? undefined : await occupantOf(gatewayPort, adminToken);
  if (occupant?.kind !== "stack" || adminToken === undefined) {
    fail(await busyPortLine(err, gatewayPort, mtls ? undefined : adminToken, "OPENSHELL_GATEWAY_PORT", { stateDir: dir, forDashboard: true }));
  } else if (!(await allowsOrigin(occupant.url, origin))) {
    fail(`the gateway at ${occupant.url} (this folder's) does not allow the dashboard's origin ${origin}: start npm run gateway with the same DASHBOARD_PORT, or stop it and run npm run dashboard alone`);
  } else {
    attached = { url: occupant.url, adminToken };
  }
}
let vite: Awaited<ReturnType<typeof createServer>> | undefined;
let proxy: GatewayProxy | undefined;
const stopAll = () =>
  Promise.allSettled([vite?.close(), stack?.stop()]).then(() => {
    proxy?.close();
  });
const shutdown = (code: number) => void stopAll().then(() => process.exit(code));
stopOnSignals(stopAll);

let warnings: string[] = [];
try {
  if (stack) {
    warnings = await ensureDemoSandboxes(createStackAdminClient(stack).raw(OpenShell), dir);
    for (const name of DEMO_SANDBOXES) stack.startSupervisor({ sandbox: name });
  }
  const { cert, key, ca } = stack?.clientTls ?? {};
  if (stack && mtls && cert !== undefined && key !== undefined && ca !== undefined) {
    const gatewayProxy = createGatewayProxy({ target: stack.url, tls: { ca, cert, key } });
    proxy = gatewayProxy;
    const plugin: Plugin = { name: "openshell-gateway-proxy", configureServer: (server) => void server.middlewares.use(gatewayProxy.handle) };
    const config = dashboardConfig({ gatewayUrl: "" });
    vite = await createServer({ ...config, plugins: [plugin], configFile: false, server: { port: dashboardPort, strictPort: true } });
  } else {
    // strictPort: the gateway allows exactly this origin.
    vite = await createServer({ ...dashboardConfig({ gatewayUrl: stack?.url ?? attached!.url }), configFile: false, server: { port: dashboardPort, strictPort: true } });
  }
  await vite.listen();
} catch (err) {
  console.error(`error: ${(err as Error).message}`);
  shutdown(1);
  await new Promise(() => {});
}

const url = stack?.url ?? attached!.url;
const adminToken = stack?.adminToken ?? attached!.adminToken;
console.log();
console.log(`dashboard:   http://localhost:${dashboardPort}/`);
if (stack?.registry) {
  console.log(`gateway:     ${stack.url}  (mutual TLS; the dashboard's calls go to its own origin and are proxied with the client bundle ${stack.registry.bundleDir})`);
  console.log("sign in:     with the page's own address and no token (the proxy's client certificate is the platform admin)");
} else {
  console.log(`gateway:     ${url}  (${attached ? "already running (npm run gateway): attached; Ctrl-C stops the dashboard only" : `CORS for http://localhost:${dashboardPort}`})`);
  console.log(`admin token: ${adminToken}   (paste it into the sign-in form)`);
}
console.log(`sandboxes:   ${DEMO_SANDBOXES.join(", ")}`);
if (stack) console.log(`state:       ${dir}`);
if (stack) console.log(`logs:        ${stack.logFile}`);
for (const w of warnings) console.log(`warning:     ${w}`);
console.log(`command line: ${stack?.registry ? registryExportLine(stack.registry) : `export OPENSHELL_GATEWAY_URL=${url} OPENSHELL_TOKEN=${adminToken}`}`);
console.log("Ctrl-C to stop.");
