// The notifications gateway replicas send each other over the store's channel. Each names what
// changed and who sent it, never the data itself: a receiver re-reads the database, which stays
// the only record. Encoded as short JSON arrays (PostgreSQL caps a payload at 8000 bytes; ids
// are far shorter).

export type ClusterMessage =
  /** Desired state of one sandbox changed: its owner delivers the new snapshot. */
  | { readonly kind: "sandbox"; readonly from: string; readonly sandboxId: string }
  /** Global desired state changed (global policy or settings, a provider): every owner delivers. */
  | { readonly kind: "all"; readonly from: string }
  /** An operation was stored or transitioned: replicas with waiters on it re-read it. */
  | { readonly kind: "operation"; readonly from: string; readonly operationId: string; readonly sandboxId: string }
  /** A replica took over a sandbox's session: any other session of that sandbox must end. */
  | { readonly kind: "claimed"; readonly from: string; readonly sandboxId: string; readonly sessionId: string };

export function encodeMessage(m: ClusterMessage): string {
  switch (m.kind) {
    case "sandbox":
      return JSON.stringify(["s", m.from, m.sandboxId]);
    case "all":
      return JSON.stringify(["g", m.from]);
    case "operation":
      return JSON.stringify(["o", m.from, m.operationId, m.sandboxId]);
    case "claimed":
      return JSON.stringify(["c", m.from, m.sandboxId, m.sessionId]);
  }
}

/** `undefined` for anything malformed (another version's message, a stray NOTIFY). */
export function decodeMessage(text: string): ClusterMessage | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) return undefined;
  const [tag, from, a, b] = v as string[];
  if (from === undefined) return undefined;
  if (tag === "s" && v.length === 3) return { kind: "sandbox", from, sandboxId: a! };
  if (tag === "g" && v.length === 2) return { kind: "all", from };
  if (tag === "o" && v.length === 4) return { kind: "operation", from, operationId: a!, sandboxId: b! };
  if (tag === "c" && v.length === 4) return { kind: "claimed", from, sandboxId: a!, sessionId: b! };
  return undefined;
}
