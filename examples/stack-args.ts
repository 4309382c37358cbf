// The command line of `npm run gateway` and `npm run dashboard`: `--mtls` or nothing, `-h` for
// help; anything else is one line on stderr and exit 2. Also where the local stack keeps its state.

import { mkdirSync } from "node:fs";
import { resolve } from "node:path";

export interface StackArgs {
  /** `--mtls`: the stack on mutual TLS. */
  readonly mtls: boolean;
  /** `$OPENSHELL_LOCAL_DIR`, else `./.openshell-local`: created when missing. */
  readonly dir: string;
}

/** Parses `process.argv` for `npm run <script>`; exits on help or a bad argument. */
export function parseStackArgs(script: string): StackArgs {
  const usage = `usage: npm run ${script} [-- --mtls]`;
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage);
    process.exit(0);
  }
  const unknown = args.find((a) => a !== "--mtls");
  if (unknown !== undefined) {
    console.error(`npm run ${script}: unknown argument ${JSON.stringify(unknown)} (${usage})`);
    process.exit(2);
  }
  const dir = resolve(process.env.OPENSHELL_LOCAL_DIR ?? ".openshell-local");
  mkdirSync(dir, { recursive: true });
  return { mtls: args.includes("--mtls"), dir };
}
