/**
 * Structured JSON logs, one object per line on stdout. Callers pass fields, never whole requests:
 * headers, bodies and credentials are not logged, and `redact` strips anything that looks like one.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Field names whose values are never written, whatever the caller passes. */
const SECRET_FIELD = /pass(word)?|secret|token|authorization|api[-_]?key|cookie|ha1|hash|master/i;

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  /** True when a line at `level` would be written (skip building expensive fields otherwise). */
  enabled(level: LogLevel): boolean;
}

/** Replaces secret-looking fields with "[redacted]" and errors with their name and message only. */
export function redact(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_FIELD.test(key)) out[key] = "[redacted]";
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message };
    else out[key] = value;
  }
  return out;
}

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go; stdout by default. Tests pass a collector. */
  write?: (line: string) => void;
  base?: LogFields;
}

export function createLogger(options: LoggerOptions): Logger {
  const threshold = RANK[options.level];
  const write = options.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const base = options.base ?? {};
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[level] < threshold) return;
    write(JSON.stringify({ ts: Date.now(), level, msg, ...redact({ ...base, ...fields }) }));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
    enabled: (level) => RANK[level] >= threshold,
  };
}
