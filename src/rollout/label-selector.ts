// Label selectors as kubectl reads them, shared by the rollout's `labelSelector`, the command line
// (`--selector`) and the dashboard, so that all three accept and refuse the same text.
// Requirements are joined by commas, all of which must hold (a comma ANDs, so
// `env=dev,env=staging` matches nothing). A requirement is `k=v` (or `k==v`), `k!=v`,
// `k in (v1,v2)`, `k notin (v1,v2)`, `k` (the label exists) or `!k` (it does not). As in kubectl,
// `k!=v` and `k notin (…)` also match a sandbox without the label. The gateway's ListSandboxes
// takes only `k=v,k2=v2` (upstream's form): the equality part narrows a listing there
// (`gatewayLabelSelector`) and `matchesLabelSelector` checks every requirement on what it lists.

import { InvalidArgumentError } from "../errors.js";

/** One requirement of a label selector. */
export type LabelRequirement =
  | {
      /** The label's key. */
      readonly key: string;
      /** `=` (the label has this value) or `!=` (it has another value, or none). */
      readonly op: "=" | "!=";
      /** The value compared with. */
      readonly value: string;
    }
  | {
      /** The label's key. */
      readonly key: string;
      /** `in` (the value is one of `values`) or `notin` (it is none of them, or absent). */
      readonly op: "in" | "notin";
      /** The values listed between the parentheses. */
      readonly values: readonly string[];
    }
  | {
      /** The label's key. */
      readonly key: string;
      /** `exists` (the label is set, any value) or `!exists` (it is not set). */
      readonly op: "exists" | "!exists";
    };

/** A parsed label selector: every requirement must hold. */
export interface LabelSelector {
  /** The requirements, in the order written. */
  readonly requirements: readonly LabelRequirement[];
}

// Keys and values: anything but spaces and the selector's own punctuation.
const WORD = /^[^\s,()=!]+$/;
const VALUE = /^[^\s,()=!]*$/;
const STOP = /[\s,()=!]/;

/**
 * Parses a kubectl label selector such as `env in (dev,staging),!legacy`. Throws
 * InvalidArgumentError naming `field`, the text and what is wrong where, e.g.
 * `labelSelector "env in (dev": "env in (" is not closed by ")"`.
 *
 * @example
 * ```ts
 * import { matchesLabelSelector, parseLabelSelector } from "openshell-config/rollout";
 *
 * const s = parseLabelSelector("env in (dev,staging),!legacy");
 * matchesLabelSelector(s, { env: "dev" }); // true
 * ```
 */
export function parseLabelSelector(text: string, field = "labelSelector"): LabelSelector {
  const fail = (why: string): never => {
    throw new InvalidArgumentError(`${field} "${text}": ${why}`, { field });
  };
  if (text.trim() === "") fail("empty selector");
  const out: LabelRequirement[] = [];
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const word = (what: string, pattern: RegExp): string => {
    ws();
    const start = pos;
    while (pos < text.length && !STOP.test(text[pos]!)) pos++;
    const w = text.slice(start, pos);
    if (!pattern.test(w)) fail(`expected ${what} at position ${start + 1}${start < text.length ? `, found "${text[start]}"` : ""}`);
    return w;
  };
  for (;;) {
    ws();
    if (pos >= text.length || text[pos] === ",") fail(`empty requirement at position ${pos + 1} (a comma must join two requirements)`);
    const negated = text[pos] === "!" && text[pos + 1] !== "=";
    if (negated) pos++;
    const key = word("a label key", WORD);
    ws();
    const rest = text.slice(pos);
    if (negated) {
      out.push({ key, op: "!exists" });
    } else if (rest === "" || rest.startsWith(",")) {
      out.push({ key, op: "exists" });
    } else if (/^(==|!=|=)/.test(rest)) {
      const op = rest.startsWith("!=") ? "!=" : "=";
      pos += rest.startsWith("=") && !rest.startsWith("==") ? 1 : 2;
      out.push({ key, op, value: word(`a value after "${key}${op}"`, VALUE) });
    } else {
      const m = /^(in|notin)\s*\(/.exec(rest);
      if (!m) return fail(`unexpected "${rest.split(/[\s,]/)[0] || rest[0]}" after "${key}"; expected =, ==, !=, in (…) or notin (…)`);
      pos += m[0].length;
      const op = m[1] as "in" | "notin";
      const values: string[] = [];
      for (;;) {
        values.push(word(`a value in "${key} ${op} (…)"`, WORD));
        ws();
        if (text[pos] === ")") break;
        if (text[pos] !== ",") fail(`"${key} ${op} (" is not closed by ")"`);
        pos++;
      }
      pos++;
      out.push({ key, op, values });
    }
    ws();
    if (pos >= text.length) return { requirements: out };
    if (text[pos] !== ",") fail(`unexpected "${text[pos]}" at position ${pos + 1}; requirements are joined by ","`);
    pos++;
  }
}

/** The selector in kubectl's canonical text, e.g. `env in (dev,staging),!legacy,team=a`. */
export function formatLabelSelector(s: LabelSelector): string {
  return s.requirements
    .map((r) =>
      r.op === "=" || r.op === "!=" ? `${r.key}${r.op}${r.value}` : r.op === "in" || r.op === "notin" ? `${r.key} ${r.op} (${r.values.join(",")})` : r.op === "exists" ? r.key : `!${r.key}`,
    )
    .join(",");
}

/** True when `labels` satisfy every requirement of `s`. */
export function matchesLabelSelector(s: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return s.requirements.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = labels[r.key]!;
    switch (r.op) {
      case "=":
        return has && v === r.value;
      case "!=":
        return !has || v !== r.value;
      case "in":
        return has && r.values.includes(v);
      case "notin":
        return !has || !r.values.includes(v);
      case "exists":
        return has;
      case "!exists":
        return !has;
    }
  });
}

/**
 * What the gateway's ListSandboxes can evaluate (`k=v,k2=v2`: the equality requirements, one per
 * key); "" when there is none. What it lists must still be checked with `matchesLabelSelector`
 * unless `isGatewayExact`.
 */
export function gatewayLabelSelector(s: LabelSelector): string {
  const seen = new Map<string, string>();
  for (const r of s.requirements) if (r.op === "=" && !seen.has(r.key)) seen.set(r.key, r.value);
  return [...seen].map(([k, v]) => `${k}=${v}`).join(",");
}

/** True when the gateway's `k=v,k2=v2` says exactly what the selector says (no set forms, no key twice). */
export function isGatewayExact(s: LabelSelector): boolean {
  const keys = new Set<string>();
  return s.requirements.every((r) => r.op === "=" && !keys.has(r.key) && keys.add(r.key));
}
