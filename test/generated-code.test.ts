// Guards the checked-in generated code and the proto lint configuration:
// src/gen must be exactly what `buf generate` produces from proto/, and
// `buf lint` must be clean.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));
const checkedIn = join(repoRoot, "src", "gen");

/** Every regular file below `dir`, as sorted paths relative to `dir`. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(relative(dir, full).split("\\").join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

describe("generated code", () => {
  it(
    "src/gen matches what buf generate produces from proto/",
    () => {
      const tmp = mkdtempSync(join(tmpdir(), "openshell-buf-gen-"));
      try {
        // Same template as `npm run generate`; --output prefixes its `out`
        // (src/gen), so the fresh copy lands in <tmp>/src/gen.
        execFileSync("npx", ["buf", "generate", "--template", "buf.gen.yaml", "--output", tmp], {
          cwd: repoRoot,
          stdio: ["ignore", "pipe", "pipe"],
        });
        const fresh = join(tmp, "src", "gen");
        const expected = listFiles(fresh);
        const actual = listFiles(checkedIn);
        const differing: string[] = [];
        for (const f of new Set([...expected, ...actual])) {
          if (!expected.includes(f)) differing.push(`${f} (not produced by buf generate)`);
          else if (!actual.includes(f)) differing.push(`${f} (missing from src/gen)`);
          else if (!readFileSync(join(fresh, f)).equals(readFileSync(join(checkedIn, f)))) {
            differing.push(`${f} (content differs)`);
          }
        }
        expect(expected.length).toBeGreaterThan(0);
        expect(differing.sort(), "run `npx buf generate` to refresh src/gen").toEqual([]);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it(
    "buf lint reports no problems",
    () => {
      const result = spawnSync("npx", ["buf", "lint"], { cwd: repoRoot, encoding: "utf8" });
      expect(result.error).toBeUndefined();
      expect({ status: result.status, output: `${result.stdout}${result.stderr}` }).toEqual({
        status: 0,
        output: "",
      });
    },
    60_000,
  );
});
