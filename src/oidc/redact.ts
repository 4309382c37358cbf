// Keeps secrets out of the errors a token provider throws. oauth4webapi attaches whole responses
// and parsed bodies (access and refresh tokens included) to its errors, and a custom fetch may
// throw anything, so no foreign error is ever chained as it is: a cause is rebuilt as plain
// errors carrying only a name and a message, with every known secret cut out of the text.

/** Cuts the secrets it knows out of text; learns new ones as tokens arrive. */
export interface Redactor {
  /**
   * Adds a secret (ignored when shorter than 4 characters, which would redact ordinary words).
   * `pinned` ones (the client secret) are kept for good; the others (tokens, which rotate) are
   * dropped oldest first beyond a bound.
   */
  add(secret: string | undefined, pinned?: boolean): void;
  /** `text` with every known secret, and its URL- and form-encoded forms, replaced by "[redacted]". */
  text(text: string): string;
  /** A copy of `err`'s chain (at most 4 deep) as plain errors with redacted messages. */
  cause(err: unknown): Error | undefined;
}

/** How many forms of rotating tokens a redactor keeps (the current ones and a few before them). */
const MAX_ROTATING = 24;

export function createRedactor(): Redactor {
  const pinned = new Set<string>();
  const rotating = new Set<string>();
  const redactor: Redactor = {
    add(secret, pin = false) {
      if (secret === undefined || secret.length < 4) return;
      const forms = new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)]);
      for (const form of forms) {
        if (pin) pinned.add(form);
        else if (!pinned.has(form)) {
          rotating.delete(form);
          rotating.add(form);
          if (rotating.size > MAX_ROTATING) rotating.delete(rotating.values().next().value!);
        }
      }
    },
    text(text) {
      let out = text;
      // Longest first, so that a secret inside another (an encoded form) cannot leave a piece behind.
      for (const s of [...pinned, ...rotating].sort((a, b) => b.length - a.length)) out = out.split(s).join("[redacted]");
      return out;
    },
    cause(err) {
      return copy(err, 0);
    },
  };
  function copy(err: unknown, depth: number): Error | undefined {
    if (err === undefined || err === null || depth >= 4) return undefined;
    const source = err as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
    const message = typeof source.message === "string" ? source.message : typeof err === "string" ? err : String(Object.prototype.toString.call(err));
    const inner = err instanceof Error || typeof source.cause === "object" ? copy(source.cause, depth + 1) : undefined;
    const out = new Error(redactor.text(message), inner === undefined ? undefined : { cause: inner });
    if (typeof source.name === "string") out.name = redactor.text(source.name);
    // No `code` property: a client's retry loop reads ECONNREFUSED and the like in a cause chain
    // as "try again", and a TokenProviderError has been retried already. The code stays in the text.
    if (typeof source.code === "string" && !out.message.includes(source.code)) out.message = `${redactor.text(source.code)}: ${out.message}`;
    // The stack trace names files and lines of this copy, not the original's text.
    out.stack = `${out.name}: ${out.message}`;
    return out;
  }
  return redactor;
}
