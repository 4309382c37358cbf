// The API docs a user starts from (typedoc.json, `npm run docs`): the README is the front page,
// every entry point opens with a module summary, the main exports carry an `@example`, and every
// `@example` in src/ type-checks against the real API. Read from the sources with the TypeScript
// compiler, not from a typedoc run, so the test takes a few seconds.
//
// An example is the ```ts block after `@example`. It may use `client` (a ConfigClient) and
// `policy` (a SandboxPolicyInput) without declaring them, as the README does; anything else it
// uses it imports, from the package's own entry points ("openshell-config", "…/rollout", …).

import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The entry points (typedoc.json `entryPoints`) and the module name each one documents. */
const ENTRY_POINTS: Readonly<Record<string, string>> = {
  "src/index.ts": "openshell-config",
  "src/oidc.ts": "openshell-config/oidc",
  "src/raw.ts": "openshell-config/raw",
  "src/rollout.ts": "openshell-config/rollout",
  "src/transport/node.ts": "openshell-config/transport/node",
  "src/transport/web.ts": "openshell-config/transport/web",
};

/** The main exports, by the file that declares them: `name` or `Interface.member`. */
const MUST_HAVE_EXAMPLE: Readonly<Record<string, readonly string[]>> = {
  "src/client.ts": [
    "createConfigClient",
    "ConfigClient.updatePolicy",
    "ConfigClient.updateSettings",
    "ConfigClient.awaitCompletion",
    "ConfigClient.getOperation",
    "ConfigClient.getConfig",
  ],
  "src/refs.ts": ["restoreHandle"],
  "src/errors.ts": ["CompletionTimeoutError", "TlsError"],
  "src/rollout.ts": ["rollout", "withRollout"],
  "src/oidc/client-credentials.ts": ["oidcClientCredentials"],
  "src/oidc/refresh-token.ts": ["oidcRefreshToken"],
  "src/transport/node.ts": ["createNodeTransport", "NodeTransportOptions.tls"],
  "src/transport/tls-options.ts": ["NodeTlsOptions"],
  "src/transport/tls-bundle.ts": ["readMtlsBundle"],
  "src/transport/web.ts": ["createWebTransport"],
  "src/convert/setting-value.ts": ["toSettingValue", "fromSettingValue"],
};

const read = (file: string) => readFileSync(join(ROOT, file), "utf8");
const parse = (file: string) => ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);

/** The text of each `/** … *\/` comment directly before `node`, without the comment markers. */
function docComments(source: ts.SourceFile, node: ts.Node): string[] {
  return (ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [])
    .map((r) => source.text.slice(r.pos, r.end))
    .filter((c) => c.startsWith("/**"))
    .map(uncomment);
}

function uncomment(comment: string): string {
  return comment
    .replace(/^\/\*\*/, "")
    .replace(/\*\/$/, "")
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
    .join("\n");
}

/** The code of every ```ts block in the `@example` sections of a doc comment's text. */
function examplesIn(doc: string): string[] {
  const out: string[] = [];
  let inExample = false;
  let fence: string[] | undefined;
  for (const line of doc.split("\n")) {
    if (fence !== undefined) {
      if (/^```\s*$/.test(line)) {
        out.push(fence.join("\n"));
        fence = undefined;
      } else fence.push(line);
    } else if (/^@example\b/.test(line)) inExample = true;
    else if (/^@\w/.test(line)) inExample = false;
    else if (inExample && /^```(ts|typescript)\s*$/.test(line)) fence = [];
  }
  return out;
}

/** The declarations of `path` ("name" or "Interface.member") in a source file; overloads give several. */
function declarationsOf(source: ts.SourceFile, path: string): ts.Node[] {
  const [name, member] = path.split(".");
  const found: ts.Node[] = [];
  for (const statement of source.statements) {
    const declared =
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement)) &&
      statement.name?.text === name;
    if (!declared) continue;
    if (member === undefined) found.push(statement);
    else if (ts.isInterfaceDeclaration(statement) || ts.isClassDeclaration(statement)) {
      for (const m of statement.members) if (m.name && ts.isIdentifier(m.name) && m.name.text === member) found.push(m);
    }
  }
  return found;
}

