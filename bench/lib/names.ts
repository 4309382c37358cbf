// Sandbox names of a supervisor process: `<prefix>0000` … as `--sandboxes N --sandbox-prefix P`
// derives them (supervisor/src/cli.ts), shared by the orchestrator and the floor supervisor.

export function sandboxNames(prefix: string, count: number): string[] {
  const width = Math.max(4, String(count - 1).length);
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(width, "0")}`);
}
