// `-o/--output` as kubectl has it: the formats a command accepts, checked once, and the machine
// formats (JSON, YAML) printed the same way by every command.
import { dump } from 'js-yaml';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'text';

/** A value of -o that the command does not accept; the message names the flag and the choices. */
export class OutputFormatError extends Error {
  override readonly name = 'OutputFormatError';
}

/** `value` as one of `allowed`, or OutputFormatError naming the flag, the value and the choices. */
export function parseOutput<T extends OutputFormat>(value: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value);
  if (found !== undefined) return found;
  const choices = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}` : allowed[0];
  throw new OutputFormatError(`invalid value for -o/--output: ${value} (${choices})`);
}

/** JSON (indented, as kubectl) or YAML (block style, keys in their order). */
export function formatObject(value: unknown, format: 'json' | 'yaml'): string {
  if (format === 'json') return JSON.stringify(value, null, 2);
  return dump(value, { noRefs: true, lineWidth: -1 }).trimEnd();
}

/** One object per line (JSON) or per YAML document, for streams such as `status --watch`. */
export function formatStreamed(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? JSON.stringify(value) : `---\n${formatObject(value, 'yaml')}`;
}
