// ConnectSupervisor streams opened with node:http2 directly, the way a hostile or broken peer
// does: a session that grants the gateway no flow-control window (so not one byte of the
// bootstrap can be written), a hello or none, and what the gateway's answer was: a status, or a
// reset. No client library in the way: each would read, time out or end the stream itself.

import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import type { Code } from "@connectrpc/connect";
import {
  ConfigApplyOutcome as Outcome,
  ConfigComponent,
  ConfigurationAdmissionState as Admission,
  SupervisorMessageSchema,
  type GatewayMessage,
} from "openshell-config/raw";
import { envelope } from "../reliability/raw-wire.js";

export const CONNECT_SUPERVISOR = "/openshell.v1.OpenShell/ConnectSupervisor";

/** A gRPC-framed SupervisorHello for `sandbox`. */
export function helloFrame(sandbox: string): Uint8Array {
  const msg = create(SupervisorMessageSchema, {
    payload: {
      case: "hello",
      value: { sandboxId: sandbox, instanceId: "load-test", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true },
    },
  });
  return envelope(toBinary(SupervisorMessageSchema, msg));
}

/** A gRPC-framed ConfigBootstrapResult applying both components of the bootstrap in `accepted`. */
export function bootstrapResultFrame(accepted: GatewayMessage): Uint8Array {
  if (accepted.payload.case !== "sessionAccepted") throw new Error(`expected sessionAccepted, got ${accepted.payload.case}`);
  const snap = accepted.payload.value.bootstrap!.sandboxConfig!;
  const provider = accepted.payload.value.bootstrap!.providerEnvironment!;
  const sandboxRevision = { component: { case: "sandboxConfig" as const, value: { configRevision: snap.configRevision, policyVersion: snap.version, policySource: snap.policySource, settingsRevision: snap.settingsRevision } } };
  const providerRevision = { component: { case: "providerEnvironment" as const, value: provider.providerEnvRevision } };
  const msg = create(SupervisorMessageSchema, {
    payload: {
      case: "configBootstrapResult",
      value: {
        results: [
          { component: ConfigComponent.SANDBOX_CONFIG, requestedRevision: sandboxRevision, appliedRevision: sandboxRevision, outcome: Outcome.APPLIED },
          { component: ConfigComponent.PROVIDER_ENVIRONMENT, requestedRevision: providerRevision, appliedRevision: providerRevision, outcome: Outcome.APPLIED },
        ],
        admission: { instanceId: "load-test", state: Admission.ACCEPTED, policyVersion: snap.version, policyHash: snap.policyHash, configRevision: snap.configRevision, providerEnvRevision: snap.providerEnvRevision },
      },
    },
  });
  return envelope(toBinary(SupervisorMessageSchema, msg));
}

/** How the gateway ended a stream: with a gRPC status (trailers), or by resetting it (no status). */
export interface StreamEnd {
  readonly status: Code | undefined;
  readonly message: string;
  readonly rstCode: number;
}

/** One ConnectSupervisor stream opened raw; what it saw of the gateway's answer. */
export interface RawStream {
  readonly stream: http2.ClientHttp2Stream;
  /** Response headers arrived (the bootstrap is being written). */
  readonly headers: Promise<void>;
  /**
   * Settles when the gateway has ended its side: a grpc-status arrived, or the stream was reset
   * or closed (our request side stays open, so the stream itself does not close on a status).
   */
  readonly ended: Promise<StreamEnd>;
  /** Whether `ended` has settled. */
  isEnded(): boolean;
}

/**
 * Opens a ConnectSupervisor stream on `session` that sends a hello (unless `hello: false`) and
 * keeps its request side open; it reads what arrives only with `read: true`.
 */
export function openSupervisorStream(session: http2.ClientHttp2Session, token: string | undefined, sandbox: string, options: { hello?: boolean; read?: boolean } = {}): RawStream {
  const stream = session.request({
    ":method": "POST",
    ":path": CONNECT_SUPERVISOR,
    "content-type": "application/grpc+proto",
    te: "trailers",
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  let done = false;
  let finish: (end: StreamEnd) => void = () => undefined;
  const ended = new Promise<StreamEnd>((resolve) => (finish = resolve));
  const take = (h: http2.IncomingHttpHeaders) => {
    if (h["grpc-status"] === undefined || done) return;
    done = true;
    const message = h["grpc-message"] === undefined ? "" : decodeURIComponent(String(h["grpc-message"]));
    finish({ status: Number(h["grpc-status"]) as Code, message, rstCode: 0 });
  };
  const headers = new Promise<void>((resolve) => stream.once("response", () => resolve()));
  stream.on("response", take);
  stream.on("trailers", take);
  stream.on("error", () => undefined);
  stream.once("close", () => {
    if (done) return;
    done = true;
    finish({ status: undefined, message: "", rstCode: stream.rstCode ?? 0 });
  });
  if (options.read) stream.resume();
  if (options.hello !== false) stream.write(helloFrame(sandbox));
  return { stream, headers, ended, isEnded: () => done };
}

/**
 * An HTTP/2 client session that grants the server no flow-control window: the gateway can send
 * headers and trailers but not one byte of a message (as a peer that stops reading ends up).
 */
export function zeroWindowSession(url: string): http2.ClientHttp2Session {
  const session = http2.connect(url, { settings: { initialWindowSize: 0 } });
  session.on("error", () => undefined);
  return session;
}

/** An HTTP/2 client session that reads what it is sent. */
export function readingSession(url: string): http2.ClientHttp2Session {
  const session = http2.connect(url);
  session.on("error", () => undefined);
  return session;
}
