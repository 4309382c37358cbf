// The `openshell-gateway` command line: parses arguments and environment into a validated
// configuration, or a usage error (exit code 2). Pure: no I/O, no process access.

import { LOG_LEVELS, type LogLevel } from "./observability/logger.js";
import { MAX_MESSAGE_BYTES_CEILING } from "./rpc/request-limits.js";
import { REPLICA_ID_PATTERN } from "./cluster/replica-id.js";
import { oidcUrlProblem } from "./auth/oidc-discovery.js";
import { isLoopbackName } from "./http/loopback-host.js";

export interface GatewayConfig {
  /** `sqlite:PATH`, `sqlite::memory:` or a `postgres://` / `postgresql://` URL. */
  readonly db: string;
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
  /**
   * Where principals come from: an auth file (with or without client certificates and OIDC), only
   * client certificates and/or OIDC tokens ("tls-or-oidc": no auth file), or nobody (--no-auth).
   */
  readonly auth:
    | {
        readonly mode: "file";
        readonly path: string;
        /** `--allow-readable-auth-file`: start although others may read the file's tokens (a warning). */
        readonly allowReadable?: true;
      }
    | { readonly mode: "tls-or-oidc" }
    | { readonly mode: "none" };
  /** Browser origins allowed by CORS (`*` = any). */
  readonly corsOrigins: readonly string[];
  readonly logLevel: LogLevel;
  /** Longest server-side wait a client may ask for, in milliseconds. */
  readonly waitMaxMs: number;
  /** Supervisor session bounds, in milliseconds (undefined = the gateway's defaults). */
  readonly ackTimeoutMs: number | undefined;
  readonly heartbeatMs: number | undefined;
  readonly reconcileIntervalMs: number | undefined;
  /** Request limits (undefined = the gateway's defaults: 4 MiB, 1000 waits). */
  readonly maxMessageBytes: number | undefined;
  readonly maxWaitersPerCaller: number | undefined;
  /** Supervisor streams open at once on this gateway (undefined = 20,000). */
  readonly maxSupervisorStreams: number | undefined;
  /** A supervisor stream whose write makes no progress this long ends (undefined = 20 s). */
  readonly supervisorWriteTimeoutMs: number | undefined;
  /** PostgreSQL pool size (undefined = the store's default, 10). */
  readonly dbPoolSize: number | undefined;
  /**
   * Replica settings (PostgreSQL only; undefined for SQLite): this replica's name (undefined =
   * generated per start), the session lease, and whether replicas notify each other.
   */
  readonly replica: { readonly id: string | undefined; readonly leaseMs: number; readonly notify: boolean } | undefined;
  /**
   * `--without-operations`: behave like an upstream release before durable operations (#3273):
   * UpdateConfig ignores wait_mode, idempotency_key and wait_timeout and returns no operation;
   * GetConfigUpdateOperation and the operation extensions answer UNIMPLEMENTED. For tests of
   * clients against such gateways.
   */
  readonly withoutOperations: boolean;
  /**
   * `--without-shared-rollouts`: the rollout record RPCs (rollouts.proto) answer UNIMPLEMENTED, as
   * on a gateway of ours before them. For tests of clients that fall back to local state.
   */
  readonly withoutSharedRollouts: boolean;
  /** `--tls-cert`, `--tls-key` and `--tls-client-ca` (files, read at startup); undefined = cleartext. */
  readonly tls: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile: string | undefined } | undefined;
  /** `--oidc-issuer` and `--oidc-audience`; undefined = no OIDC tokens. */
  readonly oidc: { readonly issuer: string; readonly audience: string } | undefined;
  /** `--sandbox-port`: the supervisors' listener; undefined = none (supervisors use the main port). */
  readonly sandboxPort: number | undefined;
}

/** What the command line asks for. */
export type ParsedCommand = { readonly kind: "serve"; readonly config: GatewayConfig } | { readonly kind: "help"; readonly text: string };

