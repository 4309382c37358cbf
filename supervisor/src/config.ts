// The supervisor's command line: flags, their OPENSHELL_SUPERVISOR_* environment equivalents
// (flags win), and the files they name (token file, local policy). Problems are UsageErrors,
// which the CLI reports with exit status 2.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { fromJsonString } from "@bufbuild/protobuf";
import { SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";
import type { Faults } from "./connection.js";
import { isLogLevel, type LogLevel } from "./log.js";
import { DEFAULT_PROBE_TIMEOUT_MS } from "./probe.js";
import { isSafeSandboxName } from "./runtime.js";
import { describeViolations, validatePolicy } from "./validate.js";

export class UsageError extends Error {
  readonly exitCode = 2;
  override readonly name = "UsageError";
}

export interface SupervisorConfig {
  readonly gateways: readonly string[];
  /** `--ca FILE`: PEM certificates trusted for https gateways, besides the system roots. */
  readonly ca: string | undefined;
  readonly members: readonly { readonly name: string; readonly token: string | undefined }[];
  readonly stateDir: string;
  readonly localPolicy: SandboxPolicy | undefined;
  readonly localPolicyFile: string | undefined;
  readonly logLevel: LogLevel;
  readonly probeTimeoutMs: number;
  readonly faults: Faults;
  /** `--poll-interval`: poll GetSandboxConfig at this period instead of a ConnectSupervisor stream (undefined = stream). */
  readonly pollIntervalMs: number | undefined;
}

export type Command =
  | { readonly kind: "help"; readonly text: string }
  | { readonly kind: "version" }
  | { readonly kind: "print-effective"; readonly stateDir: string; readonly sandbox: string }
  | { readonly kind: "run"; readonly config: SupervisorConfig };

const DEFAULT_STATE_DIR = ".openshell-supervisor";

export const USAGE = `Usage: openshell-supervisor [options]

Connects sandboxes to an OpenShell gateway (ConnectSupervisor), applies the
configuration it streams to a simulated sandbox runtime, and reports the outcome
of each revision.

Sandboxes (one of):
  --sandbox NAME             one sandbox (name or id, as the gateway knows it)
  --sandboxes N              N sandboxes named <prefix>0000 … in one process
  --sandbox-prefix P         name prefix for --sandboxes (default "sandbox-")

Gateway:
  --gateway URL[,URL…]       gateway URL(s), rotated through on failure; omit
                             for standalone mode; https:// URLs are verified
                             against the system roots and --ca
  --ca FILE                  PEM CA certificate(s) of an https gateway (e.g. a
                             private CA), trusted besides the system roots
  --token TOKEN              sandbox bearer token (for every sandbox without a
                             token-file entry)
  --token-file FILE          JSON object { "<sandbox name>": "<token>" }

Runtime:
  --state-dir DIR            where each sandbox's directory is (default
                             ./.openshell-supervisor): <sandbox>/effective.json,
                             and effective.log while applies are recent
  --local-policy FILE        proto-JSON SandboxPolicy that overrides the
                             gateway's policies (alone, without --gateway:
                             standalone mode)
  --probe-timeout-ms N       TCP reachability timeout for middleware services
                             (default 300)
  --log-level LEVEL          debug, info (default), warn or error
  --poll-interval D          polling mode (the upstream baseline, e.g. 10s): no
                             ConnectSupervisor stream; every D call
                             GetSandboxConfig, apply a changed policy and
                             report it with ReportPolicyStatus (D: 500ms, 1s,
                             10s, 1m; bare = ms)

Fault injection (tests):
  --apply-delay-ms N         wait N ms before each apply
  --drop-acks                apply, but never send results
  --disconnect-after N       close the stream after N live updates
  --fail-bootstrap           fail every bootstrap apply

  --print-effective NAME     print what sandbox NAME enforces, from --state-dir,
                             and exit (the newest of effective.log and
                             effective.json)
  -h, --help                 show this help
      --version              print the version

Every option can also be set as OPENSHELL_SUPERVISOR_<OPTION> (e.g.
OPENSHELL_SUPERVISOR_GATEWAY, OPENSHELL_SUPERVISOR_TOKEN,
OPENSHELL_SUPERVISOR_DROP_ACKS=1); command-line flags win.`;

const OPTIONS = {
  gateway: { type: "string" },
  ca: { type: "string" },
  sandbox: { type: "string" },
  sandboxes: { type: "string" },
  "sandbox-prefix": { type: "string" },
  token: { type: "string" },
  "token-file": { type: "string" },
  "state-dir": { type: "string" },
  "local-policy": { type: "string" },
  "probe-timeout-ms": { type: "string" },
  "log-level": { type: "string" },
  "poll-interval": { type: "string" },
  "apply-delay-ms": { type: "string" },
  "drop-acks": { type: "boolean" },
  "disconnect-after": { type: "string" },
  "fail-bootstrap": { type: "boolean" },
  "print-effective": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

type OptionName = keyof typeof OPTIONS;

/** `--apply-delay-ms` → `OPENSHELL_SUPERVISOR_APPLY_DELAY_MS`. */
export function envName(option: string): string {
  return `OPENSHELL_SUPERVISOR_${option.toUpperCase().replaceAll("-", "_")}`;
}

/** Parses argv and env; reads the token file and the local policy. Throws UsageError. */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv, readFile: (path: string) => string = (p) => readFileSync(p, "utf8")): Command {
  let values: Partial<Record<OptionName, string | boolean>>;
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${USAGE}`);
  }
  if (values.help) return { kind: "help", text: USAGE };
  if (values.version) return { kind: "version" };

  const str = (name: OptionName): string | undefined => {
    const v = values[name];
    if (typeof v === "string") return v;
    const e = env[envName(name)];
    return e === undefined || e === "" ? undefined : e;
  };
  const flag = (name: OptionName): boolean => {
    if (values[name] === true) return true;
    const e = env[envName(name)];
    if (e === undefined || e === "") return false;
    if (/^(1|true|yes|on)$/i.test(e)) return true;
    if (/^(0|false|no|off)$/i.test(e)) return false;
    throw new UsageError(`${envName(name)} must be a boolean (1/0, true/false), got ${JSON.stringify(e)}`);
  };
  // Flag only (an inherited environment variable must not turn a run into a print).
  const printed = values["print-effective"];
  if (typeof printed === "string") {
    if (!isSafeSandboxName(printed)) throw new UsageError(`--print-effective: ${JSON.stringify(printed)} is not a sandbox name`);
    return { kind: "print-effective", stateDir: str("state-dir") ?? DEFAULT_STATE_DIR, sandbox: printed };
  }
  const int = (name: OptionName, fallback: number, min: number): number => {
    const s = str(name);
    if (s === undefined) return fallback;
    if (!/^\d+$/.test(s.trim())) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(s)}`);
    const n = Number(s.trim());
    if (n < min || !Number.isSafeInteger(n)) throw new UsageError(`--${name} must be at least ${min}, got ${s}`);
    return n;
  };

  const gateways = parseGateways(str("gateway"));
  const caFile = str("ca");
  const ca = caFile === undefined ? undefined : loadCa(caFile, gateways, readFile);
  const names = sandboxNames(str("sandbox"), str("sandboxes"), str("sandbox-prefix"), int);
  const localPolicyFile = str("local-policy");
  const localPolicy = localPolicyFile === undefined ? undefined : loadLocalPolicy(localPolicyFile, readFile);
  if (gateways.length === 0 && !localPolicy) throw new UsageError(`--gateway is required (or --local-policy for standalone mode)\n\n${USAGE}`);

  const tokenFile = str("token-file");
  const tokens = tokenFile === undefined ? undefined : loadTokenFile(tokenFile, readFile);
  const token = str("token");
  const members = names.map((name) => ({ name, token: tokens?.[name] ?? token }));
  if (gateways.length > 0 && tokens && token === undefined) {
    const missing = members.filter((m) => m.token === undefined).map((m) => m.name);
    if (missing.length > 0) {
      const shown = missing.slice(0, 5).join(", ");
      throw new UsageError(`--token-file has no token for ${missing.length} sandbox(es): ${shown}${missing.length > 5 ? ", …" : ""} (add them or pass --token as a fallback)`);
    }
  }

  const pollText = str("poll-interval");
  const pollIntervalMs = pollText === undefined ? undefined : parseDuration("--poll-interval", pollText);
  if (pollIntervalMs !== undefined) {
    if (gateways.length === 0) throw new UsageError("--poll-interval needs --gateway (there is nothing to poll in standalone mode)");
    // These faults act on a ConnectSupervisor stream, which polling mode does not open.
    for (const f of ["drop-acks", "fail-bootstrap", "disconnect-after"] as const) {
      if (f === "disconnect-after" ? str(f) !== undefined : flag(f)) throw new UsageError(`--${f} cannot be combined with --poll-interval (polling mode opens no stream)`);
    }
  }

  const logLevel = str("log-level") ?? "info";
  if (!isLogLevel(logLevel)) throw new UsageError(`--log-level must be debug, info, warn or error, got ${JSON.stringify(logLevel)}`);

  return {
    kind: "run",
    config: {
      gateways,
      ca,
      members,
      stateDir: str("state-dir") ?? DEFAULT_STATE_DIR,
      localPolicy,
      localPolicyFile,
      logLevel,
      probeTimeoutMs: int("probe-timeout-ms", DEFAULT_PROBE_TIMEOUT_MS, 1),
      faults: {
        applyDelayMs: int("apply-delay-ms", 0, 0),
        dropAcks: flag("drop-acks"),
        disconnectAfter: int("disconnect-after", 0, 0),
        failBootstrap: flag("fail-bootstrap"),
      },
      pollIntervalMs,
    },
  };
}

