import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope, SandboxSchema } from "openshell-config/raw";
import { Stack } from "../lib/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const groups = groupsFor("s", 10, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "size" });
try {
  await createAll(stack, groups, 1, 4);
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken }).raw(OpenShell);
  const before = (await raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() })).sandboxes[0]!;
  await bootstrapAll(stack, groups, 60_000);
  const after = (await raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() })).sandboxes[0]!;
  for (const [k, s] of [["provisioning", before], ["ready", after]] as const) {
    console.log(k, toBinary(SandboxSchema, s).length, "bytes; metadata", toBinary(SandboxSchema, create(SandboxSchema, { metadata: s.metadata })).length, "spec", toBinary(SandboxSchema, create(SandboxSchema, { spec: s.spec })).length, "status", toBinary(SandboxSchema, create(SandboxSchema, { status: s.status })).length);
  }
  console.log(JSON.stringify(toJson(SandboxSchema, after), null, 1).slice(0, 3000));
} finally { await stack.stop(); }
