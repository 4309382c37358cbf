// Supervisor credentials and the sandbox instance they serve, below the RPCs: the auth file's
// `sandboxId` and credential keys, and supervisor-identity.ts against a real store (first use
// binds, a deleted instance is refused, an admin's pin re-binds, a pin to an unknown id or to
// another sandbox is not found).

import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuthFileError, parseAuthFile, tokenDigest } from "../../src/auth/auth-file.js";
import { credentialOf } from "../../src/auth/principal-credential.js";
import type { Principal } from "../../src/auth/principal.js";
import { createLogger } from "../../src/observability/logger.js";
import { supervisorSandbox, supervisorScope } from "../../src/rpc/supervisor-identity.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { SandboxRecord, Store } from "../../src/store/store.js";
import { sandbox } from "../store/store-fixtures.js";

const TOKEN = "supervisor-token-for-b-0123456789";
const OTHER = "another-supervisor-token-for-b-0123456789";

function errorOf(json: unknown): string {
  try {
    parseAuthFile(json, "auth.json");
  } catch (err) {
    if (err instanceof AuthFileError) return err.message;
    throw err;
  }
  throw new Error("expected the auth file to be refused");
}

const supervisorEntry = (over: Record<string, unknown> = {}) => ({ token: TOKEN, principal: "supervisor:b", role: "supervisor", workspace: "ws-a", sandbox: "b", ...over });
const principalOf = (over: Record<string, unknown> = {}): Principal => parseAuthFile({ tokens: [supervisorEntry(over)] }).entries[0]!.principal;

describe("the auth file's supervisor entries", () => {
  it("a supervisor entry may pin the sandbox instance with sandboxId", () => {
    const id = randomUUID();
    expect(principalOf({ sandboxId: id }).sandbox).toEqual({ workspace: "ws-a", name: "b", id });
    expect(principalOf().sandbox).toEqual({ workspace: "ws-a", name: "b" });
  });

  it("a sandboxId that is not an id, or on an entry that is not a supervisor's, is refused naming the field", () => {
    for (const bad of ["", "has space", "x".repeat(129), 42, "tab\t"]) {
      expect(errorOf({ tokens: [supervisorEntry({ sandboxId: bad })] })).toMatch(/^auth\.json: tokens\[0\]\.sandboxId: must be the id of the sandbox instance/);
    }
    expect(errorOf({ tokens: [{ token: TOKEN, principal: "bob", role: "user", workspaces: ["ws-a"], sandboxId: randomUUID() }] })).toBe(
      "auth.json: tokens[0].sandboxId: only supervisor entries name a sandbox",
    );
  });

  it("a credential key is the token's digest, the same for a token and its tokenSha256, and never the token", () => {
    const key = credentialOf(principalOf());
    expect(key).toBe(`token-sha256:${tokenDigest(TOKEN).toString("hex")}`);
    expect(credentialOf(principalOf({ token: undefined, tokenSha256: tokenDigest(TOKEN).toString("hex").toUpperCase() }))).toBe(key);
    expect(key).not.toContain(TOKEN);
    const certs = parseAuthFile({
      clientCertificates: [
        { subject: "CN=sandbox-b, O=Example", principal: "supervisor:b", role: "supervisor", workspace: "ws-a", sandbox: "b" },
        { fingerprint256: "ab".repeat(32), principal: "supervisor:b2", role: "supervisor", workspace: "ws-a", sandbox: "b" },
      ],
    }).clientCertificates!;
    expect(credentialOf([...certs.bySubject.values()][0]!)).toBe("certificate-subject:CN=sandbox-b\nO=Example");
    expect(credentialOf([...certs.byFingerprint.values()][0]!)).toBe(`certificate-sha256:${"AB:".repeat(31)}AB`);
  });
});

describe("supervisor-identity.ts against a store", () => {
  let store: Store;
  let logged = "";
  const logger = createLogger({ level: "info", destination: new Writable({ write: (c, _e, cb) => ((logged += String(c)), cb()) }) });
  const deps = () => ({ store, logger });
  beforeEach(() => {
    store = openSqliteStore(":memory:");
    logged = "";
  });
  afterEach(() => store.close());

  const resolve = (p: Principal, named = "b") => supervisorSandbox(deps(), supervisorScope(p, "ConnectSupervisor"), named);
  const refusal = async (p: Principal, named = "b") => ConnectError.from(await resolve(p, named).then(() => new Error("served"), (e: unknown) => e));
  const add = async (over: Partial<SandboxRecord> = {}) => {
    const s = sandbox({ name: "b", ...over });
    await store.transaction((tx) => tx.insertSandbox(s));
    return s;
  };
  const remove = (s: SandboxRecord) =>
    store.transaction(async (tx) => {
      await tx.deleteSandbox(s.id);
      await tx.recordSandboxEvent({ sandboxId: s.id, event: "deleted", workspace: s.workspace, name: s.name, principal: "mallory", at: new Date() });
    });

  it("a credential binds to the instance it first serves, by name or id, and is refused once that instance is deleted", async () => {
    const p = principalOf();
    const first = await add();
    expect((await resolve(p))?.id).toBe(first.id);
    expect((await resolve(p, first.id))?.id).toBe(first.id);
    expect(await store.supervisorBinding(credentialOf(p)!)).toMatchObject({ sandboxId: first.id, principal: "supervisor:b", workspace: "ws-a", sandboxName: "b" });
    await remove(first);
    await add();
    const err = await refusal(p);
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain(`the sandbox "b" this supervisor served (id ${first.id}) was deleted`);
    expect(logged).not.toContain(TOKEN);
  });

  it("another credential for the same sandbox binds on its own, to the instance current at its first use", async () => {
    const first = await add();
    await resolve(principalOf());
    await remove(first);
    const second = await add();
    const other = principalOf({ token: OTHER });
    expect((await resolve(other))?.id).toBe(second.id);
    expect((await refusal(principalOf())).code).toBe(Code.PermissionDenied);
  });

  it("an admin's pin re-binds a credential to a new instance, and the pin is stored", async () => {
    const first = await add();
    await resolve(principalOf());
    await remove(first);
    const second = await add();
    const pinned = principalOf({ sandboxId: second.id });
    expect((await resolve(pinned))?.id).toBe(second.id);
    expect((await store.supervisorBinding(credentialOf(pinned)!))?.sandboxId).toBe(second.id);
    // Without the pin again, the credential serves what it was last bound to.
    expect((await resolve(principalOf()))?.id).toBe(second.id);
  });

  it("a pin to a deleted instance is refused, one to an id never seen or to another sandbox is not found", async () => {
    const first = await add();
    await remove(first);
    expect((await refusal(principalOf({ sandboxId: first.id }))).code).toBe(Code.PermissionDenied);
    await add();
    expect(await resolve(principalOf({ sandboxId: randomUUID() }))).toBeUndefined();
    const elsewhere = await add({ name: "c" });
    expect(await resolve(principalOf({ sandboxId: elsewhere.id }))).toBeUndefined();
    expect(logged).toContain("a supervisor credential's sandboxId names another sandbox");
  });

  it("a hello that names another sandbox is not found, and binds nothing", async () => {
    await add();
    await add({ name: "c" });
    expect(await resolve(principalOf(), "c")).toBeUndefined();
    expect(await store.supervisorBinding(credentialOf(principalOf())!)).toBeUndefined();
  });
});
