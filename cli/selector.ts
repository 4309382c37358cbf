// Label selectors as kubectl reads them: requirements joined by commas, all of which must hold
// (a comma ANDs, so `env=dev,env=staging` matches nothing). A requirement is `k=v` (or `k==v`),
// `k!=v`, `k in (v1,v2)`, `k notin (v1,v2)`, `k` (the label exists) or `!k` (it does not). As in
// kubectl, `k!=v` and `k notin (…)` also match a sandbox without the label. Repeated --selector
// flags AND as well. The gateway's ListSandboxes takes only `k=v,k2=v2` (upstream's form): the
// equality part narrows the listing there (`gatewaySelector`) and `matches` checks every
// requirement on the listed sandboxes.

export type Requirement =
  | { readonly key: string; readonly op: "=" | "!="; readonly value: string }
  | { readonly key: string; readonly op: "in" | "notin"; readonly values: readonly string[] }
  | { readonly key: string; readonly op: "exists" | "!exists" };

export interface Selector {
  readonly requirements: readonly Requirement[];
}

// Keys and values: anything but spaces and the selector's own punctuation.
const WORD = /^[^\s,()=!]+$/;
const VALUE = /^[^\s,()=!]*$/;

/** A selector that cannot be read; the message names the problem and where. */
export class SelectorError extends Error {
  override readonly name = "SelectorError";
}

/** Parses one or more `--selector` values (they AND). Undefined when none is given. */
export function parseSelector(parts: readonly string[]): Selector | undefined {
  if (parts.length === 0) return undefined;
  return { requirements: parts.flatMap((p) => parseOne(p)) };
}

function parseOne(text: string): Requirement[] {
  const fail = (why: string): never => {
    throw new SelectorError(`--selector "${text}": ${why}`);
  };
  if (text.trim() === "") fail("empty selector");
  const out: Requirement[] = [];
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const word = (what: string, pattern: RegExp): string => {
    ws();
    const start = pos;
    while (pos < text.length && !/[\s,()=!]/.test(text[pos]!)) pos++;
    const w = text.slice(start, pos);
    if (!pattern.test(w)) fail(`expected ${what} at position ${start + 1}${start < text.length ? `, found "${text[start]}"` : ""}`);
    return w;
  };
  for (;;) {
    ws();
    if (pos >= text.length || text[pos] === ",") fail(`empty requirement at position ${pos + 1} (a comma must join two requirements)`);
    let negated = false;
    if (text[pos] === "!" && text[pos + 1] !== "=") {
      negated = true;
      pos++;
    }
    const key = word("a label key", WORD);
    ws();
    const rest = text.slice(pos);
    if (negated) {
      out.push({ key, op: "!exists" });
    } else if (rest === "" || rest.startsWith(",")) {
      out.push({ key, op: "exists" });
    } else if (rest.startsWith("==") || rest.startsWith("!=") || rest.startsWith("=")) {
      const op = rest.startsWith("!=") ? "!=" : "=";
      pos += rest.startsWith("=") && !rest.startsWith("==") ? 1 : 2;
      out.push({ key, op, value: word(`a value after "${key}${op}"`, VALUE) });
    } else {
      const m = /^(in|notin)\s*\(/.exec(rest);
      if (!m) fail(`unexpected "${rest.split(/[\s,]/)[0] || rest[0]}" after "${key}"; expected =, ==, !=, in (…) or notin (…)`);
      pos += m![0].length;
      const values: string[] = [];
      for (;;) {
        values.push(word(`a value in "${key} ${m![1]} (…)"`, WORD));
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === ")") {
          pos++;
          break;
        }
        fail(`"${key} ${m![1]} (" is not closed by ")"`);
      }
      out.push({ key, op: m![1] as "in" | "notin", values });
    }
    ws();
    if (pos >= text.length) return out;
    if (text[pos] !== ",") fail(`unexpected "${text[pos]}" at position ${pos + 1}; requirements are joined by ","`);
    pos++;
  }
}

/** The selector in kubectl's canonical text, e.g. `env in (dev,staging),!legacy,team=a`. */
export function formatSelector(s: Selector): string {
  return s.requirements
    .map((r) => {
      switch (r.op) {
        case "=":
        case "!=":
          return `${r.key}${r.op}${r.value}`;
        case "in":
        case "notin":
          return `${r.key} ${r.op} (${r.values.join(",")})`;
        case "exists":
          return r.key;
        case "!exists":
          return `!${r.key}`;
      }
    })
    .join(",");
}

/** True when `labels` satisfy every requirement. */
export function matches(s: Selector, labels: Readonly<Record<string, string>>): boolean {
  return s.requirements.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = labels[r.key];
    switch (r.op) {
      case "=":
        return has && v === r.value;
      case "!=":
        return !has || v !== r.value;
      case "in":
        return has && r.values.includes(v!);
      case "notin":
        return !has || !r.values.includes(v!);
      case "exists":
        return has;
      case "!exists":
        return !has;
    }
  });
}

/**
 * What the gateway can evaluate (`k=v,k2=v2`: the equality requirements, one per key); "" when
 * there is none. The listing it narrows must still be checked with `matches`.
 */
export function gatewaySelector(s: Selector): string {
  const seen = new Map<string, string>();
  for (const r of s.requirements) if (r.op === "=" && !seen.has(r.key)) seen.set(r.key, r.value);
  return [...seen].map(([k, v]) => `${k}=${v}`).join(",");
}

/** True when the gateway's `k=v,k2=v2` says exactly what the selector says (no set forms, no key twice). */
export function isGatewayExact(s: Selector): boolean {
  const keys = new Set<string>();
  for (const r of s.requirements) {
    if (r.op !== "=" || keys.has(r.key)) return false;
    keys.add(r.key);
  }
  return true;
}
