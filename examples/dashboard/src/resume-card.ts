// The resume card: wait for the outcome of any operation by its id, e.g. after a wait timed out
// or from another session.

import type { ConfigClient } from "openshell-config";
import { h } from "./dom.js";
import { explain } from "./explain.js";
import { completionView, failureView, renderOutcome, stopOutcome } from "./outcome-panel.js";
import { describe, fromStatus, type OperationView } from "./status.js";

const RESUME_WAIT_MS = 60_000;

export interface ResumeCardOptions {
  readonly client: ConfigClient;
  readonly gateway: string;
  /** Ends the wait when the page signs out. */
  readonly signal: AbortSignal;
  /** What an operation changed, when the page can tell. */
  readonly changeOf: (v: OperationView) => string | undefined;
}

export interface ResumeCard {
  readonly element: HTMLElement;
  /** Puts an operation id in the form, without waiting yet. */
  setOperationId(operationId: string): void;
  /** Puts an operation id in the form and waits for its outcome. */
  resume(operationId: string): void;
  stop(): void;
}

export function createResumeCard({ client, gateway, signal, changeOf }: ResumeCardOptions): ResumeCard {
  const resumeInput = h("input", { id: "resume-id", type: "text", placeholder: "operation id, e.g. 0f3c2d9e-…", spellcheck: "false", autocomplete: "off" });
  const resumeBtn = h("button", { type: "submit", id: "resume" }, "Wait for outcome");
  const resumeOut = h("div", { class: "outcome-slot", "data-testid": "resume-outcome" });

  const element = h(
    "section",
    { class: "card", "data-testid": "resume-card" },
    h("div", { class: "card-head" }, h("h2", {}, "Resume a wait")),
    h("p", { class: "muted small" }, "Wait for the outcome of any operation by its id, e.g. after a wait timed out or from another session."),
    h("form", { class: "inline-form", onsubmit: (ev: Event) => (ev.preventDefault(), void resume()) }, resumeInput, resumeBtn),
    resumeOut,
  );
  renderOutcome(resumeOut, undefined, "Operation ids are listed under Operations; click one to copy it here.");

  const failure = { explain: (err: unknown) => explain(err, gateway), resume: resumeWith };

  function resumeWith(operationId: string): void {
    resumeInput.value = operationId;
    void resume();
  }

  async function resume(): Promise<void> {
    const operationId = resumeInput.value.trim();
    if (operationId === "") {
      renderOutcome(resumeOut, { state: "invalid", label: "missing", title: "Enter an operation id." });
      return;
    }
    resumeBtn.disabled = true;
    const started = performance.now();
    renderOutcome(resumeOut, { state: "pending", label: "waiting…", title: "Waiting for the outcome…", operationId, startedAt: started });
    try {
      const completion = await client.awaitCompletion(
        { operationId },
        {
          timeoutMs: RESUME_WAIT_MS,
          signal,
          onProgress: (e) => {
            if (e.type !== "state") return;
            const v = fromStatus(e.status);
            const change = changeOf(v);
            renderOutcome(resumeOut, { state: "pending", title: describe(v, change), operationId, change: change ?? (v.target || undefined), startedAt: started });
          },
        },
      );
      renderOutcome(resumeOut, completionView(completion, performance.now() - started, changeOf(fromStatus(completion))));
    } catch (err) {
      renderOutcome(resumeOut, failureView(failure, err, performance.now() - started, operationId));
    } finally {
      resumeBtn.disabled = false;
    }
  }

  return {
    element,
    setOperationId(operationId) {
      resumeInput.value = operationId;
    },
    resume: resumeWith,
    stop: () => stopOutcome(resumeOut),
  };
}
