// The gateway's structured logger: pino JSON lines with secrets (tokens, authorization headers,
// setting values, anything named `secret`) redacted before they are written.

import pino from "pino";

/** The logger every gateway component takes. */
export type Logger = pino.Logger;

/** Levels accepted by `--log-level`, plus `silent`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Paths whose values never reach the log. Setting values and provider credentials can be secret,
 * so `value`/`values` are removed wholesale; so are bearer tokens wherever they appear.
 */
export const REDACTED_PATHS: readonly string[] = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
  "token",
  "*.token",
  "value",
  "values",
  "*.value",
  "*.values",
  "secret",
  "*.secret",
];

export interface LoggerOptions {
  /** Minimum level. Default `info`. */
  readonly level?: LogLevel;
  /** Where JSON lines go. Default stdout. Tests pass a stream to capture them. */
  readonly destination?: pino.DestinationStream;
  /** The `name` field of every line. Default `openshell-gateway`. */
  readonly name?: string;
}

/** A pino JSON logger with the gateway's redaction rules. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: options.name ?? "openshell-gateway",
      level: options.level ?? "info",
      redact: { paths: [...REDACTED_PATHS], censor: "[redacted]" },
      // Plain `level: "info"` instead of numbers: easier to grep, and what log shippers expect.
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination(1),
  );
}

type LineFn = (obj: object, msg: string) => void;

/** The levels a lazily bound logger writes at (what supervisor sessions use). */
export interface BoundLogger {
  readonly error: LineFn;
  readonly warn: LineFn;
  readonly info: LineFn;
  readonly debug: LineFn;
}

/**
 * `logger.child(bindings)`, made on the first line `logger`'s level lets through. A child's
 * bindings go through redaction when it is made, which costs more than most sessions' lines:
 * with thousands of sessions opening at once at level warn, none of them writes a line.
 */
export function lazyChild(logger: Logger, bindings: Record<string, unknown>): BoundLogger {
  let child: Logger | undefined;
  const at =
    (level: "error" | "warn" | "info" | "debug"): LineFn =>
    (obj, msg) => {
      if (!logger.isLevelEnabled(level)) return;
      (child ??= logger.child(bindings))[level](obj, msg);
    };
  return { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") };
}
