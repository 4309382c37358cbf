// `completion bash|zsh`: prints the shell completion script (completion.ts); needs no gateway.

import { completionScript } from "../completion.js";
import { EXIT } from "../outcome.js";
import type { Shell } from "../types.js";

export function completion(stdout: { write(chunk: string): boolean }, shell: Shell): number {
  stdout.write(completionScript(shell));
  return EXIT.ok;
}
