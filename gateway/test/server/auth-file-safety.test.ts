// The auth file's safety (issue 29, findings 6 and 7): a syntax error is placed by line and column
// without showing the text (which may be a token), a short token is refused, and the gateway does
// not start on a file whose tokens others may read or which others may change.

import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthFileError, loadAuthFile, parseAuthFile } from "../../src/auth/auth-file.js";
import { findJsonSyntaxError } from "../../src/auth/json-syntax.js";
import { run } from "./gateway-process.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "auth-file-safety-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const TOKEN = "s3cret-admin-token-55aa55aa55aa";
const entry = { token: TOKEN, principal: "alice", role: "admin", workspaces: "*" };

async function file(name: string, text: string, mode = 0o600): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  await chmod(path, mode);
  return path;
}

async function loadError(path: string, options?: Parameters<typeof loadAuthFile>[1]): Promise<string> {
  const err = await loadAuthFile(path, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthFileError);
  return (err as Error).message;
}

describe("an auth file that is not valid JSON", () => {
  it("is reported by line and column, and no part of its text is shown", async () => {
    // A missing comma after the token: JSON.parse's own message quoted the text around it.
    const text = `{\n  "tokens": [\n    { "token": "${TOKEN}" "principal": "alice", "role": "admin", "workspaces": "*" }\n  ]\n}\n`;
    const path = await file("comma.json", text);
    const message = await loadError(path);
    expect(message).toBe(`auth file ${path}: not valid JSON at line 3, column ${text.split("\n")[2]!.indexOf('"principal"') + 1} (unexpected character); the text is not shown, as it may hold tokens`);
    expect(message).not.toContain(TOKEN.slice(0, 6));
  });

  it("is reported at its end when it stops short", async () => {
    const text = `{"tokens": [{"token": "${TOKEN}"`;
    const path = await file("short.json", text);
    expect(await loadError(path)).toBe(`auth file ${path}: not valid JSON at line 1, column ${text.length + 1} (unexpected end of the file); the text is not shown, as it may hold tokens`);
  });

  it("is placed where JSON.parse stops, for every kind of mistake", () => {
    const cases: Array<[string, number, number]> = [
      ["", 1, 1],
      ["{", 1, 2],
      ['{"a":1,}', 1, 8],
      ['{"a":tru}', 1, 9],
      ['[1 2]', 1, 4],
      ['{"a":"x\ny"}', 1, 8],
      ['{"a":"\\q"}', 1, 8],
      ['{"a":01}', 1, 7],
      ["{}\n\n  x", 3, 3],
      ['{"a":1}}', 1, 8],
    ];
    for (const [text, line, column] of cases) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(findJsonSyntaxError(text), JSON.stringify(text)).toMatchObject({ line, column });
    }
    for (const ok of ['{"a":[1,-2.5e3,true,false,null,"\\u00e9\\n"]}', " [] ", '"x"']) expect(findJsonSyntaxError(ok)).toBeUndefined();
  });
});

describe("tokens", () => {
  it("are refused below 16 bytes, naming the entry and never the token", () => {
    let message = "";
    try {
      parseAuthFile({ tokens: [entry, { ...entry, token: "abc123", principal: "bob" }] }, "auth.json");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('auth.json: tokens[1].token: too short (6 bytes; at least 16, e.g. from "openssl rand -hex 32")');
    expect(parseAuthFile({ tokens: [{ ...entry, token: "x".repeat(16) }] }).entries).toHaveLength(1);
  });
});

describe("file modes", () => {
  it("a file whose tokens others may read is refused, with what to do", async () => {
    const path = await file("readable.json", JSON.stringify({ tokens: [entry] }), 0o644);
    expect(await loadError(path, { refuseShared: true })).toBe(
      `auth file ${path}: it holds bearer tokens and others can read it (mode 0644): chmod 600 ${path}, keep only their digests ("tokenSha256"), or pass --allow-readable-auth-file`,
    );
    await chmod(path, 0o640);
    expect(await loadError(path, { refuseShared: true })).toContain("(mode 0640)");
  });

  it("a file others may change is refused even without tokens in it", async () => {
    const path = await file("writable.json", JSON.stringify({ tokens: [{ tokenSha256: "ab".repeat(32), principal: "alice", role: "admin", workspaces: "*" }] }), 0o666);
    expect(await loadError(path, { refuseShared: true })).toBe(
      `auth file ${path}: others can change it (mode 0666), and anyone who can write it can make themselves an admin: chmod 600 ${path}`,
    );
  });

  it("a readable file of digests only, and a private file of tokens, are accepted", async () => {
    const digests = await file("digests.json", JSON.stringify({ tokens: [{ tokenSha256: "ab".repeat(32), principal: "alice", role: "admin", workspaces: "*" }] }), 0o644);
    expect((await loadAuthFile(digests, { refuseShared: true })).entries).toHaveLength(1);
    const tokens = await file("private.json", JSON.stringify({ tokens: [entry] }), 0o600);
    expect((await loadAuthFile(tokens, { refuseShared: true })).entries).toHaveLength(1);
  });

  it("the gateway exits 1 with that line on a readable file, and starts with a warning under --allow-readable-auth-file", async () => {
    const path = await file("gw-readable.json", JSON.stringify({ tokens: [entry] }), 0o644);
    const refused = run(["serve", "--db", "sqlite::memory:", "--port", "0", "--auth-file", path]);
    expect(await refused.exit).toBe(1);
    expect(refused.lines).toEqual([
      `openshell-gateway: auth file ${path}: it holds bearer tokens and others can read it (mode 0644): chmod 600 ${path}, keep only their digests ("tokenSha256"), or pass --allow-readable-auth-file`,
    ]);
    const allowed = run(["serve", "--db", "sqlite::memory:", "--port", "0", "--auth-file", path, "--allow-readable-auth-file"]);
    try {
      const warning = await allowed.waitFor(/other users of this machine can read/);
      expect(warning).toMatchObject({ level: "warn", authFile: path, mode: "0644" });
      await allowed.waitFor(/listening on/);
      allowed.child.kill("SIGTERM");
      expect(await allowed.exit).toBe(0);
      expect(allowed.lines.join("\n")).not.toContain(TOKEN);
    } finally {
      allowed.child.kill("SIGKILL");
    }
  });
});
