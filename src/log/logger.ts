// The logger: one line per decision, stable message texts, data in fields.
import winston from 'winston';

export type LogFields = Record<string, unknown>;

/** What every module logs through; message texts are part of the contract (users grep them). */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Log format: `text` (kured-like key=value lines) or `json` (one object per line). */
export type LogFormat = 'text' | 'json';

/** A winston logger writing to stderr. */
export function createLogger(format: LogFormat, level = 'info'): Logger {
  const text = winston.format.printf((info) => {
    const { level: lvl, message, timestamp, ...rest } = info;
    const fields = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
      .join(' ');
    return `${String(timestamp)} ${lvl} ${String(message)}${fields ? ' ' + fields : ''}`;
  });
  const w = winston.createLogger({
    level,
    format: winston.format.combine(
      winston.format.timestamp(),
      format === 'json' ? winston.format.json() : text,
    ),
    // winston's Console is declared as a class its own base type does not recognise.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
    transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
  });
  return {
    debug: (m, f) => w.debug(m, f),
    info: (m, f) => w.info(m, f),
    warn: (m, f) => w.warn(m, f),
    error: (m, f) => w.error(m, f),
  };
}

/** One recorded log line (for MemoryLogger). */
export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: LogFields;
}

/** Keeps lines in memory: for tests and the simulator, which must not write to the terminal. */
export class MemoryLogger implements Logger {
  readonly entries: LogEntry[] = [];
  debug(message: string, fields: LogFields = {}): void {
    this.entries.push({ level: 'debug', message, fields });
  }
  info(message: string, fields: LogFields = {}): void {
    this.entries.push({ level: 'info', message, fields });
  }
  warn(message: string, fields: LogFields = {}): void {
    this.entries.push({ level: 'warn', message, fields });
  }
  error(message: string, fields: LogFields = {}): void {
    this.entries.push({ level: 'error', message, fields });
  }
}

/** A logger that drops everything: for callers that must pass one but have no use for its lines. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
