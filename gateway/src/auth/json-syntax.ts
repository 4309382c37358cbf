// Where a JSON text first breaks the grammar, as a line and column, for error messages that must
// not quote the text: JSON.parse's own message shows a piece of it, and in an auth file that
// piece may be a token. A plain recursive-descent reader of RFC 8259; it only runs on text that
// JSON.parse already refused.

export interface JsonSyntaxError {
  /** 1-based. */
  readonly line: number;
  /** 1-based, in UTF-16 code units as editors count them. */
  readonly column: number;
  /** `unexpected end of the file` or `unexpected character` (which one, never). */
  readonly problem: string;
}

/** The first syntax error of `text`, or undefined if it is valid JSON (or nests too deep to tell). */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0;
  const fail = (): never => {
    throw new Stop(i);
  };
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail();
      i++;
    }
  };
  const string = () => {
    if (text[i] !== '"') fail();
    i++;
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c) || c < 0x20) fail();
      if (c === 0x22) return void i++;
      if (c === 0x5c) {
        i++;
        if (text[i] === "u") {
          i++;
          for (let k = 0; k < 4; k++, i++) if (!/[0-9a-fA-F]/.test(text[i] ?? "")) fail();
          continue;
        }
        if (!'"\\/bfnrt'.includes(text[i] ?? "x")) fail();
      }
      i++;
    }
  };
  const NUMBER = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") return void i++;
        else fail();
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") return void i++;
        else fail();
      }
    }
    if (c === '"') return string();
    if (c === "t") return literal("true");
    if (c === "f") return literal("false");
    if (c === "n") return literal("null");
    NUMBER.lastIndex = i;
    if (c !== undefined && NUMBER.exec(text)) {
      i = NUMBER.lastIndex;
      return;
    }
    fail();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) return undefined; // nested beyond the stack: no position to give
    return position(text, err.offset);
  }
}

class Stop {
  constructor(readonly offset: number) {}
}

function position(text: string, offset: number): JsonSyntaxError {
  let line = 1;
  let lineStart = 0;
  for (let k = 0; k < offset && k < text.length; k++) {
    if (text[k] === "\n") {
      line++;
      lineStart = k + 1;
    }
  }
  return { line, column: offset - lineStart + 1, problem: offset >= text.length ? "unexpected end of the file" : "unexpected character" };
}