/** Every documented declaration of src/ (not src/gen) with its examples, for the type check. */
function allExamples(): { where: string; code: string }[] {
  const files = ts.sys
    .readDirectory(join(ROOT, "src"), [".ts"])
    .map((f) => f.slice(ROOT.length + 1))
    .filter((f) => !f.startsWith("src/gen/"));
  const out: { where: string; code: string }[] = [];
  for (const file of files) {
    const source = parse(file);
    const seen = new Set<number>();
    const visit = (node: ts.Node) => {
      for (const r of ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? []) {
        if (seen.has(r.pos)) continue;
        seen.add(r.pos);
        const text = source.text.slice(r.pos, r.end);
        if (!text.startsWith("/**")) continue;
        const line = source.getLineAndCharacterOfPosition(r.pos).line + 1;
        examplesIn(uncomment(text)).forEach((code, i) => out.push({ where: `${file}:${line}#${i + 1}`, code }));
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

/** The example as a module of its own, with `client` and `policy` declared when it does not. */
function asModule(code: string): string {
  const declares = (name: string) => new RegExp(`\\b(const|let|var)\\s+${name}\\b`).test(code);
  const uses = (name: string) => new RegExp(`\\b${name}\\b`).test(code);
  const prelude = ["export {};"];
  if (uses("client") && !declares("client")) prelude.push('declare const client: import("openshell-config").ConfigClient;');
  if (uses("policy") && !declares("policy")) prelude.push('declare const policy: import("openshell-config").SandboxPolicyInput;');
  return `${prelude.join(" ")}\n${code}\n`;
}

/** Type-checks sources held in memory (repository paths to text) with the repository's tsconfig. */
function typeCheck(files: ReadonlyMap<string, string>): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  })!;
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, noUnusedLocals: false };
  const host = ts.createCompilerHost(options, true);
  const virtual = new Map([...files].map(([path, text]) => [join(ROOT, path), text]));
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => virtual.has(f) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(f) ?? readFile.call(host, f);
  host.getSourceFile = (f, language, ...rest) =>
    virtual.has(f) ? ts.createSourceFile(f, virtual.get(f)!, language, true) : getSourceFile.call(host, f, language, ...rest);
  const program = ts.createProgram([...virtual.keys()], options, host);
  const problems: string[] = [];
  for (const f of virtual.keys()) {
    const source = program.getSourceFile(f)!;
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      problems.push(`${f.slice(ROOT.length + 1)}:${line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    }
  }
  return problems;
}

describe("the API docs", () => {
  it("have the README as their front page", () => {
    const typedoc = JSON.parse(read("typedoc.json")) as { readme?: string; entryPoints: string[] };
    expect(typedoc.readme).toBe("README.md");
    expect([...typedoc.entryPoints].sort()).toEqual(Object.keys(ENTRY_POINTS).sort());
  });

  it("link only to README headings that exist, under GitHub's anchors and typedoc's alike", () => {
    const readme = read("README.md").replace(/^```[\s\S]*?^```/gm, "");
    const headings = [...readme.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim());
    // GitHub keeps the text of code spans; typedoc drops them (a heading with a code span gets a
    // different anchor there). Both drop punctuation and join words with "-".
    const github = (h: string) => h.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const typedoc = (h: string) => github(h.replace(/`[^`]*`/g, "").trim());
    const anchors = [...new Set([...readme.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!))];
    expect(anchors.length).toBeGreaterThan(0);
    for (const anchor of anchors) {
      expect(headings.map(github), `README link #${anchor} on GitHub`).toContain(anchor);
      expect(headings.map(typedoc), `README link #${anchor} in the typedoc front page`).toContain(anchor);
    }
  });

  it.each(Object.entries(ENTRY_POINTS))("open %s with a module summary naming it %s", (file, name) => {
    const source = parse(file);
    const first = source.statements[0]!;
    const [doc] = docComments(source, first);
    expect(doc, `${file} starts with a /** … @module */ comment`).toBeDefined();
    expect(doc).toMatch(new RegExp(`^@module ${name.replace(/[/.]/g, "\\$&")}\\s*$`, "m"));
    const summary = doc!.slice(0, doc!.search(/^@/m)).trim();
    expect(summary.length, `${file}: the summary before the tags`).toBeGreaterThan(80);
  });

  const required = Object.entries(MUST_HAVE_EXAMPLE).flatMap(([file, names]) => names.map((name) => [file, name] as const));
  it.each(required)("give an @example in %s for %s", (file, name) => {
    const source = parse(file);
    const declarations = declarationsOf(source, name);
    expect(declarations.length, `${name} is declared in ${file}`).toBeGreaterThan(0);
    const examples = declarations.flatMap((d) => docComments(source, d)).flatMap(examplesIn);
    expect(examples.length, `${name} in ${file} has an @example with a \`\`\`ts block`).toBeGreaterThan(0);
  });

  it("hold examples that type-check against the API", () => {
    const examples = allExamples();
    expect(examples.length).toBeGreaterThanOrEqual(required.length);
    const files = new Map(examples.map((e, i) => [`test/unit/.api-example-${i}.ts`, asModule(e.code)]));
    const where = new Map([...files.keys()].map((f, i) => [f, examples[i]!.where]));
    const problems = typeCheck(files).map((p) => {
      const file = p.slice(0, p.indexOf(":"));
      return `${where.get(file) ?? file} (example line ${p.split(":")[1]}): ${p.split(": ").slice(1).join(": ")}`;
    });
    expect(problems).toEqual([]);
  }, 60_000);
});
