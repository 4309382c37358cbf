// ConnectSupervisor: the supervisor's own stream. The first message must be a hello from the
// sandbox the token speaks for (under --no-auth: the sandbox the hello names, see
// supervisor-identity.ts), advertising streamed config apply (there is no polling fallback);
// the bootstrap rides in SessionAccepted; afterwards the session pushes live updates and reads
// results until either side ends the stream. The session is registered (and, with several
// replicas, its ownership claimed) before the bootstrap is built, so a commit on any replica from
// then on reaches it.
//
// Every stream is bounded (stream-limits.ts, stream-lifetime.ts): admitted only under the
// gateway's and the token's caps, superseded by newer streams of its sandbox, given a bounded
// time for its hello and for each message to be written, and ended, with its session removed
// and its HTTP/2 stream reset if a write is stuck, as soon as its peer goes away.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { GatewayMessage, SupervisorMessage } from "openshell-config/raw";
import { NO_AUTH_PRINCIPAL, type Principal } from "../auth/principal.js";
import { createSession, type Session, type SessionOptions } from "../delivery/session.js";
import type { SessionRegistry } from "../delivery/registry.js";
import { createStreamLifetime } from "../delivery/stream-lifetime.js";
import type { StreamTicket, SupervisorStreams } from "../delivery/stream-limits.js";
import { transportStreamKey } from "../delivery/transport-stream.js";
import { corkUntilTick } from "../delivery/write-batch.js";
import { principalOf } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { lazyChild } from "../observability/logger.js";
import { isBinaryCodec } from "./pre-encode-responses.js";
import { supervisorSandbox, supervisorScope } from "./supervisor-identity.js";

/** What the supervisor streams of one gateway share. */
export interface SupervisorStreamContext {
  readonly registry: SessionRegistry;
  readonly streams: SupervisorStreams;
  readonly options: SessionOptions;
}

/** The key the per-token cap counts by: the principal and the sandbox its token names; none under --no-auth. */
function tokenKey(p: Principal): string | undefined {
  if (p === NO_AUTH_PRINCIPAL) return undefined;
  return `${p.name}\u0000${p.sandbox?.workspace ?? ""}\u0000${p.sandbox?.name ?? ""}`;
}

/** What the handler throws once its stream has ended from outside. */
function endedReason(reason: unknown): unknown {
  return reason ?? new ConnectError("the supervisor's stream was closed", Code.Canceled);
}

