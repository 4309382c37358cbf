// Structured logging for the supervisor: one JSON object per line on stderr (or a test sink),
// with a defensive redaction pass so secret-bearing fields never reach the output.

export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Field names whose values are replaced by "[REDACTED]" wherever they appear (case-insensitive). */
const SECRET_KEYS = /^(value|values|token|tokens|authorization|secret|password|credential|credentials|dynamiccredentials|files|env)$/i;

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Whether a line at `level` would be written: lets a hot path skip building fields nobody reads. */
  enabled(level: LogLevel): boolean;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** Receives each finished line (without the newline). Default: `process.stderr`. */
  readonly sink?: (line: string) => void;
  readonly base?: LogFields;
}

export function isLogLevel(s: string): s is LogLevel {
  return Object.hasOwn(LEVELS, s);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const min = LEVELS[options.level ?? "info"];
  const sink = options.sink ?? ((line: string) => process.stderr.write(`${line}\n`));
  const make = (base: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
      if (LEVELS[level] < min) return;
      const record = { time: new Date().toISOString(), level, msg, ...base, ...fields };
      let line: string;
      try {
        line = JSON.stringify(redact(record, 0));
      } catch {
        line = JSON.stringify({ time: record.time, level, msg, logError: "unserializable fields" });
      }
      sink(line);
    };
    return {
      debug: (m, f) => emit("debug", m, f),
      info: (m, f) => emit("info", m, f),
      warn: (m, f) => emit("warn", m, f),
      error: (m, f) => emit("error", m, f),
      enabled: (level) => LEVELS[level] >= min,
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make(options.base ?? {});
}

/** A logger that discards everything, without building the lines first. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  enabled: () => false,
  child: () => silentLogger,
};

/** Copies `v` for logging: secret-named keys are masked, errors become `{name, message, code}`, bigints strings. */
export function redact(v: unknown, depth = 0): unknown {
  if (depth > 8) return "[…]";
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Error) {
    const code = (v as { code?: unknown }).code;
    return { name: v.name, message: v.message, ...(code !== undefined ? { code: redact(code, depth + 1) } : {}) };
  }
  if (Array.isArray(v)) return v.map((x) => redact(x, depth + 1));
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = SECRET_KEYS.test(k) ? "[REDACTED]" : redact(x, depth + 1);
    return out;
  }
  return v;
}