/**
 * A bad command line. `exitCode` is 2, as for every usage error. The message is the problem and a
 * pointer to --help, not the whole help: 70 lines of options would bury the one line that matters.
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly exitCode = 2;
  constructor(message: string) {
    super(`${message}\nrun \`openshell-gateway --help\` for the options`);
  }
}

export const USAGE = `Usage: openshell-gateway serve --db URL --port N AUTH [options]

AUTH: --auth-file FILE, --tls-client-ca FILE, --oidc-issuer URL (one or more),
or --no-auth.

Options:
  --db URL             sqlite:PATH, sqlite::memory: or
                       postgres://user:pass@host/db [env OPENSHELL_GATEWAY_DB]
  --port N             TCP port, 0 for any free port
                       [env OPENSHELL_GATEWAY_PORT]
  --host H             interface to bind (default 127.0.0.1)
  --auth-file FILE     JSON file of bearer tokens and principals, refused if
                       others may read its tokens or change it (chmod 600)
                       [env OPENSHELL_GATEWAY_AUTH_FILE]
  --allow-readable-auth-file
                       start although others may read the auth file's tokens
                       (warns)
  --no-auth            accept every request as an admin (local demos only:
                       loopback --host only, and only requests addressed to
                       localhost, 127.0.0.1 or [::1])
  --cors-origin URL    allow browser calls from this origin; repeatable; * for
                       any
  --log-level L        fatal, error, warn, info, debug, trace, silent
                       (default info)
  --wait-max D         longest server-side completion wait, e.g. 3600s, 30m, 1h
                       (default 3600s)
  --ack-timeout D      re-send a configuration update a supervisor has not
                       acknowledged (default 60s)
  --heartbeat D        supervisor heartbeat interval; a peer silent for 3
                       intervals is dropped (default 15s)
  --reconcile D        how often pending operations are checked for
                       redelivery (default 1s)
  --max-message-size S largest request message, e.g. 4MiB, 512KiB, 1000000
                       (default 4MiB, at most 16MiB)
  --max-waiters N      concurrent server-side waits per caller: waited updates
                       and watches (default 1000)
  --max-supervisor-streams N
                       supervisor streams open at once on this gateway
                       (default 20000; 4 per supervisor token and 2 per
                       sandbox whatever this is)
  --supervisor-write-timeout D
                       end a supervisor stream whose write makes no progress
                       this long (default 20s)
  --without-operations behave like an upstream gateway before durable
                       operations: no operation in UpdateConfig responses,
                       wait_mode and idempotency_key ignored (client tests)
  --without-shared-rollouts
                       keep no shared rollout records: their RPCs answer
                       UNIMPLEMENTED (client tests)

TLS, client certificates and OIDC (see docs/operations.md):
  --tls-cert FILE      serve HTTPS (ALPN h2 and http/1.1) with this PEM
                       certificate (chain)
  --tls-key FILE       the certificate's PEM private key
  --tls-client-ca FILE require a client certificate from this PEM CA on every
                       request but /healthz; a verified one is the platform
                       admin unless the auth file maps it
  --oidc-issuer URL    accept JWT bearer tokens of this OIDC issuer (https; its
                       JWKS via discovery)
  --oidc-audience AUD  the audience (aud) those tokens must carry
  --sandbox-port N     a second listener for supervisors only (same TLS
                       certificate, no client certificate asked):
                       ConnectSupervisor, GetSandboxConfig, ReportPolicyStatus,
                       Health

Several replicas on one PostgreSQL (see docs/operations.md):
  --replica-id ID      this replica's name, e.g. a pod name
                       (default: host-pid-random)
  --lease D            supervisor session lease, renewed every third of it
                       (default 15s)
  --notify on|off      LISTEN/NOTIFY between replicas; off leaves only the
                       periodic repair (default on)
  --db-pool N          PostgreSQL connections of this replica (default 10)
  -h, --help           show this help`;

const DEFAULT_WAIT_MAX_MS = 3_600_000;

/** Parses `argv` (without node and script) with `env` as fallback. Throws UsageError. */
export function parseCommandLine(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): ParsedCommand {
  if (argv.some((a) => a === "--help" || a === "-h") || argv[0] === "help") return { kind: "help", text: USAGE };
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError("missing command: expected `serve`");
  if (command !== "serve") {
    throw new UsageError(`unknown command ${JSON.stringify(command)}${commonStart(command, "serve") >= 3 ? " (did you mean serve?)" : ""}: expected \`serve\``);
  }

  const flags = readFlags(rest);
  const db = flags.single("db") ?? nonEmpty(env.OPENSHELL_GATEWAY_DB);
  if (db === undefined) throw new UsageError("--db is required (or set OPENSHELL_GATEWAY_DB)");
  checkDbUrl(db);

  const portText = flags.single("port") ?? nonEmpty(env.OPENSHELL_GATEWAY_PORT);
  if (portText === undefined) throw new UsageError("--port is required (or set OPENSHELL_GATEWAY_PORT)");
  const port = parsePort(portText);

  const host = flags.single("host") ?? "127.0.0.1";
  if (host === "") throw new UsageError("--host must not be empty");

  const tls = tlsSettings(flags);
  const oidc = oidcSettings(flags);
  const noAuth = flags.bool("no-auth");
  const authFlag = flags.single("auth-file");
  if (noAuth && authFlag !== undefined) throw new UsageError("--auth-file and --no-auth exclude each other");
  if (noAuth && tls?.clientCaFile !== undefined) throw new UsageError("--tls-client-ca and --no-auth exclude each other");
  if (noAuth && oidc !== undefined) throw new UsageError("--oidc-issuer and --no-auth exclude each other");
  if (noAuth && !isLoopbackName(host)) {
    throw new UsageError(
      `--no-auth needs a loopback --host (127.0.0.1, another 127.x address, ::1 or localhost): on ${JSON.stringify(host)} anyone who reaches the port would be an admin`,
    );
  }
  const authPath = noAuth ? undefined : (authFlag ?? nonEmpty(env.OPENSHELL_GATEWAY_AUTH_FILE));
  const allowReadable = flags.bool("allow-readable-auth-file");
  if (allowReadable && authPath === undefined) throw new UsageError("--allow-readable-auth-file needs --auth-file");
  const verified = tls?.clientCaFile !== undefined || oidc !== undefined;
  if (!noAuth && authPath === undefined && !verified) {
    throw new UsageError(
      "authentication not configured: pass --auth-file FILE (or set OPENSHELL_GATEWAY_AUTH_FILE), --tls-client-ca FILE or --oidc-issuer URL, or --no-auth",
    );
  }
  const sandboxPortText = flags.single("sandbox-port");
  const sandboxPort = sandboxPortText === undefined ? undefined : parsePort(sandboxPortText, "--sandbox-port");
  if (sandboxPort !== undefined && sandboxPort !== 0 && sandboxPort === port) throw new UsageError("--sandbox-port must differ from --port");

  const corsOrigins = flags.all("cors-origin").map(checkOrigin);
  const logLevel = flags.single("log-level") ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`--log-level ${JSON.stringify(logLevel)}: expected one of ${LOG_LEVELS.join(", ")}`);
  }
  const waitMaxText = flags.single("wait-max");
  const waitMaxMs = waitMaxText === undefined ? DEFAULT_WAIT_MAX_MS : parseDuration("--wait-max", waitMaxText);
  const optionalDuration = (name: string) => {
    const text = flags.single(name);
    return text === undefined ? undefined : parseDuration(`--${name}`, text);
  };
  const ackTimeoutMs = optionalDuration("ack-timeout");
  const heartbeatMs = optionalDuration("heartbeat");
  const reconcileIntervalMs = optionalDuration("reconcile");
  const sizeText = flags.single("max-message-size");
  const maxMessageBytes = sizeText === undefined ? undefined : parseSize("--max-message-size", sizeText);
  const waitersText = flags.single("max-waiters");
  const maxWaitersPerCaller = waitersText === undefined ? undefined : parseCount("--max-waiters", waitersText);
  const streamsText = flags.single("max-supervisor-streams");
  const maxSupervisorStreams = streamsText === undefined ? undefined : parseCount("--max-supervisor-streams", streamsText);
  const supervisorWriteTimeoutMs = optionalDuration("supervisor-write-timeout");
  const { replica, dbPoolSize } = replicaSettings(flags, db);
  const withoutOperations = flags.bool("without-operations");
  const withoutSharedRollouts = flags.bool("without-shared-rollouts");
  flags.rejectUnknown();

  return {
    kind: "serve",
    config: {
      db,
      host,
      port,
      auth:
        authPath !== undefined
          ? { mode: "file", path: authPath, ...(allowReadable ? { allowReadable: true as const } : {}) }
          : noAuth
            ? { mode: "none" }
            : { mode: "tls-or-oidc" },
      corsOrigins,
      logLevel: logLevel as LogLevel,
      waitMaxMs,
      ackTimeoutMs,
      heartbeatMs,
      reconcileIntervalMs,
      maxMessageBytes,
      maxWaitersPerCaller,
      maxSupervisorStreams,
      supervisorWriteTimeoutMs,
      dbPoolSize,
      replica,
      withoutOperations,
      withoutSharedRollouts,
      tls,
      oidc,
      sandboxPort,
    },
  };
}

