// Ctrl-C for the example commands (npm run gateway, npm run dashboard, npm start): the first
// SIGINT or SIGTERM stops the stack (each child gets SIGTERM, then SIGKILL after 5 s) and exits;
// any further signal is ignored until then. With `process.once`, a second Ctrl-C (an impatient
// user, or the tsx command passing the terminal's signal on once more) found no handler and
// killed this process before it had reaped its gateway and supervisors.

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