/** `500ms`, `1s`, `1.5s`, `10s`, `1m`, or a bare number of milliseconds; at least 10 ms. */
export function parseDuration(option: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new UsageError(`${option} must be a duration such as 500ms, 1s or 10s, got ${JSON.stringify(text)}`);
  const ms = Math.round(Number(m[1]) * (m[2] === "s" ? 1000 : m[2] === "m" ? 60_000 : 1));
  if (!(ms >= 10) || !Number.isSafeInteger(ms)) throw new UsageError(`${option} must be at least 10ms, got ${JSON.stringify(text)}`);
  return ms;
}

function parseGateways(value: string | undefined): string[] {
  if (value === undefined) return [];
  const urls = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const u of urls) {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      throw new UsageError(`--gateway: ${JSON.stringify(u)} is not a URL (expected e.g. http://127.0.0.1:8080)`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new UsageError(`--gateway: ${JSON.stringify(u)} must be an http:// or https:// URL`);
    if (parsed.username || parsed.password) throw new UsageError("--gateway: URLs must not contain credentials; use --token or --token-file");
  }
  return urls;
}

function sandboxNames(
  single: string | undefined,
  count: string | undefined,
  prefix: string | undefined,
  int: (name: OptionName, fallback: number, min: number) => number,
): string[] {
  if (single !== undefined && count !== undefined) throw new UsageError("use either --sandbox or --sandboxes, not both");
  let names: string[];
  if (single !== undefined) {
    names = [single];
  } else if (count !== undefined) {
    const n = int("sandboxes", 0, 1);
    const width = Math.max(4, String(n - 1).length);
    const p = prefix ?? "sandbox-";
    names = Array.from({ length: n }, (_, i) => `${p}${String(i).padStart(width, "0")}`);
  } else {
    throw new UsageError(`--sandbox NAME or --sandboxes N is required\n\n${USAGE}`);
  }
  const bad = names.find((n) => !isSafeSandboxName(n));
  if (bad !== undefined) throw new UsageError(`sandbox name ${JSON.stringify(bad)} is not usable (letters, digits, '.', '_' and '-'; not starting with '.')`);
  return names;
}

