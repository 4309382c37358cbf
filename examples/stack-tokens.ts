// The local stack's tokens, kept with its state: the admin token and one supervisor token per
// sandbox, in `<dir>/auth.json` (mode 0600), the gateway's auth file. A stack started again on the
// same folder reads them back, so the admin token exported for the command line and pasted into
// the dashboard keeps working across restarts, as the database does; only a sandbox without a
// token gets a new one. A file that is not the stack's own shape is an error naming it, never
// silently replaced.

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "./tls-stack.js";

export interface StackTokens {
  readonly authFile: string;
  readonly adminToken: string;
  /** A second admin, `demo-reviewer`: the other operator of the README's shared rollout. */
  readonly reviewerToken: string;
  /** Sandbox name -> supervisor token. */
  readonly supervisors: ReadonlyMap<string, string>;
}

const ADMIN = "demo-admin";
const REVIEWER = "demo-reviewer";

interface Entry {
  readonly token?: unknown;
  readonly principal?: unknown;
  readonly role?: unknown;
  readonly sandbox?: unknown;
}

/** Reads `<dir>/auth.json` when there is one, adds what is missing, and writes it when it changed. */
export function loadStackTokens(dir: string, sandboxes: readonly string[]): StackTokens {
  const authFile = join(dir, "auth.json");
  const entries = existsSync(authFile) ? readEntries(authFile) : [];
  const token = (e: Entry | undefined) => (typeof e?.token === "string" && e.token.length >= 16 ? e.token : undefined);
  const kept = token(entries.find((e) => e.principal === ADMIN && e.role === "admin"));
  const adminToken = kept ?? `admin-${randomBytes(16).toString("hex")}`;
  const keptReviewer = token(entries.find((e) => e.principal === REVIEWER && e.role === "admin"));
  const reviewerToken = keptReviewer ?? `reviewer-${randomBytes(16).toString("hex")}`;
  let changed = kept === undefined || keptReviewer === undefined;
  const supervisors = new Map<string, string>();
  for (const sandbox of sandboxes) {
    const found = token(entries.find((e) => e.role === "supervisor" && e.sandbox === sandbox));
    if (found === undefined) changed = true;
    supervisors.set(sandbox, found ?? `sup-${sandbox}-${randomBytes(16).toString("hex")}`);
  }
  if (changed) {
    const ours = (e: Entry) => (e.principal === ADMIN || e.principal === REVIEWER) && e.role === "admin";
    const others = entries.filter((e) => !ours(e) && !(e.role === "supervisor" && typeof e.sandbox === "string" && supervisors.has(e.sandbox)));
    const tokens = [
      { token: adminToken, principal: ADMIN, role: "admin", workspaces: "*" },
      { token: reviewerToken, principal: REVIEWER, role: "admin", workspaces: "*" },
      ...others,
      ...[...supervisors].map(([sandbox, t]) => ({ token: t, principal: `supervisor:${sandbox}`, role: "supervisor", workspace: "default", sandbox })),
    ];
    writeFileAtomic(authFile, `${JSON.stringify({ tokens }, null, 2)}\n`, 0o600);
  }
  return { authFile, adminToken, reviewerToken, supervisors };
}

function readEntries(authFile: string): Entry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(authFile, "utf8"));
  } catch {
    // Not the parser's message: it quotes the text, which holds tokens.
    throw new Error(`${authFile} is not the local stack's auth file (not valid JSON); move it away and start again`);
  }
  const tokens = (parsed as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(tokens)) throw new Error(`${authFile} is not the local stack's auth file (no "tokens" list); move it away and start again`);
  return tokens as Entry[];
}

/** The admin token kept in `<dir>/auth.json`, without creating or changing anything; undefined when there is none. */
export function readStackAdminToken(dir: string): string | undefined {
  const authFile = join(dir, "auth.json");
  if (!existsSync(authFile)) return undefined;
  try {
    const t = readEntries(authFile).find((e) => e.principal === ADMIN && e.role === "admin")?.token;
    return typeof t === "string" ? t : undefined;
  } catch {
    return undefined;
  }
}
