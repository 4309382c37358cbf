// Self time by function from V8 CPU profiles (`node --cpu-prof`): where the gateway's CPU went,
// within a time window. The benchmark's programs run as bundles built by esbuild (build.ts), each
// with a linked source map beside it; code loaded through tsx (OSC_BENCH_FROM_SOURCE=1) runs
// minified onto one line, with its maps in tsx's cache directory. Either way positions are mapped
// back to the TypeScript source (best effort: without a map, the file is named without a line).

import { readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT } from "./proc.js";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}
interface CpuProfile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: CallFrame }[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileEntry {
  /** `function (file:line)`, paths relative to the repository. */
  readonly fn: string;
  readonly selfMs: number;
  /** Share of the non-idle samples in the window, percent. */
  readonly percent: number;
}

/** The monotonic clock V8 profiles use, in µs (CLOCK_MONOTONIC, as process.hrtime). */
export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

const B64 = new Map([..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].map((c, i) => [c, i]));

/** One mapping: generated column, index into `sources`, source line (0-based). */
type Segment = [number, number, number];

/** Decodes source map `mappings` into, per generated line, its segments that name a source. */
function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  // Every field but the generated column is a delta from the previous segment, across lines.
  let src = 0;
  let srcLine = 0;
  for (const line of mappings.split(";")) {
    const segs: Segment[] = [];
    let col = 0;
    for (const seg of line.split(",")) {
      if (seg === "") continue;
      const v: number[] = [];
      let shift = 0;
      let value = 0;
      for (const ch of seg) {
        const d = B64.get(ch) ?? 0;
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          v.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      col += v[0] ?? 0;
      if (v.length >= 4) {
        src += v[1]!;
        srcLine += v[2]!;
        segs.push([col, src, srcLine]);
      }
    }
    lines.push(segs);
  }
  return lines;
}

/** The last segment at or before `column` on generated `line` (else the line's first). */
function lookup(lines: Segment[][], line: number, column: number): Segment | undefined {
  const segs = lines[line];
  if (!segs || segs.length === 0) return undefined;
  let lo = 0;
  let hi = segs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (segs[mid]![0] <= column) lo = mid;
    else hi = mid - 1;
  }
  return segs[lo];
}

/** A frame's position in its source: the file (absolute path, or a URL as the map names it) and 0-based line. */
type Mapper = (line: number, column: number, fn: string) => { path: string; line: number } | undefined;

interface RawMap {
  readonly sources?: readonly string[];
  readonly sourceRoot?: string;
  readonly mappings?: string;
}

/** Source maps of tsx's cache, by source path (several versions of a file may be cached). */
function tsxMaps(): Map<string, { code: string; lines: () => Segment[][]; mtime: number }[]> {
  const out = new Map<string, { code: string; lines: () => Segment[][]; mtime: number }[]>();
  const dir = join(tmpdir(), `tsx-${userInfo().uid}`);
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    return out;
  }
  for (const f of files) {
    try {
      const p = join(dir, f);
      const j = JSON.parse(readFileSync(p, "utf8")) as { code?: string; map?: RawMap | string };
      const map = typeof j.map === "string" ? (JSON.parse(j.map) as RawMap) : j.map;
      const source = map?.sources?.[0];
      if (!source || !map?.mappings || typeof j.code !== "string") continue;
      let decoded: Segment[][] | undefined;
      const entry = { code: j.code, lines: () => (decoded ??= decodeMappings(map.mappings!)), mtime: statSync(p).mtimeMs };
      out.set(source, [...(out.get(source) ?? []), entry]);
    } catch {
      // not a cache entry we understand
    }
  }
  return out;
}

function tsxMapper(path: string, maps: ReturnType<typeof tsxMaps>): Mapper | undefined {
  const candidates = (maps.get(path) ?? []).sort((a, b) => b.mtime - a.mtime);
  if (candidates.length === 0) return undefined;
  return (line, column, fn) => {
    // The cached version whose code has this function at this position (else the newest).
    const c = candidates.find((e) => fn !== "" && e.code.split("\n")[line]?.slice(column, column + 200).includes(fn)) ?? candidates[0]!;
    const seg = lookup(c.lines(), line, column);
    // A tsx entry compiles one file: its map has the one source.
    return seg && { path, line: seg[2] };
  };
}

