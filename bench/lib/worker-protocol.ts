// The protocol between the bench orchestrator and its client worker processes (bench/client.ts
// with the SDK, bench/floor/client.ts without), written once for both sides: one JSON task on the
// worker's stdin, `{"type":"ready"}` once it is connected, a "go" line for tasks with `barrier`
// (synchronized starts), then one `{"type":"result",…}` or `{"type":"error",…}` line on stdout.

import { createInterface } from "node:readline";
import type { Child } from "./proc.js";

/** A started worker: `ready` once it waits for "go", `result` when its task ended. */
export interface Worker<R> {
  readonly child: Child;
  readonly ready: Promise<void>;
  readonly result: Promise<R>;
}

/** Sends `input` to a freshly started `child` and follows its answers. */
export function startWorker<R>(child: Child, kind: string, input: object): Worker<R> {
  child.send(JSON.stringify(input));
  const parse = (l: string): { type?: string; result?: R; error?: string } => {
    try {
      return JSON.parse(l) as { type: string };
    } catch {
      return { error: `unreadable answer (${l.length} characters): ${l.slice(0, 200)}…` };
    }
  };
  const ready = child.waitForLine((l) => parse(l).type === "ready", 120_000).then(() => undefined);
  // Any line that is not "ready" ends the task: a result, an error, or something unreadable.
  const result = child.waitForLine((l) => parse(l).type !== "ready", 3_600_000).then((l) => {
    const m = parse(l);
    if (m.type !== "result") throw new Error(`${child.name} (${kind}) failed: ${m.error}`);
    return m.result!;
  });
  void ready.catch(() => {});
  return { child, ready, result };
}

/** Releases `workers` (started with `barrier`) at once, after every one is ready (or one ended). */
export async function releaseTogether<R>(workers: readonly Worker<R>[], onGo?: () => void | Promise<void>): Promise<{ results: R[]; goAt: number }> {
  await Promise.race([Promise.all(workers.map((w) => w.ready)), Promise.all(workers.map((w) => w.result))]);
  // Counters read here (before "go", after every worker's set-up and warm-up) cover the run alone.
  await onGo?.();
  const goAt = Date.now();
  for (const w of workers) w.child.send("go");
  return { results: await Promise.all(workers.map((w) => w.result)), goAt };
}

/** Writes one JSON line and resolves once it is flushed (a large write to a pipe completes asynchronously). */
function answer(message: unknown): Promise<void> {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(message)}\n`, () => resolve()));
}

/**
 * The worker's side: reads its task, lets `connect` open its connection (before any clock starts)
 * and return the function that runs the task, says ready, waits for "go" when asked, answers the
 * result or the error, and exits.
 */
export function serveWorker<T extends { barrier?: boolean }>(connect: (task: T) => Promise<(task: T) => Promise<unknown>>): void {
  const main = async () => {
    const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    const first = await lines.next();
    if (first.done) throw new Error("no task on stdin");
    const task = JSON.parse(first.value) as T;
    const run = await connect(task);
    process.stdout.write(`${JSON.stringify({ type: "ready" })}\n`);
    if (task.barrier) while ((await lines.next()).value !== "go");
    await answer({ type: "result", result: await run(task) });
  };
  main().then(
    () => process.exit(0),
    async (err: unknown) => {
      await answer({ type: "error", error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    },
  );
}
