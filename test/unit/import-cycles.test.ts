// No import circle in the SDK (src/, generated code in src/gen apart) nor in the command line
// (cli/): every `import`, `import type`, `export … from` and dynamic `import("…")` of a relative
// module is an edge; type-only edges count too, because a circle of types is still two modules
// that cannot be understood, moved or tested apart. Shared types belong below the modules that
// use them. On failure the message prints each circle as a path, e.g. `a.ts → b.ts → a.ts`.

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Every .ts file under `dir` (relative to the repository root), src/gen excepted. */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (path !== "src/gen") out.push(...tsFiles(path));
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
      out.push(path);
    }
  }
  return out.sort();
}

/**
 * The relative modules `text` (the source of `file`) imports, resolved to repository paths; those
 * outside `files` are dropped. TypeScript's own pre-processor finds them: `import`, `import type`
 * and `export … from` (over any number of lines), `import("…")` in code and in types; nothing in
 * comments or strings.
 */
function importsIn(file: string, text: string, files: ReadonlySet<string>): string[] {
  const targets = new Set<string>();
  for (const { fileName: spec } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!spec.startsWith(".")) continue;
    const base = relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\\/g, "/");
    const hit = [base.replace(/\.js$/, ".ts"), `${base}.ts`, `${base}/index.ts`].find((c) => files.has(c));
    if (hit !== undefined && hit !== file) targets.add(hit);
  }
  return [...targets].sort();
}

/** The import graph of the .ts files under `dirs`. */
function graphOf(dirs: readonly string[]): Map<string, string[]> {
  const files = dirs.flatMap(tsFiles);
  const set = new Set(files);
  return new Map(files.map((f) => [f, importsIn(f, readFileSync(join(ROOT, f), "utf8"), set)]));
}

/**
 * Every strongly connected component with more than one module (Tarjan): a set of modules each of
 * which reaches every other through imports. Each is reported as concrete circles through it, one
 * from each of its modules (the shortest path from that module back to itself), deduplicated.
 */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const component of components) {
    for (const start of component) {
      const circle = shortestCircle(graph, component, start);
      // The same circle found from another of its modules: rotate it to its smallest module.
      const body = circle.slice(0, -1);
      const first = body.indexOf([...body].sort()[0]!);
      const key = [...body.slice(first), ...body.slice(0, first)].join(" ");
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(circle);
    }
  }
  return out;
}

/** The shortest path from `start` through other modules of its component back to `start`. */
function shortestCircle(
  graph: ReadonlyMap<string, readonly string[]>,
  component: readonly string[],
  start: string,
): string[] {
  const inside = new Set(component);
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = previous.get(u)!) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

const show = (circle: readonly string[]) => circle.join(" → ");

describe("the cycle finder itself", () => {
  it("finds a circle and prints its path, and passes a DAG", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts", "d.ts"]],
      ["d.ts", []],
    ]);
    expect(cycles(graph).map(show)).toEqual(["a.ts → b.ts → c.ts → a.ts"]);
    expect(cycles(new Map([["a.ts", ["b.ts"]], ["b.ts", []]]))).toEqual([]);
  });

  it("counts type-only imports, re-exports, multi-line lists and import types, not comments or strings", () => {
    const files = new Set(["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/e.ts", "src/f.ts", "src/g.ts", "src/h/index.ts"]);
    const text = [
      '// import { x } from "./g.js";',
      "import type {",
      "  A,",
      '  B } from "./a.js";',
      'export { c } from "./b.js";',
      'export type * from "./c.js";',
      'const s = "/* not a comment";',
      'import d from "./d.js";',
      'type T = import("./e.js").T;',
      'const m = await import("./f.js");',
      'import { h } from "./h";',
      'import { readFileSync } from "node:fs";',
    ].join("\n");
    expect(importsIn("src/x.ts", text, files)).toEqual(["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/e.ts", "src/f.ts", "src/h/index.ts"]);
  });
});

describe("no import circle", () => {
  it("in the SDK's sources (src/, without src/gen)", () => {
    const graph = graphOf(["src"]);
    expect(graph.size).toBeGreaterThan(20);
    expect(cycles(graph).map(show), "import circles in src/ (a → b means a imports b)").toEqual([]);
  });

  it("in the command line (cli/)", () => {
    const graph = graphOf(["cli"]);
    expect(graph.size).toBeGreaterThan(5);
    expect(cycles(graph).map(show), "import circles in cli/ (a → b means a imports b)").toEqual([]);
  });
});