/**
 * For a script with a source map of its own (a bundle of build.ts): the map its trailing
 * `//# sourceMappingURL=` names, else `<file>.map`; sources resolve against the map's directory.
 */
function bundleMapper(path: string): Mapper | undefined {
  let code: string;
  try {
    code = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  const url = /\/\/[#@] sourceMappingURL=(\S+)\s*$/.exec(code.slice(-1000))?.[1];
  let mapPath = `${path}.map`;
  let map: RawMap;
  try {
    if (url?.startsWith("data:")) {
      const [meta = "", data = ""] = url.slice(5).split(",", 2);
      map = JSON.parse(meta.endsWith(";base64") ? Buffer.from(data, "base64").toString("utf8") : decodeURIComponent(data)) as RawMap;
      mapPath = path;
    } else {
      if (url !== undefined) mapPath = url.startsWith("file:") ? fileURLToPath(url) : resolve(dirname(path), decodeURIComponent(url));
      map = JSON.parse(readFileSync(mapPath, "utf8")) as RawMap;
    }
  } catch {
    return undefined;
  }
  if (!map.mappings || !map.sources) return undefined;
  const base = resolve(dirname(mapPath), map.sourceRoot ?? "");
  // esbuild writes sources relative to the map (`../../../gateway/src/cli.ts`); other tools may use URLs.
  const sources = map.sources.map((s) => (s.startsWith("file:") ? fileURLToPath(s) : /^[a-z][\w+.-]*:/i.test(s) ? s : resolve(base, s)));
  let decoded: Segment[][] | undefined;
  return (line, column) => {
    const seg = lookup((decoded ??= decodeMappings(map.mappings!)), line, column);
    const source = seg && sources[seg[1]];
    return source === undefined ? undefined : { path: source, line: seg![2] };
  };
}

/**
 * The `top` functions by self time over every profile in `files` (idle excluded), counting only
 * samples inside `window` (monotonic µs) when one is given.
 */
export function topSelfTime(files: readonly string[], top = 10, window?: { fromUs: number; toUs: number }): ProfileEntry[] {
  const maps = tsxMaps();
  const mappers = new Map<string, Mapper | undefined>();
  const label = (f: CallFrame): string => {
    const name = f.functionName || "(anonymous)";
    if (f.url === "") return name;
    let path = f.url;
    try {
      if (f.url.startsWith("file:")) path = fileURLToPath(f.url);
    } catch {
      // keep the URL
    }
    if (!mappers.has(path)) mappers.set(path, path.endsWith(".ts") ? tsxMapper(path, maps) : /\.[cm]?js$/.test(path) ? bundleMapper(path) : undefined);
    const mapper = mappers.get(path);
    // Unmapped, a script's own line is shown, but not a .ts file's: tsx ran it minified onto one.
    const mapped = mapper?.(f.lineNumber, f.columnNumber, f.functionName) ?? (path.endsWith(".ts") ? undefined : { path, line: f.lineNumber });
    const file = mapped?.path ?? path;
    const shown = file.startsWith(ROOT) ? relative(ROOT, file).replace(/^node_modules\//, "") : file;
    return `${name} (${shown}${mapped === undefined ? "" : `:${mapped.line + 1}`})`;
  };
  const self = new Map<string, number>();
  let busy = 0;
  for (const file of files) {
    const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
    const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
    const labels = new Map<number, string>();
    let t = p.startTime;
    p.samples.forEach((id, i) => {
      const dt = p.timeDeltas[i] ?? 0;
      t += dt;
      if (window && (t < window.fromUs || t > window.toUs)) return;
      const f = byId.get(id);
      if (!f || f.functionName === "(idle)") return;
      busy += dt;
      let key = labels.get(id);
      if (key === undefined) labels.set(id, (key = label(f)));
      self.set(key, (self.get(key) ?? 0) + dt);
    });
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, us]) => ({ fn, selfMs: Math.round(us / 1000), percent: Math.round((us / Math.max(1, busy)) * 1000) / 10 }));
}
