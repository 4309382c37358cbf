// The floor supervisor's answers (bench/floor/supervisor.ts), apart from its process and stream:
// for each gateway message, the messages the reference supervisor sends back (result with
// requested = applied revision, admission, runtime ready), built at once and nothing else done.
// A module of its own so that an in-process harness can run the floor's session without a network
// (as the removed probe sup-apply.ts did; bench/README.md, Findings).

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigSnapshotRevisionSchema,
  ConfigurationAdmissionState,
  SupervisorMessageSchema,
  type GatewayMessage,
  type SandboxConfigSnapshot,
  type SupervisorMessage,
} from "openshell-config/raw";

export const msg = (payload: MessageInitShape<typeof SupervisorMessageSchema>["payload"]) => create(SupervisorMessageSchema, { payload });

function revision(s: SandboxConfigSnapshot) {
  return {
    component: {
      case: "sandboxConfig" as const,
      value: { configRevision: s.configRevision, policyVersion: s.version, policySource: s.policySource, globalPolicyVersion: s.globalPolicyVersion, settingsRevision: s.settingsRevision },
    },
  };
}

function admission(instanceId: string, s: SandboxConfigSnapshot) {
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

/** The floor's hello for `sandboxId`. */
export function hello(sandboxId: string, instanceId: string): SupervisorMessage {
  return msg({ case: "hello", value: { sandboxId, instanceId, connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } });
}

/**
 * Pushes the answers to gateway message `m`. Throws on a session the floor cannot run: an accepted
 * one without a sandbox config bootstrap, or a rejected one.
 */
export function answer(m: GatewayMessage, sandboxId: string, instanceId: string, push: (m: SupervisorMessage) => void): void {
  const p = m.payload;
  if (p.case === "sessionAccepted") {
    const b = p.value.bootstrap;
    const snap = b?.sandboxConfig;
    if (!snap) throw new Error(`${sandboxId}: session accepted without a sandbox config bootstrap`);
    const provider = { component: { case: "providerEnvironment" as const, value: b.providerEnvironment?.providerEnvRevision ?? 0n } };
    push(
      msg({
        case: "configBootstrapResult",
        value: { results: [applied(ConfigComponent.SANDBOX_CONFIG, revision(snap)), applied(ConfigComponent.PROVIDER_ENVIRONMENT, provider)], admission: admission(instanceId, snap) },
      }),
    );
    push(msg({ case: "runtimeReady", value: {} }));
  } else if (p.case === "configUpdate") {
    const { updateId, componentSequence, component } = p.value;
    if (component.case === "sandboxConfig") {
      const snap = component.value;
      push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: applied(ConfigComponent.SANDBOX_CONFIG, revision(snap)), admission: admission(instanceId, snap) } }));
    } else if (component.case === "providerEnvironment") {
      // Sent only by the floor gateway's --provider-too: the reference supervisor's provider result
      // (requested = applied provider_env_revision, APPLIED; no admission, which is the sandbox config's).
      const rev = { component: { case: "providerEnvironment" as const, value: component.value.providerEnvRevision } };
      push(msg({ case: "configUpdateResult", value: { updateId, componentSequence, result: applied(ConfigComponent.PROVIDER_ENVIRONMENT, rev) } }));
    }
  } else if (p.case === "sessionRejected") {
    throw new Error(`${sandboxId}: session rejected: ${p.value.reason}`);
  }
}