/** `--tls-cert` and `--tls-key` come together; `--tls-client-ca` needs both. */
function tlsSettings(flags: ReturnType<typeof readFlags>): GatewayConfig["tls"] {
  const certFile = flags.single("tls-cert");
  const keyFile = flags.single("tls-key");
  const clientCaFile = flags.single("tls-client-ca");
  if (certFile !== undefined && keyFile === undefined) throw new UsageError("--tls-cert needs --tls-key (the certificate's private key)");
  if (keyFile !== undefined && certFile === undefined) throw new UsageError("--tls-key needs --tls-cert (the certificate of that key)");
  if (certFile === undefined || keyFile === undefined) {
    if (clientCaFile !== undefined) throw new UsageError("--tls-client-ca needs --tls-cert and --tls-key: client certificates are asked for over TLS");
    return undefined;
  }
  for (const [flag, file] of [["--tls-cert", certFile], ["--tls-key", keyFile], ["--tls-client-ca", clientCaFile]] as const) {
    if (file === "") throw new UsageError(`${flag} needs a file`);
  }
  return { certFile, keyFile, clientCaFile };
}

/** `--oidc-issuer` and `--oidc-audience` come together; the issuer is fetched, so https (http on loopback only). */
function oidcSettings(flags: ReturnType<typeof readFlags>): GatewayConfig["oidc"] {
  const issuer = flags.single("oidc-issuer");
  const audience = flags.single("oidc-audience");
  if (issuer === undefined && audience === undefined) return undefined;
  if (audience === undefined || audience === "") throw new UsageError("--oidc-issuer needs --oidc-audience (the aud its tokens carry for this gateway)");
  if (issuer === undefined) throw new UsageError("--oidc-audience needs --oidc-issuer");
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new UsageError(`--oidc-issuer ${JSON.stringify(issuer)}: not a URL`);
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "" || /[?#]$/.test(issuer)) {
    throw new UsageError(`--oidc-issuer ${JSON.stringify(issuer)}: expected an issuer URL without query, fragment or credentials`);
  }
  const problem = oidcUrlProblem(url);
  if (problem) throw new UsageError(`--oidc-issuer ${JSON.stringify(issuer)}: ${problem}`);
  return { issuer, audience };
}