export async function* connectSupervisor(
  deps: GatewayDeps,
  { registry, streams, options }: SupervisorStreamContext,
  requests: AsyncIterable<SupervisorMessage>,
  ctx: HandlerContext,
): AsyncGenerator<GatewayMessage> {
  const input = requests[Symbol.asyncIterator]();
  let ticket: StreamTicket | undefined;
  let session: Session | undefined;
  let log: ReturnType<typeof lazyChild> | undefined;
  const transport = ctx.values.get(transportStreamKey);
  const lifetime = createStreamLifetime({
    signal: ctx.signal,
    transport,
    writeTimeoutMs: options.writeTimeoutMs,
    onEnd(reason) {
      if (session) {
        session.close(reason);
        registry.remove(session);
      }
      ticket?.release();
      // Do not wait for the supervisor's side: it may keep its request stream open after we end.
      void input.return?.()?.catch(() => undefined);
      log?.info({ reason: reason instanceof Error ? reason.message : "handler finished" }, "supervisor stream closed");
    },
  });
  try {
    const principal = principalOf(ctx);
    const scope = supervisorScope(principal, "ConnectSupervisor");
    // Before anything is read or built: a stream over a cap costs nothing. (Even a refusal goes
    // through the lifetime: its status cannot reach a peer that reads nothing, and the stream
    // must still be closed.)
    const admitted = streams.admit(tokenKey(principal));
    ticket = admitted;
    const first = await lifetime.within(
      input.next(),
      options.helloTimeoutMs,
      () => new ConnectError(`no SupervisorHello within ${options.helloTimeoutMs / 1000} s of opening the stream`, Code.DeadlineExceeded),
    );
    if (first.done) throw new ConnectError("stream closed before hello", Code.InvalidArgument);
    if (first.value.payload.case !== "hello") throw new ConnectError("expected SupervisorHello", Code.InvalidArgument);
    const hello = first.value.payload.value;
    const sb = await lifetime.within(supervisorSandbox(deps, scope, hello.sandboxId), options.helloTimeoutMs, () => new ConnectError("looking up the sandbox timed out", Code.Unavailable));
    if (!sb) {
      throw new ConnectError(`sandbox "${hello.sandboxId}" not found${scope.kind === "token" ? " for this token" : ""}`, Code.NotFound);
    }
    if (!hello.supportsConfigSnapshots || !hello.supportsConfigApply) {
      throw new ConnectError(
        "this gateway pushes configuration and requires a supervisor that applies streamed snapshots " +
          "(supports_config_snapshots and supports_config_apply); upgrade the supervisor, polling is not supported",
        Code.FailedPrecondition,
      );
    }
    // Over the sandbox's cap the oldest stream ends (ABORTED, or reset if its write is stuck).
    admitted.bind(sb.id, (reason) => lifetime.end(reason));
    if (lifetime.ended) throw endedReason(lifetime.reason);

    // A binary codec (gRPC, gRPC-Web, Connect with proto) takes pre-encoded messages; JSON cannot.
    const binary = isBinaryCodec(ctx.requestHeader.get("content-type"));
    const current = createSession(deps, sb, binary ? { ...options, preEncoded: true } : options);
    session = current;
    // Replaced, timed out, overflowed: the stream ends now, even with a write stuck.
    current.onClose((reason) => lifetime.end(reason));
    try {
      // With several replicas this stores the claim, so the previous owner closes its session.
      await registry.add(current);
    } catch (err) {
      throw ConnectError.from(err, Code.Unavailable);
    }
    log = lazyChild(deps.logger, { sandbox: sb.name, session: current.id, instance: hello.instanceId, epoch: String(hello.connectionEpoch) });
    log.info({}, "supervisor connected");
    // The claim above awaited the database: the caller may have gone meanwhile.
    if (lifetime.ended) throw endedReason(lifetime.reason);
    // Read the supervisor's messages beside the outbound stream; either side ending ends both.
    void (async () => {
      try {
        for (let next = await input.next(); !next.done; next = await input.next()) {
          await current.onMessage(next.value);
        }
        current.close();
      } catch (err) {
        current.close(ConnectError.from(err));
      }
    })();
    // One bootstrap at a time per sandbox, paced (bootstrap-turns.ts), the turn held until
    // connect-node has encoded it: that happens in the microtasks right after the yield.
    // Not raced with the stream's end: a turn granted must be handed back, and ending the stream
    // while it waits resolves the wait with false.
    if (!(await admitted.bootstrapTurn())) throw endedReason(lifetime.reason);
    let accepted: GatewayMessage;
    try {
      if (lifetime.ended) throw endedReason(lifetime.reason);
      accepted = await current.accept();
      // Building decoded the policy; encoding it is as long again: let other requests in between
      // (a timer, not setImmediate, so that reads queued meanwhile go first: see sqlite-store.ts).
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (lifetime.ended) throw endedReason(lifetime.reason);
    } catch (err) {
      admitted.bootstrapDone();
      throw err;
    }
    lifetime.writing();
    setImmediate(() => admitted.bootstrapDone());
    yield accepted;
    lifetime.written();
    for await (const msg of current.outbound) {
      lifetime.writing();
      // More ready behind this one (a policy change's two pushes): one socket write for them all.
      if (current.outbound.waiting() > 0) corkUntilTick(transport);
      yield msg;
      lifetime.written();
    }
  } catch (err) {
    lifetime.end(err);
    throw err;
  } finally {
    lifetime.end();
  }
}
