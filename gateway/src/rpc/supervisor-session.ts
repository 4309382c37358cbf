// ConnectSupervisor: the supervisor's own stream. The first message must be a hello from the
// sandbox the token speaks for (under --no-auth: the sandbox the hello names, see
// supervisor-identity.ts), advertising streamed config apply (there is no polling fallback);
// the bootstrap rides in SessionAccepted; afterwards the session pushes live updates and reads
// results until either side ends the stream. The session is registered (and, with several
// replicas, its ownership claimed) before the bootstrap is built, so a commit on any replica from
// then on reaches it.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { GatewayMessage, SupervisorMessage } from "openshell-config/raw";
import { createSession, type SessionOptions } from "../delivery/session.js";
import type { SessionRegistry } from "../delivery/registry.js";
import { principalOf } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { lazyChild } from "../observability/logger.js";
import { supervisorSandbox, supervisorScope } from "./supervisor-identity.js";

export async function* connectSupervisor(
  deps: GatewayDeps,
  registry: SessionRegistry,
  options: SessionOptions,
  requests: AsyncIterable<SupervisorMessage>,
  ctx: HandlerContext,
): AsyncGenerator<GatewayMessage> {
  const scope = supervisorScope(principalOf(ctx), "ConnectSupervisor");
  const input = requests[Symbol.asyncIterator]();
  const first = await input.next();
  if (first.done) throw new ConnectError("stream closed before hello", Code.InvalidArgument);
  if (first.value.payload.case !== "hello") throw new ConnectError("expected SupervisorHello", Code.InvalidArgument);
  const hello = first.value.payload.value;
  const sb = await supervisorSandbox(deps, scope, hello.sandboxId);
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

  const session = createSession(deps, sb, options);
  try {
    // With several replicas this stores the claim, so the previous owner closes its session.
    await registry.add(session);
  } catch (err) {
    registry.remove(session);
    throw ConnectError.from(err, Code.Unavailable);
  }
  const log = lazyChild(deps.logger, { sandbox: sb.name, session: session.id, instance: hello.instanceId, epoch: String(hello.connectionEpoch) });
  log.info({}, "supervisor connected");
  const onAbort = () => session.close();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  // The claim above awaited the database: the caller may have gone meanwhile.
  if (ctx.signal.aborted) onAbort();
  // Read the supervisor's messages beside the outbound stream; either side ending ends both.
  const reader = (async () => {
    try {
      for (let next = await input.next(); !next.done; next = await input.next()) {
        await session.onMessage(next.value);
      }
      session.close();
    } catch (err) {
      session.close(ConnectError.from(err));
    }
  })();
  try {
    yield await session.accept();
    yield* session.outbound;
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    session.close();
    registry.remove(session);
    // Do not wait for the supervisor's side: it may keep its request stream open after we end.
    void input.return?.()?.catch(() => undefined);
    void reader;
    log.info({}, "supervisor stream closed");
  }
}
