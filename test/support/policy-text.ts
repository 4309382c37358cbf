// Generated policy files of a given size, for the policy file tests and bench/policy-parse.ts:
// a head, as many rules as fit (joined by a separator), a tail.

/** The text of as many rules `rule(0)`, `rule(1)`, … as fit in `bytes` with `head` and `tail`, and their number. */
export function rulesWithin(bytes: number, head: string, rule: (i: number) => string, separator: string, tail: string): { text: string; rules: number } {
  const parts = [head];
  let size = head.length + tail.length;
  for (let i = 0; ; i++) {
    const next = (i === 0 ? "" : separator) + rule(i);
    if (size + next.length > bytes) return { text: parts.join("") + tail, rules: i };
    parts.push(next);
    size += next.length;
  }
}
