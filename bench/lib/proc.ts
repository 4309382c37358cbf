// Child processes for the benchmarks: node processes started from source with tsx (no build),
// their output captured line by line, and what /proc says about their CPU time and memory.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// Ports for servers started a moment later: examples/free-port.ts says why not listen(0).
export { freePort } from "../../examples/free-port.js";

// Built programs (bench/lib/build.ts) by source path; a script without one runs from source under tsx.
const built = new Map<string, string>();

/** From now on, children of these scripts run their built file with plain node. */
export function useBuiltPrograms(programs: ReadonlyMap<string, string>): void {
  for (const [src, file] of programs) built.set(src, file);
}

// Every child dies with this process, whatever happens to it.
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

export interface ChildOptions {
  /** For messages: `gateway`, `supervisor#2`, `client#3`. */
  readonly name: string;
  /** Script path relative to the repository root. */
  readonly script: string;
  readonly args: readonly string[];
  /** Extra node options before the script (and `--import tsx` when it runs from source), e.g. `--cpu-prof`. */
  readonly nodeArgs?: readonly string[];
  /** Where stderr (and stdout, unless captured) is appended. */
  readonly log: WriteStream;
  /** Keep stdout lines in memory (workers answer in JSON there). */
  readonly captureStdout?: boolean;
  /** Extra environment variables. */
  readonly env?: Readonly<Record<string, string>>;
}

