// Reads README.md's fenced blocks for test/readme/readme.test.ts: each ```sh block carries a
// marker on the line before it, `<!-- readme-test:NAME … -->`, that says which test runs it; a
// ```text block whose lines start with `$ ` shows what a command prints.

/** One fenced block of the README. */
export interface Block {
  readonly lang: string;
  /** NAME of the `<!-- readme-test:NAME -->` marker on the line before the fence, if any. */
  readonly marker: string | undefined;
  readonly body: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

export function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l === "```");
    if (end === -1) throw new Error(`README.md:${i + 1}: a fenced block is not closed`);
    const before = i > 0 ? lines[i - 1]! : "";
    blocks.push({
      lang: open[1]!,
      marker: /^<!-- readme-test:([\w-]+)/.exec(before)?.[1],
      body: lines.slice(i + 1, end).join("\n"),
      line: i + 1,
    });
    i = end;
  }
  return blocks;
}

/** One command of a ```sh block: a line, or a line with a here-document and the lines it takes. */
export interface ShellCommand {
  /** Exactly as printed (comment included). */
  readonly text: string;
  /** The command without its trailing `# …` comment, as a `$ ` line of a ```text block shows it. */
  readonly bare: string;
  /** The exit status the README documents (`# exit N` in its comment), else 0. */
  readonly exitCode: number;
}

export function shellCommands(body: string): ShellCommand[] {
  const lines = body.split("\n");
  const out: ShellCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const parts = [line];
    const heredoc = /<<\s*'?(\w+)'?\s*$/.exec(line);
    if (heredoc) {
      const end = lines.findIndex((l, j) => j > i && l === heredoc[1]);
      if (end === -1) throw new Error(`here-document ${heredoc[1]} is not closed: ${line}`);
      parts.push(...lines.slice(i + 1, end + 1));
      i = end;
    }
    // A comment starts at " # " (none of the README's commands has one inside quotes).
    const comment = /\s+#\s.*$/.exec(line);
    const exit = comment ? /#\s*exit (\d+)\b/.exec(comment[0]) : null;
    out.push({ text: parts.join("\n"), bare: comment ? line.slice(0, comment.index) : line.trimEnd(), exitCode: exit ? Number(exit[1]) : 0 });
  }
  return out;
}

/** A `$ command` of a ```text block and the lines the README shows it printing. */
export interface ShownOutput {
  readonly command: string;
  readonly lines: readonly string[];
}

export function shownOutputs(body: string): ShownOutput[] {
  const out: { command: string; lines: string[] }[] = [];
  for (const line of body.split("\n")) {
    if (line.startsWith("$ ")) out.push({ command: line.slice(2).trim(), lines: [] });
    else if (out.length > 0) out[out.length - 1]!.lines.push(line);
  }
  return out;
}

/**
 * The lines of `shown` that `actual` does not print. A shown line is a sequence of words; `…`
 * stands for anything (a word with `…` in it is a placeholder for a value that differs each
 * run). It matches when one line of `actual` has its other words, whole and in that order,
 * whatever the spacing and whatever else the line has: facts, not layout.
 */
export function missingLines(shown: readonly string[], actual: string): string[] {
  const words = (line: string) => line.split(/\s+/).filter((w) => w !== "");
  const actualLines = actual.split("\n").map(words);
  const missing: string[] = [];
  for (const line of shown) {
    const want = words(line).filter((w) => !w.includes("…"));
    if (want.length === 0) continue;
    const found = actualLines.some((have) => {
      let i = 0;
      for (const w of have) if (w === want[i]) i++;
      return i >= want.length;
    });
    if (!found) missing.push(line);
  }
  return missing;
}