const DEFAULT_LEASE_MS = 15_000;

/** The replica flags; they only make sense on PostgreSQL (a SQLite file serves one process). */
function replicaSettings(flags: ReturnType<typeof readFlags>, db: string): Pick<GatewayConfig, "replica" | "dbPoolSize"> {
  const id = flags.single("replica-id");
  const leaseText = flags.single("lease");
  const notifyText = flags.single("notify");
  const poolText = flags.single("db-pool");
  const postgres = /^postgres(ql)?:\/\//.test(db);
  if (!postgres) {
    const given = [["replica-id", id], ["lease", leaseText], ["notify", notifyText], ["db-pool", poolText]].find(([, v]) => v !== undefined);
    if (given) throw new UsageError(`--${given[0]} needs a postgres:// --db: a SQLite database serves one gateway process`);
    return { replica: undefined, dbPoolSize: undefined };
  }
  if (id !== undefined && !REPLICA_ID_PATTERN.test(id)) {
    throw new UsageError(`--replica-id ${JSON.stringify(id)}: use 1 to 100 letters, digits, '.', '_' or '-'`);
  }
  if (notifyText !== undefined && notifyText !== "on" && notifyText !== "off") {
    throw new UsageError(`--notify ${JSON.stringify(notifyText)}: expected on or off`);
  }
  return {
    replica: {
      id,
      leaseMs: leaseText === undefined ? DEFAULT_LEASE_MS : parseDuration("--lease", leaseText),
      notify: notifyText !== "off",
    },
    dbPoolSize: poolText === undefined ? undefined : parseCount("--db-pool", poolText),
  };
}

const VALUE_FLAGS = new Set([
  "db", "port", "host", "auth-file", "cors-origin", "log-level", "wait-max", "ack-timeout", "heartbeat", "reconcile",
  "max-message-size", "max-waiters", "max-supervisor-streams", "supervisor-write-timeout", "replica-id", "lease", "notify", "db-pool",
  "tls-cert", "tls-key", "tls-client-ca", "oidc-issuer", "oidc-audience", "sandbox-port",
]);
const BOOL_FLAGS = new Set(["no-auth", "without-operations", "without-shared-rollouts", "allow-readable-auth-file"]);
const REPEATABLE = new Set(["cors-origin"]);

