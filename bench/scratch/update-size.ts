// Scratch: the ConfigUpdate messages one waited policy update sends a supervisor, ours and the
// floor's: encoded size and content (a raw ConnectSupervisor session answering at once).
import { create, toBinary, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ConfigApplyOutcome, ConfigComponent, GatewayMessageSchema, OpenShell, SupervisorMessageSchema, type SupervisorMessage, type GatewayMessage } from "openshell-config/raw";
import { Stack } from "../lib/stack.js";
import { FloorStack } from "../floor/stack.js";
import { AsyncQueue } from "../floor/queue.js";
import { createAll } from "../scenarios/common.js";
import { policyFor } from "../lib/policies.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const groups = [{ prefix: "s", count: 1 }];
async function capture(label: string, url: string, sandbox: string, token: string | undefined, update: () => Promise<unknown>) {
  const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: url, acceptCompression: [] }));
  const out = new AsyncQueue<SupervisorMessage>();
  const msg = (payload: MessageInitShape<typeof SupervisorMessageSchema>["payload"]) => create(SupervisorMessageSchema, { payload });
  out.push(msg({ case: "hello", value: { sandboxId: sandbox, instanceId: "scratch", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } }));
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const ac = new AbortController();
  const seen: GatewayMessage[] = [];
  let updated: Promise<unknown> | undefined;
  try {
    for await (const m of raw.connectSupervisor(out, { headers, signal: ac.signal })) {
      const p = m.payload;
      if (p.case === "sessionAccepted") {
        const b = p.value.bootstrap!;
        const s = b.sandboxConfig!;
        const rev = { component: { case: "sandboxConfig" as const, value: { configRevision: s.configRevision, policyVersion: s.version, policySource: s.policySource, globalPolicyVersion: s.globalPolicyVersion, settingsRevision: s.settingsRevision } } };
        const prov = { component: { case: "providerEnvironment" as const, value: b.providerEnvironment?.providerEnvRevision ?? 0n } };
        out.push(msg({ case: "configBootstrapResult", value: { results: [
          { component: ConfigComponent.SANDBOX_CONFIG, requestedRevision: rev, appliedRevision: rev, outcome: ConfigApplyOutcome.APPLIED },
          { component: ConfigComponent.PROVIDER_ENVIRONMENT, requestedRevision: prov, appliedRevision: prov, outcome: ConfigApplyOutcome.APPLIED }],
          admission: { instanceId: "scratch", state: 1, policyVersion: s.version, policyHash: s.policyHash, configRevision: s.configRevision, providerEnvRevision: s.providerEnvRevision } } }));
        out.push(msg({ case: "runtimeReady", value: {} }));
        setTimeout(() => { updated = update(); }, 300);
      } else if (p.case === "configUpdate") {
        seen.push(m);
        const { updateId, componentSequence, component } = p.value;
        if (component.case === "sandboxConfig") {
          const s = component.value;
          const rev = { component: { case: "sandboxConfig" as const, value: { configRevision: s.configRevision, policyVersion: s.version, policySource: s.policySource, globalPolicyVersion: s.globalPolicyVersion, settingsRevision: s.settingsRevision } } };
          out.push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: { component: ConfigComponent.SANDBOX_CONFIG, requestedRevision: rev, appliedRevision: rev, outcome: ConfigApplyOutcome.APPLIED },
            admission: { instanceId: "scratch", state: 1, policyVersion: s.version, policyHash: s.policyHash, configRevision: s.configRevision, providerEnvRevision: s.providerEnvRevision } } }));
        } else if (component.case === "providerEnvironment") {
          const rev = { component: { case: "providerEnvironment" as const, value: component.value.providerEnvRevision } };
          out.push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: { component: ConfigComponent.PROVIDER_ENVIRONMENT, requestedRevision: rev, appliedRevision: rev, outcome: ConfigApplyOutcome.APPLIED } } }));
        }
        setTimeout(() => ac.abort(), 500);
      } else seen.push(m);
    }
  } catch { /* aborted */ }
  await updated;
  for (const m of seen) {
    const j = JSON.stringify(toJson(GatewayMessageSchema, m));
    console.log(label, m.payload.case, toBinary(GatewayMessageSchema, m).length, "bytes:", j.length > 1600 ? j.slice(0, 1600) + "…" : j);
  }
}
const stack = await Stack.start({ backend: "sqlite", groups, label: "us" });
try {
  await createAll(stack, groups as never);
  const { createConfigClient } = await import("openshell-config");
  const { createNodeTransport } = await import("openshell-config/transport/node");
  const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  await capture("ours", stack.url, "s0000", stack.tokens.get("s0000"), () => client.updatePolicy({ sandbox: "s0000", policy: policyFor("x1"), wait: true }));
} finally { await stack.stop(); }
