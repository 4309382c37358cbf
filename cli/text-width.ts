// How many terminal columns text takes, and text cut to a number of columns. A string's
// length counts UTF-16 code units, which is right only for ASCII: a CJK character or an emoji
// takes two columns and one or two code units, a combining accent none and one code unit. Names
// and states from the gateway are ASCII, but label values, setting values and error messages need
// not be, and a table padded by length came out of line (and past 80 columns) as soon as one was.
//
// A user-perceived character (a grapheme cluster: a letter with its accents, a flag, an emoji
// joined with ZWJ) takes the width of its first code point by Unicode's East Asian Width
// (get-east-asian-width; ambiguous ones as narrow, as terminals outside East Asian locales show
// them), two when it is shown as an emoji, none when it is only marks or invisible format
// characters.

import { eastAsianWidth } from "get-east-asian-width";

const ASCII = /^[\x20-\x7e]*$/;
// A soft hyphen is default-ignorable, but terminals give it a column.
const INVISIBLE = /^(?:(?!\u00AD)[\p{Mark}\p{Default_Ignorable_Code_Point}\p{Control}])+$/u;
// Text presentation asked for (VS15): one column whatever the character's default.
const TEXT_STYLE = /\uFE0E/u;
// Emoji presentation: by default, asked for (VS16), or a keycap (#️⃣).
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F|\u20E3/u;

let segmenter: Intl.Segmenter | undefined;
const clusters = (text: string): Iterable<{ segment: string }> => (segmenter ??= new Intl.Segmenter()).segment(text);

/** The columns one grapheme cluster takes: 0, 1 or 2. */
function clusterWidth(cluster: string): number {
  if (ASCII.test(cluster)) return cluster.length;
  if (INVISIBLE.test(cluster)) return 0;
  if (TEXT_STYLE.test(cluster)) return 1;
  if (EMOJI.test(cluster)) return 2;
  return eastAsianWidth(cluster.codePointAt(0)!);
}

// Text whose every code point is a character of its own (no marks, joiners, selectors, flags or
// emoji): measured code point by code point, without segmenting (about ten times faster).
const SIMPLE = /^[^\p{Mark}\p{Default_Ignorable_Code_Point}\p{Control}\p{Extended_Pictographic}\p{Regional_Indicator}\p{Emoji_Presentation}\u20E3]*$/u;

/** The columns `text` takes on a terminal (no control characters or escape sequences in it). */
export function textWidth(text: string): number {
  if (ASCII.test(text)) return text.length;
  let n = 0;
  if (SIMPLE.test(text)) {
    for (const ch of text) n += eastAsianWidth(ch.codePointAt(0)!);
    return n;
  }
  for (const { segment } of clusters(text)) n += clusterWidth(segment);
  return n;
}

/** `text` cut to at most `width` columns, ending in "…" when it was cut; never a cluster split. */
export function cutToWidth(text: string, width: number): string {
  if (textWidth(text) <= width) return text;
  if (width <= 0) return "";
  let out = "";
  let n = 0;
  for (const { segment } of clusters(text)) {
    const w = clusterWidth(segment);
    if (n + w > width - 1) break;
    out += segment;
    n += w;
  }
  return `${out}…`;
}

/** The grapheme clusters of `text` with the columns each takes. */
export function* columnsOf(text: string): Generator<{ readonly cluster: string; readonly width: number }> {
  for (const { segment } of clusters(text)) yield { cluster: segment, width: clusterWidth(segment) };
}
