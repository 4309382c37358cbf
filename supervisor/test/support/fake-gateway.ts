// An in-process fake gateway for supervisor tests: a real connect-node HTTP/2 server on a
// loopback port implementing only ConnectSupervisor. It accepts (or rejects) sessions, delivers a
// bootstrap and live updates, records everything the supervisor sends, and checks every result
// against UPSTREAM.md §3.10 independently of the supervisor's own code.

import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ConfigApplyOutcome,
  ConfigBootstrapSchema,
  ConfigComponent,
  ConfigurationAdmissionState,
  GatewayMessageSchema,
  OpenShell,
  type ConfigBootstrap,
  type ConfigBootstrapResult,
  type ConfigComponentApplyResult,
  type ConfigSnapshotRevision,
  type ConfigUpdateResult,
  type GatewayMessage,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigSnapshot,
  type SandboxConfigurationAdmission,
  type SupervisorHello,
  type SupervisorMessage,
} from "openshell-config/raw";
import { AsyncQueue } from "../../src/queue.js";
import { providerSnapshot, sandboxSnapshot } from "./snapshots.js";

export interface FakeGatewayOptions {
  /** heartbeat_interval sent in SessionAccepted; the fake also sends heartbeats at this pace. Default 200 ms. */
  heartbeatMs?: number;
  /** Send GatewayHeartbeat messages. Default true. */
  sendHeartbeats?: boolean;
  configApplyEnabled?: boolean;
  /** The bootstrap of a new session. Default: a valid sandbox snapshot and an empty provider environment. */
  bootstrap?: (hello: SupervisorHello) => ConfigBootstrap | undefined;
  /** Reject a session: SessionRejected{reason}, then the stream ends with `code` (default FAILED_PRECONDITION). */
  reject?: (hello: SupervisorHello) => { reason: string; code?: Code } | undefined;
  /** Awaited before a hello is answered (accepted or rejected): holds that session back. */
  holdHello?: (hello: SupervisorHello) => Promise<void> | undefined;
}

const gm = (payload: GatewayMessage["payload"]): GatewayMessage => create(GatewayMessageSchema, { payload });

/** The revision a gateway expects back for a delivered sandbox snapshot (§3.5c), built here independently. */
export function expectedSandboxRevision(s: SandboxConfigSnapshot) {
  return {
    configRevision: s.configRevision,
    policyVersion: s.version,
    policySource: s.policySource,
    globalPolicyVersion: s.globalPolicyVersion,
    settingsRevision: s.settingsRevision,
  };
}

function sameRevision(a: ConfigSnapshotRevision | undefined, b: ConfigSnapshotRevision | undefined): boolean {
  if (!a || !b) return a === b;
  const x = a.component;
  const y = b.component;
  if (x.case === "sandboxConfig" && y.case === "sandboxConfig") {
    const p = x.value;
    const q = y.value;
    return p.configRevision === q.configRevision && p.policyVersion === q.policyVersion && p.policySource === q.policySource && p.globalPolicyVersion === q.globalPolicyVersion && p.settingsRevision === q.settingsRevision;
  }
  if (x.case === "providerEnvironment" && y.case === "providerEnvironment") return x.value === y.value;
  return false;
}

function deliveredRevision(d: { sandbox?: SandboxConfigSnapshot; provider?: ProviderEnvironmentSnapshot }): ConfigSnapshotRevision {
  if (d.sandbox) {
    return { $typeName: "openshell.v1.ConfigSnapshotRevision", component: { case: "sandboxConfig", value: { $typeName: "openshell.v1.SandboxConfigRevision", ...expectedSandboxRevision(d.sandbox) } } };
  }
  return { $typeName: "openshell.v1.ConfigSnapshotRevision", component: { case: "providerEnvironment", value: d.provider!.providerEnvRevision } };
}

const ACK = new Set([ConfigApplyOutcome.APPLIED, ConfigApplyOutcome.IGNORED_DUPLICATE, ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, ConfigApplyOutcome.DEGRADED]);

/**
 * §3.10.1–2: the problems of one component result against what was delivered (empty when valid).
 * Exported so unit tests can hold the supervisor's decisions to the gateway's rules.
 */
