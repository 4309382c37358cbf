// "Did you mean …?": the closest of a few candidates to what was typed (edit distance, a swap of
// two neighbouring letters counting as one edit), for the values and commands the command line
// checks itself (--output, --type, the shell, subcommands); commander suggests options. Also used
// for unknown fields of a policy file.

/** The edit distance between two strings: insertions, deletions, substitutions and swaps of two neighbours. */
export function editDistance(a: string, b: string): number {
  // d[i][j]: the distance between a[..i] and b[..j] (optimal string alignment).
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate closest to `typed`, when it is close enough to be a typo (at most a third of
 * its letters wrong, and at most 3) or the only one it begins (`hist` → `history`); undefined
 * otherwise.
 */
export function closest(typed: string, candidates: readonly string[]): string | undefined {
  const prefixed = typed.length >= 2 ? candidates.filter((c) => c.toLowerCase().startsWith(typed.toLowerCase())) : [];
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(typed.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  const allowed = Math.min(3, Math.max(1, Math.floor(Math.max(typed.length, best?.length ?? 0) / 3)));
  return best !== undefined && bestDistance <= allowed ? best : undefined;
}

/** `; did you mean "x"?` for the closest candidate, or "". */
export function didYouMean(typed: string, candidates: readonly string[]): string {
  const c = closest(typed, candidates);
  return c === undefined ? "" : `; did you mean "${c}"?`;
}
