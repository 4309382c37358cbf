// The floor supervisor: one process holding many ConnectSupervisor sessions on one HTTP/2
// connection (the transport settings of supervisor/src/fleet.ts), each answering its bootstrap
// and every ConfigUpdate at once with the messages the reference supervisor sends (result with
// requested = applied revision, admission, runtime ready), and doing nothing else: no state
// directory, no validation, no logging, no heartbeats, no reconnects. A provider-environment update
// (the floor gateway's --provider-too) is answered at once with the reference supervisor's provider result.
//   node --import tsx bench/floor/supervisor.ts --gateway URL --sandboxes N [--sandbox-prefix P]
// A stream that ends while the process is not stopping is an error: the process exits 1.

import { parseArgs } from "node:util";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigSnapshotRevisionSchema,
  ConfigurationAdmissionState,
  OpenShell,
  SupervisorMessageSchema,
  type SandboxConfigSnapshot,
  type SupervisorMessage,
} from "openshell-config/raw";
import { sandboxNames } from "../lib/names.js";
import { AsyncQueue } from "./queue.js";

const { values } = parseArgs({ options: { gateway: { type: "string" }, sandboxes: { type: "string" }, "sandbox-prefix": { type: "string" } } });
if (!values.gateway || !values.sandboxes) throw new Error("usage: --gateway URL --sandboxes N [--sandbox-prefix P]");
const names = sandboxNames(values["sandbox-prefix"] ?? "sandbox-", Number(values.sandboxes));
const instanceId = `floor-${process.pid}`;

// The same as supervisor/src/fleet.ts createSupervisorTransport: no compression, pinged while idle.
const transport = createGrpcTransport({ baseUrl: values.gateway, acceptCompression: [], pingIntervalMs: 15_000, pingTimeoutMs: 10_000 });
const client = createClient(OpenShell, transport);
let stopping = false;

const msg = (payload: MessageInitShape<typeof SupervisorMessageSchema>["payload"]) => create(SupervisorMessageSchema, { payload });

function revision(s: SandboxConfigSnapshot) {
  return {
    component: {
      case: "sandboxConfig" as const,
      value: { configRevision: s.configRevision, policyVersion: s.version, policySource: s.policySource, globalPolicyVersion: s.globalPolicyVersion, settingsRevision: s.settingsRevision },
    },
  };
}

function admission(s: SandboxConfigSnapshot) {
  return {
    instanceId,
    state: ConfigurationAdmissionState.ACCEPTED,
    policyVersion: s.version,
    policyHash: s.policyHash,
    configRevision: s.configRevision,
    providerEnvRevision: s.providerEnvRevision,
  };
}

/** An APPLIED result of `component` at revision `rev` (requested = applied, as the reference supervisor answers). */
function applied(component: ConfigComponent, rev: MessageInitShape<typeof ConfigSnapshotRevisionSchema>) {
  return { component, requestedRevision: rev, appliedRevision: rev, outcome: ConfigApplyOutcome.APPLIED };
}

async function session(sandboxId: string): Promise<void> {
  const out = new AsyncQueue<SupervisorMessage>();
  out.push(msg({ case: "hello", value: { sandboxId, instanceId, connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } }));
  for await (const m of client.connectSupervisor(out)) {
    const p = m.payload;
    if (p.case === "sessionAccepted") {
      const b = p.value.bootstrap;
      const snap = b?.sandboxConfig;
      if (!snap) throw new Error(`${sandboxId}: session accepted without a sandbox config bootstrap`);
      const rev = revision(snap);
      const provider = { component: { case: "providerEnvironment" as const, value: b.providerEnvironment?.providerEnvRevision ?? 0n } };
      out.push(
        msg({
          case: "configBootstrapResult",
          value: { results: [applied(ConfigComponent.SANDBOX_CONFIG, rev), applied(ConfigComponent.PROVIDER_ENVIRONMENT, provider)], admission: admission(snap) },
        }),
      );
      out.push(msg({ case: "runtimeReady", value: {} }));
    } else if (p.case === "configUpdate") {
      const { updateId, componentSequence, component } = p.value;
      if (component.case === "sandboxConfig") {
        const snap = component.value;
        out.push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: applied(ConfigComponent.SANDBOX_CONFIG, revision(snap)), admission: admission(snap) } }));
      } else if (component.case === "providerEnvironment") {
        // Sent only by the floor gateway's --provider-too: the reference supervisor's provider result
        // (requested = applied provider_env_revision, APPLIED; no admission, which is the sandbox config's).
        const rev = { component: { case: "providerEnvironment" as const, value: component.value.providerEnvRevision } };
        out.push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: applied(ConfigComponent.PROVIDER_ENVIRONMENT, rev) } }));
      }
    } else if (p.case === "sessionRejected") {
      throw new Error(`${sandboxId}: session rejected: ${p.value.reason}`);
    }
  }
  throw new Error(`${sandboxId}: the gateway ended the stream`);
}

for (const name of names) {
  session(name).catch((err: unknown) => {
    if (stopping) return;
    process.stderr.write(`floor supervisor: ${(err as Error).message}\n`);
    process.exit(1);
  });
}

process.once("SIGTERM", () => {
  stopping = true;
  process.exit(0);
});
