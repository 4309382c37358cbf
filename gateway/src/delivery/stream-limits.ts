// Caps on ConnectSupervisor streams, counted from the moment a handler starts until it has ended
// (not merely until its session leaves the registry): per gateway, per supervisor token, and per
// sandbox. A stream over the gateway's or the token's cap is refused RESOURCE_EXHAUSTED before it
// costs anything; a stream over the sandbox's cap supersedes the sandbox's oldest stream, as a
// reconnecting supervisor's new stream must win over its old half-open one. Bootstraps of one
// sandbox take turns (bootstrap-turns.ts). Exported as the gauge openshell_gateway_supervisor_streams
// and the counter openshell_gateway_supervisor_streams_refused_total.

import { Code, ConnectError } from "@connectrpc/connect";
import { Counter, Gauge, type Registry } from "prom-client";
import { createBootstrapTurns, DEFAULT_BOOTSTRAP_PACE } from "./bootstrap-turns.js";

export interface SupervisorStreamLimits {
  /** Streams open at once on this gateway (a valid token must not open unbounded streams). */
  readonly maxStreams: number;
  /** Streams open at once per supervisor token (its principal and sandbox); none for --no-auth. */
  readonly perToken: number;
  /** Streams of one sandbox open at once once their hello named it; a newer one supersedes the oldest. */
  readonly perSandbox: number;
  /** A sandbox's next bootstrap waits this many times its last one's duration (bootstrap-turns.ts). */
  readonly bootstrapPace: number;
}

/** Room for the 10,000-session benchmark and a full reconnect wave on top of it. */
export const DEFAULT_SUPERVISOR_STREAM_LIMITS: SupervisorStreamLimits = Object.freeze({
  maxStreams: 20_000,
  perToken: 4,
  perSandbox: 2,
  bootstrapPace: DEFAULT_BOOTSTRAP_PACE,
});

/** One admitted stream's place in the counts. */
export interface StreamTicket {
  /**
   * The stream's hello named `sandboxId`. When the sandbox then has more than `perSandbox`
   * streams, the oldest one's `supersede` is called (once) with an ABORTED error.
   */
  bind(sandboxId: string, supersede: (reason: ConnectError) => void): void;
  /**
   * Waits for the bound sandbox's bootstrap turn (bootstrap-turns.ts): one build at a time per
   * sandbox, paced, so that a token opening stream after stream cannot starve every other
   * request. Resolves true when granted: the caller must then call `bootstrapDone`, whatever
   * happens (a stream that has ended keeps the turn while its build runs to its end, so that
   * builds never overlap). Resolves false when the stream was released while it waited.
   */
  bootstrapTurn(): Promise<boolean>;
  /** This stream's bootstrap is built and encoded (or failed): the sandbox's next stream may build its own. */
  bootstrapDone(): void;
  /** The stream has ended (a turn it still awaits is given up); idempotent. */
  release(): void;
}

export interface SupervisorStreams {
  /**
   * Admits a new stream of the token `tokenKey` (undefined: no token, under --no-auth), or throws
   * RESOURCE_EXHAUSTED naming the cap it would exceed.
   */
  admit(tokenKey: string | undefined): StreamTicket;
  /** Streams admitted and not yet released. */
  readonly size: number;
}

interface Entry {
  readonly token: string | undefined;
  sandbox: string | undefined;
  supersede: ((reason: ConnectError) => void) | undefined;
  released: boolean;
}

export function createSupervisorStreams(limits: SupervisorStreamLimits, registry?: Registry): SupervisorStreams {
  let size = 0;
  const perToken = new Map<string, number>();
  /** Bound streams of each sandbox, oldest first. */
  const bySandbox = new Map<string, Entry[]>();
  const turns = createBootstrapTurns(limits.bootstrapPace);
  const refused = registry
    ? new Counter({
        name: "openshell_gateway_supervisor_streams_refused_total",
        help: "ConnectSupervisor streams refused for a cap, by cap (gateway, token).",
        labelNames: ["cap"] as const,
        registers: [registry],
      })
    : undefined;
  if (registry) {
    new Gauge({
      name: "openshell_gateway_supervisor_streams",
      help: "ConnectSupervisor streams open (from the handler's start until it has ended).",
      registers: [registry],
      collect() {
        this.set(size);
      },
    });
  }

  function refuse(cap: "gateway" | "token", message: string): never {
    refused?.inc({ cap });
    throw new ConnectError(message, Code.ResourceExhausted);
  }

  function unbind(entry: Entry): void {
    if (entry.sandbox === undefined) return;
    const list = bySandbox.get(entry.sandbox);
    const at = list?.indexOf(entry) ?? -1;
    if (list && at >= 0) {
      list.splice(at, 1);
      if (list.length === 0) bySandbox.delete(entry.sandbox);
    }
  }

  return {
    get size() {
      return size;
    },
    admit(token) {
      if (size >= limits.maxStreams) {
        const streams = limits.maxStreams === 1 ? "supervisor stream" : "supervisor streams";
        refuse("gateway", `this gateway already serves ${limits.maxStreams} ${streams}, its limit; try again later`);
      }
      const held = token === undefined ? 0 : (perToken.get(token) ?? 0);
      if (token !== undefined && held >= limits.perToken) {
        refuse("token", `this supervisor token already has ${held} ConnectSupervisor streams open, the most one token may hold (${limits.perToken}); end one first`);
      }
      size += 1;
      if (token !== undefined) perToken.set(token, held + 1);
      const entry: Entry = { token, sandbox: undefined, supersede: undefined, released: false };
      return {
        bind(sandboxId, supersede) {
          if (entry.released || entry.sandbox !== undefined) return;
          entry.sandbox = sandboxId;
          entry.supersede = supersede;
          const list = bySandbox.get(sandboxId) ?? [];
          list.push(entry);
          bySandbox.set(sandboxId, list);
          while (list.length > limits.perSandbox) {
            const oldest = list.shift()!;
            oldest.supersede?.(
              new ConnectError(`replaced by a newer stream of the same sandbox (at most ${limits.perSandbox} per sandbox)`, Code.Aborted),
            );
          }
        },
        bootstrapTurn() {
          if (entry.released) return Promise.resolve(false);
          return entry.sandbox === undefined ? Promise.resolve(true) : turns.request(entry.sandbox, entry);
        },
        bootstrapDone() {
          if (entry.sandbox !== undefined) turns.done(entry.sandbox, entry);
        },
        release() {
          if (entry.released) return;
          entry.released = true;
          size -= 1;
          if (entry.sandbox !== undefined) turns.cancel(entry.sandbox, entry);
          unbind(entry);
          entry.supersede = undefined;
          if (entry.token !== undefined) {
            const n = (perToken.get(entry.token) ?? 1) - 1;
            if (n > 0) perToken.set(entry.token, n);
            else perToken.delete(entry.token);
          }
        },
      };
    },
  };
}
