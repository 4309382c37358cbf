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
