// Ctrl-C for the example commands (npm run gateway, npm run dashboard, npm start): the first
// SIGINT or SIGTERM stops the stack (each child gets SIGTERM, then SIGKILL after 10 s) and exits;
// any further signal (an impatient second Ctrl-C) is ignored until the children are reaped. The
// npm scripts run these with `node --import tsx`, not the tsx command: that one passes a signal on
// and SIGKILLs its child when the child has not confirmed it within 30 ms, which a busy machine
// missed, so the stack's processes were orphaned mid-shutdown (a gateway then hung in its exit).

/** Runs `stop` on the first SIGINT or SIGTERM, then exits with `code`; later signals wait for it. */
export function stopOnSignals(stop: () => Promise<unknown>, code: (signal: NodeJS.Signals) => number = () => 0): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    void stop().finally(() => process.exit(code(signal)));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}
