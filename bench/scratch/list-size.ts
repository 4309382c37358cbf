// Scratch: encoded size per sandbox of a ListSandboxes page, ours and the floor's, once all are READY.
import { toBinary, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ListSandboxesResponseSchema, OpenShell, SandboxSchema, workspaceScope } from "openshell-config/raw";
import { Stack } from "../lib/stack.js";
import { FloorStack } from "../floor/stack.js";
import { createAll, bootstrapAll } from "../scenarios/common.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const groups = [{ prefix: "s", count: 20 }];
async function show(label: string, url: string, headers: Record<string, string>) {
  const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: url, acceptCompression: [] }));
  const r = await raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() }, { headers });
  console.log(label, r.sandboxes.length, "sandboxes,", (toBinary(ListSandboxesResponseSchema, r).length / r.sandboxes.length).toFixed(0), "bytes each");
  console.log(JSON.stringify(toJson(SandboxSchema, r.sandboxes[0]!)).slice(0, 1500));
}
const stack = await Stack.start({ backend: "sqlite", groups, label: "ls" });
try {
  await createAll(stack, groups as never);
  await bootstrapAll(stack, groups as never, 60_000);
  await show("ours", stack.url, { authorization: `Bearer ${stack.adminToken}` });
} finally { await stack.stop(); }
const floor = await FloorStack.start({ expectReady: 20, created: groups });
try { await floor.bootstrap(groups, 60_000); await show("floor", floor.url, {}); } finally { await floor.stop(); }
