// A unified diff of two texts, line by line (as `diff -u`): `---`/`+++` headers, then hunks of
// the changed lines with 3 lines of context, `@@ -a,b +c,d @@`. Shared by the command line
// (`policy diff`, `policy set --dry-run`) and the dashboard (the diff of two policy revisions);
// plain TypeScript without Node or DOM APIs. The lines are matched by a longest
// common subsequence; policies are a few hundred lines at most, and past 4 million line pairs the
// diff falls back to replacing the whole text rather than using more memory.

export type Edit = { readonly op: " " | "-" | "+"; readonly line: string };

const MAX_PAIRS = 4_000_000;

/** The edit script from `a` to `b`: kept, removed and added lines in order. */
export function diffLines(a: readonly string[], b: readonly string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_PAIRS) return [...a.map((line) => ({ op: "-" as const, line })), ...b.map((line) => ({ op: "+" as const, line }))];
  // lcs[i * (m + 1) + j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = new Uint32Array((n + 1) * (m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * (m + 1) + j] = a[i] === b[j] ? lcs[(i + 1) * (m + 1) + j + 1]! + 1 : Math.max(lcs[(i + 1) * (m + 1) + j]!, lcs[i * (m + 1) + j + 1]!);
    }
  }
  const out: Edit[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ op: " ", line: a[i]! });
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i * (m + 1) + j + 1]! >= lcs[(i + 1) * (m + 1) + j]!)) {
      out.push({ op: "+", line: b[j]! });
      j++;
    } else {
      out.push({ op: "-", line: a[i]! });
      i++;
    }
  }
  // Removals before additions within a run of changes, as diff -u prints them.
  for (let k = 0; k < out.length; ) {
    if (out[k]!.op === " ") {
      k++;
      continue;
    }
    let end = k;
    while (end < out.length && out[end]!.op !== " ") end++;
    const run = out.slice(k, end);
    out.splice(k, run.length, ...run.filter((e) => e.op === "-"), ...run.filter((e) => e.op === "+"));
    k = end;
  }
  return out;
}

/** `diff -u` of two texts; "" when they are equal. */
export function unifiedDiff(before: string, after: string, labels: { readonly from: string; readonly to: string }, context = 3): string {
  const split = (t: string) => (t === "" ? [] : t.replace(/\n$/, "").split("\n"));
  const edits = diffLines(split(before), split(after));
  if (edits.every((e) => e.op === " ")) return "";
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`];
  // Line numbers (1-based) in a and b where each edit sits.
  const at: { a: number; b: number }[] = [];
  let la = 1;
  let lb = 1;
  for (const e of edits) {
    at.push({ a: la, b: lb });
    if (e.op !== "+") la++;
    if (e.op !== "-") lb++;
  }
  const changed = edits.map((e, k) => (e.op !== " " ? k : -1)).filter((k) => k >= 0);
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - context);
    let end = changed[k]!;
    // Hunks whose context would touch or overlap are one hunk.
    while (k + 1 < changed.length && changed[k + 1]! - end <= 2 * context) end = changed[++k]!;
    end = Math.min(edits.length - 1, end + context);
    k++;
    const hunk = edits.slice(start, end + 1);
    const countA = hunk.filter((e) => e.op !== "+").length;
    const countB = hunk.filter((e) => e.op !== "-").length;
    const startA = countA === 0 ? at[start]!.a - 1 : at[start]!.a;
    const startB = countB === 0 ? at[start]!.b - 1 : at[start]!.b;
    out.push(`@@ -${startA},${countA} +${startB},${countB} @@`);
    for (const e of hunk) out.push(`${e.op}${e.line}`);
  }
  return `${out.join("\n")}\n`;
}
