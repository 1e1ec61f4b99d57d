// The simulated agents' logger.
import type { Logger } from '../log/logger.js';

/** Keeps warnings and errors (capped) and drops the rest: 200 agents log a lot. */
export class SimLogger implements Logger {
  constructor(
    private readonly node: string,
    private readonly sink: string[],
  ) {}
  debug(): void {
    // dropped
  }
  info(): void {
    // dropped
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.keep('warn', message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.keep('error', message, fields);
  }
  private keep(level: string, message: string, fields?: Record<string, unknown>): void {
    if (this.sink.length < 200)
      this.sink.push(`${this.node} ${level} ${message} ${JSON.stringify(fields ?? {})}`);
  }
}
