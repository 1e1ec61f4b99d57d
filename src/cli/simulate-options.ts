// `kured-ts simulate`'s own option values: each parser turns one flag's text into its value or
// throws commander's InvalidArgumentError, which names the flag (exit status 2).
import { InvalidArgumentError } from 'commander';
import type { PdbSpec } from '../sim/cluster-spec.js';
import { duration as durationAtLeast, integer } from '../config/values.js';
import { errorText } from '../text/error-text.js';

/** --timeline: a path ending in .svg or .html. */
export function timelinePath(value: string): string {
  if (!/\.(svg|html)$/i.test(value))
    throw new InvalidArgumentError('the file name must end in .svg or .html');
  return value;
}

/** One of the flag table's parsers (config/values.ts) as a commander argument parser. */
function asOption<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (err) {
      throw new InvalidArgumentError(errorText(err));
    }
  };
}

/** An integer of at least `min`, as the agent's flags read one. */
export const integerOption = (min = 1): ((value: string) => number) => asOption(integer(min));
/** A duration (not negative), as the agent's flags read one. */
export const duration = asOption(durationAtLeast('non-negative'));

/** --blocking-churn RATE,DURATION: jobs per hour (a positive number) and how long each runs. */
export function blockingChurn(value: string): { perHour: number; durationMs: number } {
  const parts = value.split(',');
  const perHour = Number(parts[0]);
  if (parts.length !== 2 || !Number.isFinite(perHour) || perHour <= 0)
    throw new InvalidArgumentError(
      'expected RATE,DURATION: jobs per hour (> 0) and how long each runs (e.g. 30,20m)',
    );
  return { perHour, durationMs: duration(parts[1] ?? '') };
}

/** --unhealthy-nodes N,DURATION. */
export function unhealthyNodes(value: string): { nodes: number; durationMs: number } {
  const [count = '', span = ''] = value.split(',');
  if (value.split(',').length !== 2) throw new InvalidArgumentError('expected N,DURATION (e.g. 2,30m)');
  return { nodes: integerOption(1)(count), durationMs: duration(span) };
}

/** The bare --coordinator-thief: a minute into the run, for half an hour. */
export const THIEF_PRESET = '1m,30m';

/**
 * --coordinator-thief FROM,FOR[,EVERY]: when it starts (from the start of the run), how long it acts
 * (> 0) and how often it writes (> 0; default 10s).
 */
export function coordinatorThief(value: string): { fromMs: number; forMs: number; everyMs?: number } {
  const parts = value.split(',');
  if (parts.length !== 2 && parts.length !== 3)
    throw new InvalidArgumentError(
      'expected FROM,FOR[,EVERY]: when it starts, how long it acts and how often it writes (e.g. 5m,30m or 1m,2m,1s)',
    );
  const forMs = duration(parts[1] ?? '');
  if (forMs <= 0) throw new InvalidArgumentError('FOR must be longer than 0s (e.g. 5m,30m)');
  const fromMs = duration(parts[0] ?? '');
  if (parts.length === 2) return { fromMs, forMs };
  const everyMs = duration(parts[2] ?? '');
  if (everyMs <= 0) throw new InvalidArgumentError('EVERY must be longer than 0s (e.g. 1m,2m,1s)');
  return { fromMs, forMs, everyMs };
}

/** --other-operator KIND:N: karpenter or autoscaler, and how many nodes it takes out (at least 1). */
export function otherOperator(value: string): { kind: 'karpenter' | 'autoscaler'; nodes: number } {
  const m = /^(karpenter|autoscaler):([1-9][0-9]*)$/.exec(value.trim());
  if (m === null)
    throw new InvalidArgumentError(
      'expected KIND:N: karpenter or autoscaler, and how many nodes (e.g. karpenter:3)',
    );
  return { kind: m[1] === 'karpenter' ? 'karpenter' : 'autoscaler', nodes: Number(m[2]) };
}

/** The other actors of the world a run's flags ask for: a thief of the coordinator's token, another operator. */
export function operatorsOf(flags: {
  coordinatorThief?: { fromMs: number; forMs: number; everyMs?: number };
  otherOperator?: { kind: 'karpenter' | 'autoscaler'; nodes: number };
}): Pick<typeof flags, 'coordinatorThief' | 'otherOperator'> {
  return {
    ...(flags.coordinatorThief === undefined ? {} : { coordinatorThief: flags.coordinatorThief }),
    ...(flags.otherOperator === undefined ? {} : { otherOperator: flags.otherOperator }),
  };
}

/** A share: `N%` (0–100) or a number from 0 to 1. */
export function share(value: string): number {
  const percent = value.endsWith('%');
  const n = Number(percent ? value.slice(0, -1) : value);
  const fraction = percent ? n / 100 : n;
  if (value.trim() === '' || !Number.isFinite(fraction) || fraction < 0 || fraction > 1)
    throw new InvalidArgumentError('expected a share: N% (0-100) or a number from 0 to 1');
  return fraction;
}

export function needsReboot(value: string): 'all' | number {
  return value === 'all' ? 'all' : integerOption(0)(value);
}

/** `none`, `max-unavailable=N`, `min-available=N` (N an integer or a percentage). */
export function parsePdb(value: string): PdbSpec {
  if (value === 'none') return { kind: 'none' };
  const m = /^(max-unavailable|min-available)=(\d+%?)$/.exec(value);
  if (!m)
    throw new InvalidArgumentError(
      'expected none, max-unavailable=N or min-available=N (N may be a percentage)',
    );
  const raw = m[2] ?? '';
  const amount = raw.endsWith('%') ? raw : Number(raw);
  return { kind: m[1] === 'max-unavailable' ? 'maxUnavailable' : 'minAvailable', value: amount };
}