/** One node child process. */
export class Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly spawnedAt = performance.now();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Supervisor processes: how often a session's stream ended (and was reconnected), by reason. */
  readonly reconnects = new Map<string, number>();
  private readonly stdoutLines: string[] = [];
  private readonly tail: string[] = [];
  private readonly watchers = new Set<{ from: "stdout" | "log"; match: (l: string) => boolean; resolve: (l: string) => void }>();

  constructor(o: ChildOptions) {
    this.name = o.name;
    // OSC_BENCH_PROF_ALL=DIR profiles every process of the run (gateway, supervisors, clients).
    const profAll = process.env.OSC_BENCH_PROF_ALL ? ["--cpu-prof", "--cpu-prof-dir", process.env.OSC_BENCH_PROF_ALL] : [];
    const file = built.get(o.script);
    const entry = file ? [file] : ["--import", "tsx", join(ROOT, o.script)];
    this.process = spawn(process.execPath, [...(o.nodeArgs ?? profAll), ...entry, ...o.args], {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "pipe"],
      ...(o.env ? { env: { ...process.env, ...o.env } } : {}),
    });
    live.add(this.process);
    // "close", not "exit": "exit" can come before the last of its stdout has been read, and a
    // line still in the pipe (a large result) would be missed by whoever awaits it.
    this.exited = new Promise((r) =>
      this.process.once("close", (code, signal) => {
        live.delete(this.process);
        r({ code, signal });
      }),
    );
    this.process.stdin!.on("error", () => {});
    const follow = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
      let carry = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const parts = (carry + chunk).split("\n");
        carry = parts.pop()!;
        for (const p of parts) onLine(p);
      });
      stream.on("end", () => carry !== "" && onLine(carry));
    };
    const toLog = (line: string) => {
      if (line.includes("supervisor stream ended")) {
        const reason = /"reason":"([^"]*)"/.exec(line)?.[1] ?? "unknown";
        this.reconnects.set(reason, (this.reconnects.get(reason) ?? 0) + 1);
      }
      this.tail.push(line);
      if (this.tail.length > 40) this.tail.shift();
      if (!o.log.writableEnded) o.log.write(`[${this.name}] ${line}\n`);
      this.notify("log", line);
    };
    follow(this.process.stderr!, toLog);
    follow(this.process.stdout!, o.captureStdout ? (l) => (this.stdoutLines.push(l), this.notify("stdout", l)) : toLog);
  }

  get pid(): number {
    return this.process.pid!;
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** The last lines of its stderr, for error messages. */
  recent(): string {
    return this.tail.slice(-15).join("\n");
  }

  send(line: string): void {
    this.process.stdin!.write(`${line}\n`);
  }

  /**
   * Resolves with the first line of `from` that `match` accepts: any captured stdout line, or a
   * log line (stderr, and stdout when not captured) among the recent ones or arriving later.
   */
  waitForLine(match: (line: string) => boolean, timeoutMs: number, from: "stdout" | "log" = "stdout"): Promise<string> {
    const found = (from === "stdout" ? this.stdoutLines : this.tail).find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const watcher = { from, match, resolve: (l: string) => (clearTimeout(timer), resolve(l)) };
      const timer = setTimeout(() => {
        this.watchers.delete(watcher);
        reject(new Error(`${this.name}: no matching output within ${timeoutMs} ms:\n${this.recent()}`));
      }, timeoutMs);
      this.watchers.add(watcher);
      void this.exited.then(() => {
        if (!this.watchers.delete(watcher)) return;
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${this.process.exitCode ?? this.process.signalCode}) while awaited:\n${this.recent()}`));
      });
    });
  }

  /** kill() was called: an exit from now on is expected. */
  stopping = false;

  async kill(signal: NodeJS.Signals = "SIGTERM", graceMs = 8_000): Promise<void> {
    this.stopping = true;
    if (this.running) this.process.kill(signal);
    const t = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(t);
  }

  private notify(from: "stdout" | "log", line: string): void {
    for (const w of this.watchers) {
      let matched = false;
      try {
        matched = w.from === from && w.match(line);
      } catch {
        // a predicate that cannot read the line does not match it
      }
      if (matched) {
        this.watchers.delete(w);
        w.resolve(line);
      }
    }
  }
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export interface ProcSample {
  /** user + system CPU time so far, ms. */
  readonly cpuMs: number;
  /** Resident set size now, bytes. */
  readonly rssBytes: number;
  /** Peak resident set size (VmHWM), bytes. */
  readonly peakRssBytes: number;
  readonly at: number;
}

/** CPU time (utime + stime from /proc/<pid>/stat) and memory (VmRSS, VmHWM from /proc/<pid>/status). */
export function sampleProc(pid: number): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may contain spaces) start at field 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { cpuMs: (ticks * 1000) / CLK_TCK, rssBytes: kb("VmRSS"), peakRssBytes: kb("VmHWM"), at: performance.now() };
}

/** CPU use between two samples, in percent of one core. */
export function cpuPercent(a: ProcSample, b: ProcSample): number {
  return ((b.cpuMs - a.cpuMs) / Math.max(1, b.at - a.at)) * 100;
}

export function openLog(path: string): WriteStream {
  return createWriteStream(path, { flags: "a" });
}

export interface MachineSample {
  readonly busy: number;
  readonly total: number;
}

/** Busy and total CPU time of the whole machine (all cores), from /proc/stat, in clock ticks. */
export function sampleMachine(): MachineSample {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** What a measured span is judged by, read at its start and at its end: the gateway, its supervisor processes, the machine. */
export interface SpanSample {
  readonly gateway: ProcSample;
  /** CPU time of all the supervisor processes, ms. */
  readonly supervisorsCpuMs: number;
  readonly machine: MachineSample;
}

export function sampleSpan(gatewayPid: number, supervisorPids: readonly (number | undefined)[]): SpanSample {
  return {
    gateway: sampleProc(gatewayPid),
    supervisorsCpuMs: supervisorPids.reduce<number>((a, pid) => a + sampleProc(pid!).cpuMs, 0),
    machine: sampleMachine(),
  };
}

/** Busy share of the whole machine between two samples, percent (100 = every core busy). */
export function machineBusyPercent(a: MachineSample, b: MachineSample): number {
  return ((b.busy - a.busy) / Math.max(1, b.total - a.total)) * 100;
}

/** settleMachine's defaults (the report states them). */
export const SETTLE = { busyPercent: 10, windowMs: 500, maxMs: 20_000 } as const;

/**
 * Waits until the machine is quiet (under `busyPercent` of all cores over a `windowMs` window)
 * or `maxMs` has passed, so that one step does not start in the wake of the last (PostgreSQL's
 * checkpoint after the fleet, a previous stack's exit). Returns how long it waited and how busy
 * the last window was.
 */
export async function settleMachine(o: { busyPercent?: number; windowMs?: number; maxMs?: number } = {}): Promise<{ waitedMs: number; busyPercent: number }> {
  const limit = o.busyPercent ?? SETTLE.busyPercent;
  const windowMs = o.windowMs ?? SETTLE.windowMs;
  const maxMs = o.maxMs ?? SETTLE.maxMs;
  const t0 = performance.now();
  for (;;) {
    const a = sampleMachine();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const busy = machineBusyPercent(a, sampleMachine());
    const waitedMs = performance.now() - t0;
    if (busy < limit || waitedMs >= maxMs) return { waitedMs: Math.round(waitedMs), busyPercent: Math.round(busy) };
  }
}

/** CPU ms of the machine (all cores) between two samples. */
export function machineBusyMs(a: MachineSample, b: MachineSample): number {
  return ((b.busy - a.busy) * 1000) / CLK_TCK;
}