/** How many characters `a` and `b` have in common from their start. */
function commonStart(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * The known flag a mistyped one was meant to be: of those of about its length (2 characters more
 * or less) that it matches but for its last 3 characters at most, the one matching longest (`auth-fle` → `auth-file`,
 * `db-poll` → `db-pool`, `tls-cret` → `tls-cert`). A typo at the end of a flag is the common one;
 * a different word (`max-wait` for `wait-max`) gets no suggestion rather than a wrong one.
 */
function nearFlag(name: string): string | undefined {
  const near = [...VALUE_FLAGS, ...BOOL_FLAGS].filter(
    (f) => Math.abs(f.length - name.length) <= 2 && commonStart(f, name) >= Math.max(3, Math.min(f.length, name.length) - 3),
  );
  // Of several (`tls-cret`: tls-cert and tls-key), the one that matches longest, if one does.
  const longest = Math.max(...near.map((f) => commonStart(f, name)));
  const best = near.filter((f) => commonStart(f, name) === longest);
  return best.length === 1 ? best[0] : undefined;
}

/** `--name value` and `--name=value` pairs, checked against the known flags. */
function readFlags(args: readonly string[]) {
  const values = new Map<string, string[]>();
  const used = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (BOOL_FLAGS.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      values.set(name, ["true"]);
      continue;
    }
    if (!VALUE_FLAGS.has(name)) {
      const near = nearFlag(name);
      throw new UsageError(`unknown option --${name}${near ? ` (did you mean --${near}?)` : ""}`);
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      value = args[++i];
      if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value`);
    }
    const list = values.get(name) ?? [];
    if (list.length > 0 && !REPEATABLE.has(name)) throw new UsageError(`--${name} given more than once`);
    list.push(value);
    values.set(name, list);
  }
  return {
    single(name: string): string | undefined {
      used.add(name);
      return values.get(name)?.[0];
    },
    all(name: string): string[] {
      used.add(name);
      return values.get(name) ?? [];
    },
    bool(name: string): boolean {
      used.add(name);
      return values.has(name);
    },
    rejectUnknown(): void {
      for (const name of values.keys()) if (!used.has(name)) throw new UsageError(`option --${name} is not used by serve`);
    },
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

function checkDbUrl(db: string): void {
  if (db === "sqlite::memory:") return;
  if (db.startsWith("sqlite:")) {
    if (db.length === "sqlite:".length) throw new UsageError("--db sqlite: needs a file path, e.g. sqlite:./gateway.db");
    return;
  }
  if (/^postgres(ql)?:\/\//.test(db)) {
    try {
      new URL(db);
    } catch {
      throw new UsageError("--db: not a valid postgres:// URL");
    }
    return;
  }
  // Never echo the value: a mistyped URL may contain a password.
  throw new UsageError("--db must be sqlite:PATH, sqlite::memory: or a postgres:// URL");
}

function parsePort(text: string, flag = "--port"): number {
  if (!/^\d+$/.test(text) || Number(text) > 65535) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected an integer from 0 to 65535`);
  return Number(text);
}

function checkOrigin(origin: string): string {
  if (origin === "*") return origin;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new UsageError(`--cors-origin ${JSON.stringify(origin)}: expected an origin such as https://dashboard.example.com`);
  }
  const bare = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !bare || /[?#]$/.test(origin)) {
    throw new UsageError(`--cors-origin ${JSON.stringify(origin)}: expected scheme://host[:port] with no path`);
  }
  return url.origin;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `3600s`, `1.5m`, `1h`, `250ms`; a bare number means seconds. Must be positive. */
export function parseDuration(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const ms = m ? Number(m[1]) * UNIT_MS[m[2] ?? "s"]! : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a positive duration such as 3600s, 30m or 1h`);
  return Math.round(ms);
}

const UNIT_BYTES: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 * 1024 };

/** `4MiB`, `512KiB`, `65536` (bytes); from 1 KiB up to the HTTP layer's 16 MiB read limit. */
export function parseSize(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(B|KiB|MiB)?$/.exec(text.trim());
  const bytes = m ? Math.floor(Number(m[1]) * UNIT_BYTES[m[2] ?? "B"]!) : NaN;
  if (!Number.isFinite(bytes) || bytes < 1024 || bytes > MAX_MESSAGE_BYTES_CEILING) {
    throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a size from 1KiB to 16MiB such as 4MiB, 512KiB or 65536`);
  }
  return bytes;
}

/** A positive integer count. */
function parseCount(flag: string, text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a positive integer`);
  }
  return Number(text);
}