export function checkApplyResult(r: ConfigComponentApplyResult | undefined, delivered: { sandbox?: SandboxConfigSnapshot; provider?: ProviderEnvironmentSnapshot }): string[] {
  if (!r) return ["result missing"];
  const problems: string[] = [];
  const wantComponent = delivered.sandbox ? ConfigComponent.SANDBOX_CONFIG : ConfigComponent.PROVIDER_ENVIRONMENT;
  if (r.component !== wantComponent) problems.push(`component ${r.component} != ${wantComponent}`);
  if (!r.requestedRevision) problems.push("configuration result revision missing");
  else if (!sameRevision(r.requestedRevision, deliveredRevision(delivered))) problems.push("configuration result revision does not match the delivered snapshot");
  const req = r.requestedRevision;
  const app = r.appliedRevision;
  switch (r.outcome) {
    case ConfigApplyOutcome.APPLIED:
    case ConfigApplyOutcome.IGNORED_DUPLICATE:
    case ConfigApplyOutcome.DEGRADED:
      if (!sameRevision(app, req)) problems.push(`${ConfigApplyOutcome[r.outcome]}: applied must equal requested`);
      break;
    case ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE:
    case ConfigApplyOutcome.FAILED_CLOSED:
      if (app) problems.push(`${ConfigApplyOutcome[r.outcome]}: applied must be absent`);
      break;
    case ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD:
      if (!app || sameRevision(app, req)) problems.push("FAILED_RETAINED_LAST_KNOWN_GOOD: applied must be present and differ");
      break;
    case ConfigApplyOutcome.IGNORED_STALE:
    case ConfigApplyOutcome.UNSUPPORTED:
      break;
    default:
      problems.push("outcome UNSPECIFIED");
  }
  return problems;
}

/** §3.10.4: the admission of a sandbox-config result against the delivered snapshot and the session's instance. */
export function checkAdmission(a: SandboxConfigurationAdmission | undefined, outcome: ConfigApplyOutcome, s: SandboxConfigSnapshot, instanceId: string): string[] {
  if (!a) return ["sandbox configuration admission result is required"];
  const problems: string[] = [];
  if (a.instanceId !== instanceId) problems.push("admission instance_id mismatch");
  if (a.policyVersion !== s.version) problems.push("admission policy_version mismatch");
  if (a.policyHash !== s.policyHash) problems.push("admission policy_hash mismatch");
  if (a.configRevision !== s.configRevision) problems.push("admission config_revision mismatch");
  if (a.providerEnvRevision !== s.providerEnvRevision) problems.push("admission provider_env_revision mismatch");
  if (s.configurationError !== "" && a.state === ConfigurationAdmissionState.ACCEPTED) problems.push("a gateway-rejected config reported as accepted");
  const ok = (ACK.has(outcome) && a.state === ConfigurationAdmissionState.ACCEPTED) || a.state === ConfigurationAdmissionState.REJECTED;
  if (!ok) problems.push("configuration admission is inconsistent with the apply result");
  return problems;
}

type PayloadCase = NonNullable<SupervisorMessage["payload"]["case"]>;
type PayloadValue<K extends PayloadCase> = Extract<SupervisorMessage["payload"], { case: K }> extends { value: infer V } ? V : never;

type Waiter = { pick: (m: SupervisorMessage) => unknown; resolve: (v: unknown) => void };

/** One accepted (or rejected) ConnectSupervisor stream as the fake gateway sees it. */
export class FakeSession {
  readonly received: SupervisorMessage[] = [];
  /** §3.10 violations found in what the supervisor sent. */
  readonly violations: string[] = [];
  ended = false;
  /** While true, the fake sends no heartbeats on this stream (a silent gateway). */
  silenced = false;
  readonly outbox = new AsyncQueue<GatewayMessage>();
  private readonly delivered = new Map<string, { sequence: bigint; sandbox?: SandboxConfigSnapshot; provider?: ProviderEnvironmentSnapshot }>();
  private readonly sequences = { sandbox: 0n, provider: 0n };
  private waiters: Waiter[] = [];
  private endWaiters: Array<() => void> = [];
  private nextId = 0;

  constructor(
    readonly hello: SupervisorHello,
    readonly requestHeader: Headers,
    readonly bootstrap: ConfigBootstrap | undefined,
  ) {}

  get sandboxId(): string {
    return this.hello.sandboxId;
  }

  get epoch(): bigint {
    return this.hello.connectionEpoch;
  }

  /** Messages of one kind received so far. */
  all<K extends PayloadCase>(kind: K): PayloadValue<K>[] {
    return this.received.flatMap((m) => (m.payload.case === kind ? [m.payload.value as PayloadValue<K>] : []));
  }

  sendSandboxConfig(snapshot: SandboxConfigSnapshot): { updateId: string; componentSequence: bigint } {
    this.sequences.sandbox += 1n;
    return this.deliver({ sandbox: snapshot }, this.sequences.sandbox, { case: "sandboxConfig", value: snapshot });
  }