/** Reads `--ca`: PEM certificates, for https gateways only. */
function loadCa(path: string, gateways: readonly string[], readFile: (p: string) => string): string {
  if (!gateways.some((g) => g.startsWith("https:"))) throw new UsageError("--ca needs an https:// --gateway (it verifies the gateway's certificate)");
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    throw new UsageError(`--ca ${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : ((err as NodeJS.ErrnoException).code ?? "read error")}`);
  }
  if (!/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.test(text)) throw new UsageError(`--ca ${path}: not a PEM certificate (expected -----BEGIN CERTIFICATE-----)`);
  return text;
}

function loadTokenFile(path: string, readFile: (p: string) => string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFile(path));
  } catch (err) {
    // Never echo the file's content: it holds tokens.
    const why = err instanceof SyntaxError ? "it is not valid JSON" : ((err as NodeJS.ErrnoException).code ?? "read error");
    throw new UsageError(`--token-file ${path}: ${why}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new UsageError(`--token-file ${path}: expected a JSON object { "<sandbox name>": "<token>" }`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== "string" || v === "") throw new UsageError(`--token-file ${path}: the token of ${JSON.stringify(k)} must be a non-empty string`);
    out[k] = v;
  }
  return out;
}

function loadLocalPolicy(path: string, readFile: (p: string) => string): SandboxPolicy {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    throw new UsageError(`--local-policy ${path}: ${(err as NodeJS.ErrnoException).code ?? "read error"}`);
  }
  let policy: SandboxPolicy;
  try {
    policy = fromJsonString(SandboxPolicySchema, text);
  } catch (err) {
    throw new UsageError(`--local-policy ${path}: not a proto-JSON SandboxPolicy: ${(err as Error).message}`);
  }
  const violations = validatePolicy(policy);
  if (violations.length > 0) throw new UsageError(`--local-policy ${path}: ${describeViolations(violations)}`);
  return policy;
}
