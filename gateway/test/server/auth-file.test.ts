// The auth file: validation errors that point at the entry and field, and no raw token kept.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { AuthFileError, loadAuthFile, parseAuthFile, tokenDigest } from "../../src/auth/auth-file.js";

const admin = { token: "admin-token-123456", principal: "alice", role: "admin", workspaces: "*" };

function errorOf(json: unknown): string {
  try {
    parseAuthFile(json, "auth.json");
  } catch (err) {
    expect(err).toBeInstanceOf(AuthFileError);
    return (err as Error).message;
  }
  throw new Error("accepted");
}

describe("auth file", () => {
  it("loads users, admins and supervisors from a JSON file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "auth-file-"));
    try {
      const path = join(dir, "auth.json");
      await writeFile(
        path,
        JSON.stringify({
          tokens: [
            admin,
            { tokenSha256: "ab".repeat(32), principal: "bob", role: "user", workspaces: ["team-a", "team-b"] },
            { token: "sup-token-7777777", principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
          ],
        }),
      );
      const auth = await loadAuthFile(path);
      expect(auth.entries.map((e) => e.principal)).toEqual([
        { name: "alice", role: "admin", workspaces: "*" },
        { name: "bob", role: "user", workspaces: ["team-a", "team-b"] },
        { name: "supervisor:dev", role: "supervisor", workspaces: ["default"], sandbox: { workspace: "default", name: "dev" } },
      ]);
      expect(auth.entries[0]!.digest.equals(tokenDigest(admin.token))).toBe(true);
      expect(auth.entries[1]!.digest.toString("hex")).toBe("ab".repeat(32));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps only digests in memory, never the raw token", () => {
    const auth = parseAuthFile({ tokens: [admin] });
    const dump = inspect(auth, { depth: 10 }) + JSON.stringify(auth);
    expect(dump).not.toContain(admin.token);
  });

  it("names the entry index and field of every validation error", () => {
    expect(errorOf({})).toBe('auth.json: "tokens" must be an array');
    expect(errorOf({ tokens: [admin, "x"] })).toBe("auth.json: tokens[1]: expected an object");
    expect(errorOf({ tokens: [{ ...admin, token: undefined }] })).toMatch(/^auth\.json: tokens\[0\]\.token: exactly one of "token" and "tokenSha256"/);
    expect(errorOf({ tokens: [{ ...admin, tokenSha256: "ab".repeat(32) }] })).toMatch(/tokens\[0\]\.token: exactly one of/);
    expect(errorOf({ tokens: [admin, { ...admin, token: "" }] })).toMatch(/^auth\.json: tokens\[1\]\.token: must be a non-empty string/);
    expect(errorOf({ tokens: [{ ...admin, token: undefined, tokenSha256: "xyz" }] })).toMatch(/tokens\[0\]\.tokenSha256: must be 64 hexadecimal/);
    expect(errorOf({ tokens: [{ ...admin, principal: "" }] })).toMatch(/tokens\[0\]\.principal: must be a non-empty string/);
    expect(errorOf({ tokens: [admin, admin] })).toMatch(/tokens\[1\]\.token: same token as tokens\[0\]/);
    expect(errorOf({ tokens: [admin, { ...admin, token: "second-token-0000" }, { ...admin, token: "other-token-00000", role: "root" }] })).toMatch(
      /tokens\[2\]\.role: must be "admin", "user" or "supervisor"/,
    );
    expect(errorOf({ tokens: [{ ...admin, workspaces: [] }] })).toMatch(/tokens\[0\]\.workspaces: must be "\*" or a non-empty array/);
    expect(errorOf({ tokens: [{ ...admin, workspaces: undefined }] })).toMatch(/tokens\[0\]\.workspaces/);
    expect(errorOf({ tokens: [{ ...admin, role: "supervisor", workspaces: undefined, sandbox: "dev" }] })).toMatch(/tokens\[0\]\.workspace: a supervisor needs/);
    expect(errorOf({ tokens: [{ ...admin, role: "supervisor", workspaces: undefined, workspace: "default" }] })).toMatch(/tokens\[0\]\.sandbox: a supervisor needs/);
    expect(errorOf({ tokens: [{ ...admin, sandbox: "dev" }] })).toMatch(/tokens\[0\]\.sandbox: only supervisor entries/);
  });

  it("never echoes a token in an error message", () => {
    const message = errorOf({ tokens: [admin, admin] });
    expect(message).not.toContain(admin.token);
  });

  it("reports unreadable and non-JSON files with the path", async () => {
    await expect(loadAuthFile("/nonexistent/auth.json")).rejects.toThrow(/auth file \/nonexistent\/auth\.json: cannot read/);
    const dir = await mkdtemp(join(tmpdir(), "auth-file-"));
    try {
      await writeFile(join(dir, "bad.json"), "{ tokens: ");
      await expect(loadAuthFile(join(dir, "bad.json"))).rejects.toThrow(/bad\.json: not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
