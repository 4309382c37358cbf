// Whose turn it is to build a bootstrap, per sandbox. Building a bootstrap of a large policy
// costs hundreds of milliseconds of CPU (decoding the policy, then encoding the message), all of
// it on the event loop. Without turns, one supervisor token opening stream after stream, each
// superseding the last, had the gateway build them back to back, and every other request
// (Health included) waited seconds behind them. So, per sandbox:
//   - one build at a time, in order of asking; a stream that ends while it waits never builds;
//   - the next build starts no sooner than `pace` times the last one's duration after it ended,
//     so one sandbox's streams take at most 1/(pace+1) of the gateway's time. A small policy
//     builds in a millisecond and its supervisor never notices; a reconnect storm of many
//     sandboxes is not slowed, since sandboxes do not wait for each other.

/** A build is at most this share of a sandbox's time: wait `pace` times its duration after it. */
export const DEFAULT_BOOTSTRAP_PACE = 4;

/**
 * The longest wait pacing imposes. A build's duration is wall time, which a busy gateway
 * stretches; a supervisor reconnecting after such a build must not wait for long.
 */
export const MAX_PACE_WAIT_MS = 10_000;

export interface BootstrapTurns {
  /**
   * Resolves true when `who` may build `sandbox`'s bootstrap (it must then call `done`), or
   * false once `cancel` withdrew the request.
   */
  request(sandbox: string, who: object): Promise<boolean>;
  /** `who` finished (or abandoned) the build it was granted. */
  done(sandbox: string, who: object): void;
  /** `who` no longer waits for a turn (a turn already granted is not affected). */
  cancel(sandbox: string, who: object): void;
}

interface Waiter {
  readonly who: object;
  readonly grant: (granted: boolean) => void;
}

interface Turn {
  holder: object | undefined;
  startedAt: number;
  /** No build starts before this (performance.now() time). */
  notBefore: number;
  readonly waiting: Waiter[];
  timer: ReturnType<typeof setTimeout> | undefined;
}

export function createBootstrapTurns(pace = DEFAULT_BOOTSTRAP_PACE): BootstrapTurns {
  const turns = new Map<string, Turn>();

  /** Grants the next waiter its turn when the sandbox is free and paced; forgets idle sandboxes. */
  function pump(sandbox: string, t: Turn): void {
    if (t.holder !== undefined || t.timer !== undefined) return;
    const now = performance.now();
    if (t.waiting.length === 0) {
      if (now >= t.notBefore) turns.delete(sandbox);
      // Kept until its pace has passed, so that a stream opened just after is still paced.
      else t.timer = setTimeout(() => ((t.timer = undefined), pump(sandbox, t)), t.notBefore - now).unref();
      return;
    }
    if (now < t.notBefore) {
      t.timer = setTimeout(() => ((t.timer = undefined), pump(sandbox, t)), t.notBefore - now).unref();
      return;
    }
    const next = t.waiting.shift()!;
    t.holder = next.who;
    t.startedAt = now;
    next.grant(true);
  }

  return {
    request(sandbox, who) {
      let t = turns.get(sandbox);
      if (!t) {
        t = { holder: undefined, startedAt: 0, notBefore: 0, waiting: [], timer: undefined };
        turns.set(sandbox, t);
      }
      const turn = t;
      return new Promise<boolean>((grant) => {
        turn.waiting.push({ who, grant });
        pump(sandbox, turn);
      });
    },
    done(sandbox, who) {
      const t = turns.get(sandbox);
      if (!t || t.holder !== who) return;
      const now = performance.now();
      t.holder = undefined;
      t.notBefore = now + Math.min(MAX_PACE_WAIT_MS, pace * (now - t.startedAt));
      pump(sandbox, t);
    },
    cancel(sandbox, who) {
      const t = turns.get(sandbox);
      const at = t?.waiting.findIndex((w) => w.who === who) ?? -1;
      if (!t || at < 0) return;
      t.waiting.splice(at, 1)[0]!.grant(false);
      pump(sandbox, t);
    },
  };
}
