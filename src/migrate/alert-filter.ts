// The alert filter migrate-values proposes for a kured that asked Prometheus: alerts that fire by
// design would hold every node. kube-prometheus-stack's Watchdog always fires (the alerting
// pipeline's heartbeat) and InfoInhibitor fires while any info alert does; the kured-ts chart's own
// KuredTs* alerts fire because reboots wait or failed, and holding the fleet on them keeps them
// firing (the agents' quarantine and the wave's halt already act on those failures).
// docs/integrations.md shows the filter against a real Prometheus.

import { boolean } from '../config/flags.js';
import { isObject, type Json } from './kured-chart-rules.js';

/** Alert names that fire by design in kube-prometheus-stack. */
const ALWAYS_FIRING: readonly string[] = ['Watchdog', 'InfoInhibitor'];
/** What the kured-ts chart's PrometheusRule names its alerts (KuredTsRebootRequiredTooLong, …). */
const OUR_ALERTS = 'KuredTs.*';
/** A name of ours to test a filter with. */
const OUR_EXAMPLE = 'KuredTsRebootRequiredTooLong';

/** The recommended --alert-filter-regexp. */
export const RECOMMENDED_ALERT_FILTER = `^(${[...ALWAYS_FIRING, OUR_ALERTS].join('|')})$`;

export interface AlertFilterProposal {
  /** The regexp to set (configuration.alertFilterRegexp). */
  regexp: string;
  /** The alert names the current filter lets hold the fleet. */
  missed: string[];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** The names of ALWAYS_FIRING and ours that `filter` (kured's semantics: a match is ignored) lets count. */
function missedBy(filter: RegExp | undefined): string[] {
  return [...ALWAYS_FIRING, OUR_EXAMPLE].filter((name) => filter === undefined || !filter.test(name));
}

function compiled(source: string): RegExp | undefined {
  try {
    return new RegExp(source);
  } catch {
    return undefined; // the flag's own parser says so in another note
  }
}

/** True as the chart's boolean, or as kured parsed its flags (Go's strconv.ParseBool). */
function isTrue(value: unknown): boolean {
  if (typeof value !== 'string') return value === true;
  try {
    return boolean(value);
  } catch {
    return false; // not a boolean: the flag's own parser says so in another note
  }
}

/** The flags of the Prometheus blocker, as extraArgs and KURED_* variables name them. */
const FLAGS = ['prometheus-url', 'alert-filter-regexp', 'alert-filter-match-only'];
const VARIABLES = /^KURED_(PROMETHEUS_URL|ALERT_FILTER_)/;

/** Does `extraArgs` or `extraEnv` set one of the blocker's flags (they win over `configuration`)? */
function setOutsideConfiguration(values: Json): boolean {
  const args = isObject(values.extraArgs) ? values.extraArgs : {};
  const env = Array.isArray(values.extraEnv) ? values.extraEnv : [];
  return (
    FLAGS.some((flag) => Object.hasOwn(args, flag)) ||
    env.some((e) => isObject(e) && typeof e.name === 'string' && VARIABLES.test(e.name))
  );
}

/**
 * The filter to propose for kured-ts chart values, or undefined: no Prometheus, a filter that lists
 * the alerts that count (--alert-filter-match-only), one that already ignores the alerts that fire by
 * design, or the blocker's flags set in extraArgs or a KURED_* variable (which win over
 * `configuration`, so a proposal there would not hold: the user's own to adjust). An existing filter is
 * kept and extended, not replaced.
 */
export function proposeAlertFilter(values: Json): AlertFilterProposal | undefined {
  if (setOutsideConfiguration(values)) return undefined;
  const configuration = isObject(values.configuration) ? values.configuration : {};
  if (text(configuration.prometheusUrl) === '') return undefined;
  if (isTrue(configuration.alertFilterMatchOnly)) return undefined;
  const current = text(configuration.alertFilterRegexp);
  const filter = current === '' ? undefined : compiled(current);
  if (current !== '' && filter === undefined) return undefined; // refused by the flag's parser, noted
  const missed = missedBy(filter);
  if (missed.length === 0) return undefined;
  const regexp = current === '' ? RECOMMENDED_ALERT_FILTER : `(?:${current})|${RECOMMENDED_ALERT_FILTER}`;
  return { regexp, missed };
}
