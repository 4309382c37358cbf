// A scripted supervisor for gateway delivery tests: opens ConnectSupervisor with the sandbox's
// token, answers the bootstrap and each update with the outcome a test chooses, and records
// everything it received.

import { create } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome as Outcome,
  ConfigComponent,
  ConfigurationAdmissionState as Admission,
  SupervisorMessageSchema,
  type ConfigSnapshotRevision,
  type ConfigUpdate,
  type GatewayMessage,
  type SandboxConfigSnapshot,
  type SupervisorMessage,
  ConfigSnapshotRevisionSchema,
} from "openshell-config/raw";
import { createAsyncQueue } from "../../src/delivery/queue.js";
import type { TestGateway } from "../rpc/harness.js";

export type Decide = (snapshot: SandboxConfigSnapshot) => { outcome: Outcome; message?: string } | "drop";

function revisionOf(s: SandboxConfigSnapshot): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, {
    component: {
      case: "sandboxConfig",
      value: { configRevision: s.configRevision, policyVersion: s.version, policySource: s.policySource, globalPolicyVersion: s.globalPolicyVersion, settingsRevision: s.settingsRevision },
    },
  });
}

export function resultFor(s: SandboxConfigSnapshot, outcome: Outcome, previous: ConfigSnapshotRevision | undefined, message = "") {
  const requested = revisionOf(s);
  const applied =
    outcome === Outcome.APPLIED || outcome === Outcome.IGNORED_DUPLICATE || outcome === Outcome.DEGRADED
      ? requested
      : outcome === Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD
        ? previous
        : undefined;
  return {
    component: ConfigComponent.SANDBOX_CONFIG,
    requestedRevision: requested,
    appliedRevision: applied,
    outcome,
    failure: message ? { code: "test", message, retryable: false } : undefined,
  };
}

export interface SupervisorDouble {
  readonly received: GatewayMessage[];
  readonly updates: ConfigUpdate[];
  /** Resolves when the gateway accepted the session and the bootstrap result was sent. */
  readonly ready: Promise<void>;
  /** Resolves with the error (or undefined) once the stream ends. */
  readonly ended: Promise<unknown>;
  close(): void;
}

export function connectSupervisorDouble(
  gw: TestGateway,
  options: {
    hello?: Partial<{ supportsConfigSnapshots: boolean; supportsConfigApply: boolean; sandboxId: string }>;
    decide?: Decide;
    /** Runs after the bootstrap arrived and before its result is sent (a change during the bootstrap). */
    beforeBootstrapResult?: () => Promise<void>;
  } = {},
): SupervisorDouble {
  const out = createAsyncQueue<SupervisorMessage>();
  const decide: Decide = options.decide ?? (() => ({ outcome: Outcome.APPLIED }));
  const received: GatewayMessage[] = [];
  const updates: ConfigUpdate[] = [];
  let active: ConfigSnapshotRevision | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  out.push(
    create(SupervisorMessageSchema, {
      payload: {
        case: "hello",
        value: { sandboxId: "dev", instanceId: "instance-1", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true, ...options.hello },
      },
    }),
  );
  const admission = (s: SandboxConfigSnapshot, accepted: boolean) => ({
    instanceId: "instance-1",
    state: accepted ? Admission.ACCEPTED : Admission.REJECTED,
    policyVersion: s.version,
    policyHash: s.policyHash,
    configRevision: s.configRevision,
    providerEnvRevision: s.providerEnvRevision,
  });
  const answer = (s: SandboxConfigSnapshot) => {
    const d = decide(s);
    if (d === "drop") return undefined;
    const result = resultFor(s, d.outcome, active, d.message);
    if (result.appliedRevision) active = result.appliedRevision;
    return { result, accepted: d.outcome !== Outcome.FAILED_CLOSED };
  };
  const ended = (async () => {
    try {
      for await (const msg of gw.raw("supervisor").connectSupervisor(out)) {
        received.push(msg);
        const p = msg.payload;
        if (p.case === "sessionAccepted") {
          const snap = p.value.bootstrap!.sandboxConfig!;
          const a = answer(snap);
          if (!a) {
            markReady();
            continue;
          }
          const provider = p.value.bootstrap!.providerEnvironment!;
          await options.beforeBootstrapResult?.();
          out.push(
            create(SupervisorMessageSchema, {
              payload: {
                case: "configBootstrapResult",
                value: {
                  results: [
                    a.result,
                    {
                      component: ConfigComponent.PROVIDER_ENVIRONMENT,
                      requestedRevision: { component: { case: "providerEnvironment", value: provider.providerEnvRevision } },
                      appliedRevision: { component: { case: "providerEnvironment", value: provider.providerEnvRevision } },
                      outcome: Outcome.APPLIED,
                    },
                  ],
                  admission: admission(snap, a.accepted),
                },
              },
            }),
          );
          markReady();
        } else if (p.case === "configUpdate") {
          updates.push(p.value);
          const c = p.value.component;
          if (c.case === "sandboxConfig") {
            const a = answer(c.value);
            if (!a) continue;
            out.push(
              create(SupervisorMessageSchema, {
                payload: {
                  case: "configUpdateResult",
                  value: { updateId: p.value.updateId, componentSequence: p.value.componentSequence, result: a.result, admission: admission(c.value, a.accepted) },
                },
              }),
            );
          } else if (c.case === "providerEnvironment") {
            const rev = { component: { case: "providerEnvironment" as const, value: c.value.providerEnvRevision } };
            out.push(
              create(SupervisorMessageSchema, {
                payload: {
                  case: "configUpdateResult",
                  value: {
                    updateId: p.value.updateId,
                    componentSequence: p.value.componentSequence,
                    result: { component: ConfigComponent.PROVIDER_ENVIRONMENT, requestedRevision: rev, appliedRevision: rev, outcome: Outcome.APPLIED },
                  },
                },
              }),
            );
          }
        }
      }
      return undefined;
    } catch (err) {
      return err;
    } finally {
      markReady();
    }
  })();
  return { received, updates, ready, ended, close: () => out.close() };
}
