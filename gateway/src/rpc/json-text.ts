// The text of a JSON request body (Connect, gRPC and gRPC-Web with +json), as connect's JSON
// serialization reads it through `jsonOptions.textDecoder`. A default TextDecoder turns bytes that
// are not UTF-8 into U+FFFD, which the gateway would then store as if the caller had sent it.
// Here each such byte becomes an unpaired surrogate (U+DC80 to U+DCFF, as Python's
// "surrogateescape" does), which no UTF-8 text decodes to: inside a JSON string it reaches the
// decoded field, where the request check (nul-text.ts) refuses it naming that field; anywhere else
// JSON.parse refuses the body. Nesting is bounded here too, before JSON.parse and fromJson recurse.

import { isUtf8 } from "node:buffer";
import { Code, ConnectError } from "@connectrpc/connect";
import { MAX_NESTING } from "./wire-scan.js";

/** A `textDecoder` for connect's JSON options. */
export const strictJsonText = {
  decode(input?: Uint8Array): string {
    const bytes = input ?? new Uint8Array(0);
    const text = isUtf8(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8") : escapeInvalidUtf8(bytes);
    if (jsonDepthOver(text, MAX_NESTING)) throw new ConnectError(`the request's JSON nests deeper than ${MAX_NESTING} levels of objects and arrays`, Code.InvalidArgument);
    return text;
  },
};

/** connect's `jsonOptions` with this decoder (unknown fields ignored, connect's default). */
export const strictJsonOptions = Object.assign({ ignoreUnknownFields: true }, { textDecoder: strictJsonText });

/** Whether `text` (JSON) nests objects and arrays deeper than `max`; brackets inside strings do not count. */
export function jsonDepthOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** `bytes` as UTF-8, with each byte that is not part of a well-formed sequence as U+DC00 plus the byte. */
export function escapeInvalidUtf8(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let out = "";
  let start = 0;
  let i = 0;
  while (i < buf.length) {
    const n = sequenceLength(buf, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += buf.toString("utf8", start, i) + String.fromCharCode(0xdc00 + buf[i]!);
    i++;
    start = i;
  }
  return out + buf.toString("utf8", start, buf.length);
}

/** The length of the well-formed UTF-8 sequence at `i` (RFC 3629, table 3-7 of Unicode), or 0. */
function sequenceLength(b: Buffer, i: number): number {
  const b0 = b[i]!;
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}
