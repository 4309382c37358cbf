// Scratch: gateway CPU of one full ListSandboxes listing (pages of 1000) of N sandboxes, as the READY watcher pages.
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { Stack } from "../lib/stack.js";
import { createAll, groupsFor } from "../scenarios/common.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 10000);
const groups = groupsFor("s", n, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "list", ...(process.env.PROF ? { cpuProfDir: process.env.PROF } : {}) });
try {
  await createAll(stack, groups, 2, 48);
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken }).raw(OpenShell);
  for (let k = 0; k < Number(process.env.K ?? 6); k++) {
    const g0 = stack.gatewaySample(); const t0 = performance.now(); let count = 0; let pageToken = "";
    do { const p = await raw.listSandboxes({ pageSize: 1000, pageToken, workspaceScope: workspaceScope() }); count += p.sandboxes.length; pageToken = p.nextPageToken; } while (pageToken !== "");
    const g1 = stack.gatewaySample();
    console.log(`${count} listed in ${(performance.now() - t0).toFixed(0)} ms; gateway CPU ${(g1.cpuMs - g0.cpuMs).toFixed(0)} ms`);
  }
} finally { await stack.stop(); }
