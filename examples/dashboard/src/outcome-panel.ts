// The outcome panel under the editor and the resume form: one operation's state, what it changes,
// its id and the time spent, counting while the page waits.

import { CompletionTimeoutError, NotFoundError, type Completion } from "openshell-config";
import { breakable, h } from "./dom.js";
import { badge, badgeStateOf, describe, fromStatus, type BadgeState } from "./status.js";

export interface OutcomeView {
  readonly state: BadgeState;
  readonly label?: string;
  readonly title: string;
  readonly detail?: string | undefined;
  readonly operationId?: string | undefined;
  /** What the operation changes ("policy v3", "setting log_level"), once known. */
  readonly change?: string | undefined;
  readonly outcome?: string | undefined;
  /** Time spent so far; while `startedAt` is given the panel keeps counting. */
  readonly elapsedMs?: number | undefined;
  readonly startedAt?: number | undefined;
  readonly action?: HTMLElement | undefined;
}

/** The timer that keeps an outcome panel's elapsed time counting, per panel. */
const tickers = new WeakMap<HTMLElement, ReturnType<typeof setInterval>>();
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}\u00a0s`;

export function renderOutcome(slot: HTMLElement, o: OutcomeView | undefined, empty = "No update sent from this page yet."): void {
  clearInterval(tickers.get(slot));
  if (o === undefined) {
    slot.replaceChildren(h("p", { class: "muted small" }, empty));
    return;
  }
  const elapsed = h("span", { "data-testid": "elapsed" });
  const meta: (Node | string)[] = [];
  if (o.change) meta.push(h("span", { "data-testid": "outcome-change" }, o.change));
  if (o.operationId) meta.push(h("span", {}, "operation ", h("code", { "data-testid": "operation-id" }, o.operationId)));
  if (o.outcome && o.outcome !== "unspecified") meta.push(`outcome ${o.outcome}`);
  if (o.elapsedMs !== undefined || o.startedAt !== undefined) meta.push(elapsed);
  const tick = () => (elapsed.textContent = seconds(o.startedAt !== undefined ? performance.now() - o.startedAt : o.elapsedMs!));
  tick();
  if (o.startedAt !== undefined) tickers.set(slot, setInterval(tick, 500));
  slot.replaceChildren(
    h(
      "div",
      { class: `outcome outcome-${o.state}`, "data-state": o.state },
      badge(o.state, o.label),
      h(
        "div",
        { class: "outcome-body" },
        h("p", { class: "outcome-title" }, o.title),
        o.detail && h("p", { class: "outcome-detail", "data-testid": "outcome-detail" }, breakable(o.detail)),
        meta.length > 0 && h("p", { class: "muted small outcome-meta" }, ...meta.flatMap((m, i) => (i === 0 ? [m] : [" · ", m]))),
        o.action,
      ),
    ),
  );
}

/** Stops the panel's elapsed time from counting (when the page signs out). */
export const stopOutcome = (slot: HTMLElement): void => clearInterval(tickers.get(slot));

/** `change`: what the operation changed; when unknown, the panel names the target revision instead. */
export function completionView(c: Completion, elapsedMs: number, change: string | undefined): OutcomeView {
  const v = fromStatus(c);
  return { state: badgeStateOf(v), title: describe(v, change), detail: c.error, operationId: c.operationId, change: change ?? (v.target || undefined), outcome: c.outcome, elapsedMs };
}

export interface FailureContext {
  /** A message for an error that is not a timeout or a missing operation. */
  readonly explain: (err: unknown) => string;
  /** Waits again for an operation whose wait timed out (the panel's "Resume the wait"). */
  readonly resume: (operationId: string) => void;
}

export function failureView(ctx: FailureContext, err: unknown, elapsedMs: number, operationId?: string, change?: string): OutcomeView {
  if (err instanceof CompletionTimeoutError) {
    const id = err.operationId ?? operationId;
    return {
      state: "timeout",
      title: `The wait ended here after ${Math.round(elapsedMs / 1000)} s; the operation continues at the gateway.`,
      operationId: id,
      change,
      elapsedMs,
      action: id ? h("button", { type: "button", onclick: () => ctx.resume(id) }, "Resume the wait") : undefined,
    };
  }
  if (err instanceof NotFoundError) return { state: "rejected", label: "not found", title: "No such operation or sandbox in your workspace.", detail: err.message, operationId, elapsedMs };
  return { state: "rejected", title: "The gateway refused the request.", detail: ctx.explain(err), operationId, change, elapsedMs };
}
