// Duplicate keys in a policy file, found in one linear pass. The yaml library's own check
// (`uniqueKeys`) compares each key of a mapping with every key before it: on a 5.7 MB policy of
// 60,000 rules it made the parse take 38.6 s instead of 8.0 s (issue 30), and a 14.5 MB file over
// five minutes. Here each mapping gets one Map of the keys seen. In JSON, JSON.parse silently keeps
// the last of two equal keys; the scan of the text below finds them without a YAML parse.

import { isAlias, isCollection, isMap, isScalar, isSeq, type Document, type Node as YamlNode } from "yaml";

/** The earliest second occurrence of a key in its mapping. */
export interface DuplicateKey {
  readonly key: string;
  /** The path of the mapping that holds it (empty at the top level). */
  readonly path: readonly (string | number)[];
  /** Offsets in the text of this occurrence and of the first. */
  readonly offset: number;
  readonly firstOffset: number;
}

interface Frame {
  readonly node: unknown;
  readonly parent: Frame | undefined;
  readonly step: string | number | undefined;
}

const pathOf = (frame: Frame): (string | number)[] => {
  const path: (string | number)[] = [];
  for (let f: Frame | undefined = frame; f?.step !== undefined; f = f.parent) path.push(f.step);
  return path.reverse();
};

// The key as `toJS` names the property (addPairToJSMap's stringifyKey): null is "", a scalar its
// String(), so `1` and `"1"` are one property and count as the same key.
function keyText(doc: Document, key: unknown): string {
  const node = isAlias(key) ? key.resolve(doc) : key;
  if (node === null || node === undefined) return "";
  if (isScalar(node)) return node.value === null ? "" : String(node.value);
  return String(node);
}

/** The duplicate key of a parsed YAML (or JSON) document that comes first in the text, if any. */
export function yamlDuplicateKey(doc: Document): DuplicateKey | undefined {
  let found: { frame: Frame; key: string; offset: number; firstOffset: number } | undefined;
  // An explicit stack: nesting as deep as the parser allows must not overflow the call stack.
  const stack: Frame[] = [{ node: doc.contents, parent: undefined, step: undefined }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const node = frame.node;
    if (isMap(node)) {
      const seen = new Map<string, number>();
      for (const pair of node.items) {
        const key = keyText(doc, pair.key);
        const offset = (pair.key as YamlNode | null)?.range?.[0] ?? (pair.value as YamlNode | null)?.range?.[0] ?? 0;
        const first = seen.get(key);
        if (first === undefined) seen.set(key, offset);
        else if (found === undefined || offset < found.offset) found = { frame, key, offset, firstOffset: first };
        if (isCollection(pair.value)) stack.push({ node: pair.value, parent: frame, step: key });
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        if (isCollection(item)) stack.push({ node: item, parent: frame, step: i });
      });
    }
  }
  return found && { key: found.key, path: pathOf(found.frame), offset: found.offset, firstOffset: found.firstOffset };
}

interface JsonFrame {
  /** The keys of an object and where each first appears; undefined in an array. */
  readonly keys: Map<string, number> | undefined;
  expectKey: boolean;
  /** The current key of an object, or the index of the current item of an array. */
  step: string | number;
}

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;

/** The first duplicate key in JSON text that JSON.parse has already accepted, if any. */
export function jsonDuplicateKey(text: string): DuplicateKey | undefined {
  const stack: JsonFrame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      // A quote preceded by an odd number of backslashes is escaped.
      for (;;) {
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      const top = stack[stack.length - 1];
      if (top?.keys !== undefined && top.expectKey) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes("\\") ? (JSON.parse(`"${raw}"`) as string) : raw;
        const first = top.keys.get(key);
        if (first !== undefined) {
          return { key, path: stack.slice(0, -1).map((f) => f.step), offset: i, firstOffset: first };
        }
        top.keys.set(key, i);
        top.step = key;
        top.expectKey = false;
      }
      i = end;
    } else if (c === LBRACE) {
      stack.push({ keys: new Map(), expectKey: true, step: "" });
    } else if (c === LBRACKET) {
      stack.push({ keys: undefined, expectKey: false, step: 0 });
    } else if (c === RBRACE || c === RBRACKET) {
      stack.pop();
    } else if (c === COMMA) {
      const top = stack[stack.length - 1]!;
      if (top.keys !== undefined) top.expectKey = true;
      else top.step = (top.step as number) + 1;
    }
  }
  return undefined;
}