  sendProviderEnvironment(snapshot: ProviderEnvironmentSnapshot): { updateId: string; componentSequence: bigint } {
    this.sequences.provider += 1n;
    return this.deliver({ provider: snapshot }, this.sequences.provider, { case: "providerEnvironment", value: snapshot });
  }

  private deliver(d: { sandbox?: SandboxConfigSnapshot; provider?: ProviderEnvironmentSnapshot }, sequence: bigint, component: Extract<GatewayMessage["payload"], { case: "configUpdate" }>["value"]["component"]) {
    this.nextId += 1;
    const updateId = `00000000-0000-4000-8000-${String(this.nextId).padStart(12, "0")}`;
    this.delivered.set(updateId, { sequence, ...d });
    this.outbox.push(gm({ case: "configUpdate", value: { $typeName: "openshell.v1.ConfigUpdate", updateId, componentSequence: sequence, component } }));
    return { updateId, componentSequence: sequence };
  }

  /** Resolves with the first message (already received or future) for which `pick` returns a value. */
  waitFor<T>(pick: (m: SupervisorMessage) => T | undefined, timeoutMs = 5_000, what = "message"): Promise<T> {
    for (const m of this.received) {
      const v = pick(m);
      if (v !== undefined) return Promise.resolve(v);
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${this.sandboxId} (epoch ${this.epoch})`));
      }, timeoutMs);
      const waiter: Waiter = {
        pick,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
      };
      this.waiters.push(waiter);
    });
  }

  bootstrapResult(timeoutMs?: number): Promise<ConfigBootstrapResult> {
    return this.waitFor((m) => (m.payload.case === "configBootstrapResult" ? m.payload.value : undefined), timeoutMs, "config_bootstrap_result");
  }

  updateResult(updateId: string, timeoutMs?: number): Promise<ConfigUpdateResult> {
    return this.waitFor((m) => (m.payload.case === "configUpdateResult" && m.payload.value.updateId === updateId ? m.payload.value : undefined), timeoutMs, `result of ${updateId}`);
  }

  /** Resolves when the stream has ended (either side). */
  whenEnded(timeoutMs = 5_000): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`stream of ${this.sandboxId} did not end within ${timeoutMs} ms`)), timeoutMs);
      this.endWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The gateway ends the stream (OK status). */
  drop(): void {
    this.outbox.close();
  }

  onMessage(m: SupervisorMessage): void {
    this.received.push(m);
    this.check(m);
    for (const w of [...this.waiters]) {
      const v = w.pick(m);
      if (v !== undefined) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(v);
      }
    }
  }

  markEnded(): void {
    if (this.ended) return;
    this.ended = true;
    this.outbox.close();
    for (const w of this.endWaiters.splice(0)) w();
  }

  private check(m: SupervisorMessage): void {
    const p = m.payload;
    if (p.case === "configBootstrapResult") {
      const b = this.bootstrap;
      if (!b) return void this.violations.push("bootstrap result without a bootstrap");
      const bySandbox = p.value.results.find((r) => r.component === ConfigComponent.SANDBOX_CONFIG);
      const byProvider = p.value.results.find((r) => r.component === ConfigComponent.PROVIDER_ENVIRONMENT);
      if (b.sandboxConfig) {
        this.violations.push(...checkApplyResult(bySandbox, { sandbox: b.sandboxConfig }).map((s) => `bootstrap sandbox: ${s}`));
        this.violations.push(...checkAdmission(p.value.admission, bySandbox?.outcome ?? 0, b.sandboxConfig, this.hello.instanceId).map((s) => `bootstrap: ${s}`));
      }
      if (b.providerEnvironment) this.violations.push(...checkApplyResult(byProvider, { provider: b.providerEnvironment }).map((s) => `bootstrap provider: ${s}`));
    } else if (p.case === "configUpdateResult") {
      const d = this.delivered.get(p.value.updateId);
      if (!d) return void this.violations.push(`result for unknown update ${p.value.updateId}`);
      if (p.value.componentSequence !== d.sequence) this.violations.push(`component_sequence ${p.value.componentSequence} != ${d.sequence}`);
      this.violations.push(...checkApplyResult(p.value.result, d).map((s) => `update ${p.value.updateId}: ${s}`));
      if (d.sandbox) this.violations.push(...checkAdmission(p.value.admission, p.value.result?.outcome ?? 0, d.sandbox, this.hello.instanceId).map((s) => `update ${p.value.updateId}: ${s}`));
      else if (p.value.admission) this.violations.push("admission on a provider-environment result");
    } else if (p.case === "hello") {
      this.violations.push("second hello on one stream");
    }
  }
}

export class FakeGateway {
  readonly sessions: FakeSession[] = [];
  /** Sessions rejected (hello received, SessionRejected sent). */
  readonly rejected: SupervisorHello[] = [];
  /** HTTP/2 connections accepted so far. */
  connections = 0;
  url = "";
  private readonly server: http2.Http2Server;
  private readonly h2sessions = new Set<http2.ServerHttp2Session>();
  private sessionWaiters: Array<{ pick: (s: FakeSession) => boolean; resolve: (s: FakeSession) => void }> = [];

  constructor(readonly options: FakeGatewayOptions = {}) {
    const routes = (router: ConnectRouter) => {
      router.service(OpenShell, { connectSupervisor: (reqs, ctx) => this.handle(reqs, ctx) });
    };
    this.server = http2.createServer({ settings: { maxConcurrentStreams: 10_000 } }, connectNodeAdapter({ routes }));
    this.server.on("session", (s) => {
      this.connections += 1;
      this.h2sessions.add(s);
      s.once("close", () => this.h2sessions.delete(s));
    });
  }

  static async start(options: FakeGatewayOptions = {}): Promise<FakeGateway> {
    const gw = new FakeGateway(options);
    await new Promise<void>((resolve) => gw.server.listen(0, "127.0.0.1", resolve));
    gw.url = `http://127.0.0.1:${(gw.server.address() as AddressInfo).port}`;
    return gw;
  }

  /** Resolves with the first session (existing or future) that matches. */
  waitForSession(pick: (s: FakeSession) => boolean = () => true, timeoutMs = 5_000): Promise<FakeSession> {
    const found = this.sessions.find(pick);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching supervisor session within ${timeoutMs} ms (have ${this.sessions.length})`)), timeoutMs);
      this.sessionWaiters.push({
        pick,
        resolve: (s) => {
          clearTimeout(timer);
          resolve(s);
        },
      });
    });
  }

  /** All §3.10 violations of every session. */
  violations(): string[] {
    return this.sessions.flatMap((s) => s.violations.map((v) => `${s.sandboxId}#${s.epoch}: ${v}`));
  }

  /** Simulates a gateway restart: every connection is cut, then the same port listens again. */
  async restart(): Promise<void> {
    const port = Number(new URL(this.url).port);
    for (const s of this.sessions) s.drop();
    for (const s of this.h2sessions) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.drop();
    for (const s of this.h2sessions) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async *handle(reqs: AsyncIterable<SupervisorMessage>, ctx: HandlerContext): AsyncGenerator<GatewayMessage> {
    const it = reqs[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done || first.value.payload.case !== "hello") throw new ConnectError("expected SupervisorHello", Code.InvalidArgument);
    const hello = first.value.payload.value;
    await this.options.holdHello?.(hello);
    const rejection = this.options.reject?.(hello);
    if (rejection) {
      this.rejected.push(hello);
      yield gm({ case: "sessionRejected", value: { $typeName: "openshell.v1.SessionRejected", reason: rejection.reason } });
      throw new ConnectError(rejection.reason, rejection.code ?? Code.FailedPrecondition);
    }
    const bootstrap = this.options.bootstrap
      ? this.options.bootstrap(hello)
      : create(ConfigBootstrapSchema, { sandboxConfig: sandboxSnapshot(), providerEnvironment: providerSnapshot() });
    const session = new FakeSession(hello, ctx.requestHeader, bootstrap);
    this.sessions.push(session);
    for (const w of [...this.sessionWaiters]) {
      if (w.pick(session)) {
        this.sessionWaiters = this.sessionWaiters.filter((x) => x !== w);
        w.resolve(session);
      }
    }
    const heartbeatMs = this.options.heartbeatMs ?? 200;
    const timer = this.options.sendHeartbeats === false ? undefined : setInterval(() => {
            if (!session.silenced) session.outbox.push(gm({ case: "heartbeat", value: { $typeName: "openshell.v1.GatewayHeartbeat" } }));
          }, heartbeatMs);
    ctx.signal.addEventListener("abort", () => session.markEnded(), { once: true });
    void (async () => {
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          session.onMessage(r.value);
        }
      } catch {
        // the client went away
      }
      session.markEnded();
    })();
    try {
      yield gm({
        case: "sessionAccepted",
        value: {
          $typeName: "openshell.v1.SessionAccepted",
          sessionId: `session-${this.sessions.length}`,
          bootstrap,
          configApplyEnabled: this.options.configApplyEnabled ?? true,
          heartbeatInterval: durationFromMs(heartbeatMs),
        },
      });
      yield* session.outbox;
    } finally {
      if (timer) clearInterval(timer);
      session.markEnded();
    }
  }
}
