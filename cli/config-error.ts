// The error of a configuration that cannot be used: a config file, a registry file, a flag or an
// environment variable whose value is wrong or missing. One line that names the file (or the flag
// or variable) and what is wrong; exit status 2, as a usage error. Its own module so that the
// readers (config.ts, registry*.ts) share it without importing each other.

/** A config file or value that cannot be used (exit status 2). */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * Where JSON.parse stopped, as ` (at position N)`, or "": never its message, which may quote the
 * text (`Unexpected token 's', "s3cret" is not valid JSON`), and the text may be a token.
 */
export function jsonErrorPosition(err: unknown): string {
  const m = /at position (\d+)/.exec(err instanceof Error ? err.message : "");
  return m ? ` (at position ${m[1]})` : "";
}
