// Every flag of kured-ts in one declarative table: name, env var, default, meaning, parser.
// Commander options, the configuration table of docs/configuration.md and the Helm chart's values are all
// generated from FLAGS, so they cannot drift apart. parse.ts interprets it (pure).
import { parseMatcherSet } from '../silence/matchers.js';
import type { Budget } from './budget.js';
import {
  DEFAULT_FAILURE_MESSAGES,
  DEFAULT_MESSAGE_DRAIN,
  DEFAULT_MESSAGE_REBOOT,
  DEFAULT_MESSAGE_UNCORDON,
  InvalidValueError,
  type Config,
} from './config.js';
import {
  checkObjectName,
  hookTemplateName,
  checkQualifiedName,
  checkUrl,
  duration,
  integer,
  parseLabels,
  share,
  splitCommand,
  unhealthyLimit,
} from './values.js';
import { parseNotifyUrl } from '../notify/index.js';
import { FAILURE_EVENTS, NOTIFY_EVENTS } from '../notify/notifier.js';
import { groupOrder, healthCheck, nodeCheck, notifyEvents, waveGrowth } from './wave-values.js';
import { redactUrl, slackHookUrlToNotifyUrl, stripQuotes } from '../notify/notify-url.js';
import { parseLabelSelector, type Selector } from '../selector/label-selector.js';
import { parseBlackout, type Blackout } from '../window/blackout.js';
import { checkCronExpression } from '../window/cron-window.js';
import { parseDays } from '../window/days.js';
import { parseTimeOfDay } from '../window/time-of-day.js';
import { checkTimeZone } from '../window/zone.js';

/** What the raw values are being parsed into: the config plus inputs that only combine later. */
export interface Draft {
  config: Config;
  /** --slack-hook-url already converted to its notify URL (`slack://T/B/X`); used when --notify-url is unset. */
  slackHookUrl: string;
}

/** The JSON type of a flag's value (for the Helm chart's values.schema.json). */
type FlagType = 'string' | 'boolean' | 'integer' | 'array';

/** One flag. */
export interface FlagSpec {
  /** Long name without dashes: `lock-ttl`. */
  readonly name: string;
  /** `KURED_` + name upper-cased with `-` → `_`: `KURED_LOCK_TTL`. */
  readonly env: string;
  /** Placeholder shown in help: `<duration>`; `[bool]` for booleans (`--x` alone means true). */
  readonly valueName: string;
  /** The default as a raw value: it is parsed like user input, so help and behaviour agree. */
  readonly default: string;
  /** The default as shown in help and docs when the raw value would mislead (e.g. `(required)`). */
  readonly defaultText?: string;
  /** One line of help. */
  readonly description: string;
  /** May be given several times; all values are used (a later source replaces them all). */
  readonly repeatable: boolean;
  readonly type: FlagType;
  /** Allowed values of an enum flag. */
  readonly choices?: readonly string[];
  /** `kured` = kured's flag (same name and default), `new` = kured-ts only. */
  readonly origin: 'kured' | 'new';
  /** Part of the maintenance window (also accepted by `kured-ts window`). */
  readonly window?: boolean;
  /** Set for flags kept only so that kured command lines keep working. */
  readonly deprecated?: string;
  /** Parses the raw values (never empty) into the draft; throws an Error with the reason. */
  readonly apply: (values: readonly string[], draft: Draft) => void;
}

const last = (values: readonly string[]): string => values[values.length - 1] ?? '';

type Apply = FlagSpec['apply'];

/** Sets one Config field from the last raw value. */
function set<K extends keyof Config>(key: K, parse: (value: string) => Config[K]): Apply {
  return (values, draft) => {
    draft.config[key] = parse(last(values));
  };
}

/**
 * Sets a budget flag (--concurrency, --group-concurrency): N (at least `min`) or N%; 0 of a flag
 * whose `min` is 0 is no limit (undefined).
 */
function setShare(key: 'concurrency' | 'groupConcurrency', min: number): Apply {
  return (values, draft) => {
    const value: Budget = share(min)(last(values));
    if (key === 'concurrency') draft.config.concurrency = value;
    else draft.config.groupConcurrency = 'count' in value && value.count === 0 ? undefined : value;
  };
}

/** Sets one WindowConfig field. */
function setWindow<K extends keyof Config['window']>(
  key: K,
  parse: (value: string) => Config['window'][K],
): Apply {
  return (values, draft) => {
    draft.config.window[key] = parse(last(values));
  };
}

/** Go's strconv.ParseBool, which kured's flags and env vars use; throws on anything else. */
export function boolean(value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new Error('expected true or false');
}

function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    const found = choices.find((c) => c === value);
    if (found === undefined) throw new Error(`must be one of: ${choices.join(', ')}`);
    return found;
  };
}

function text(value: string): string {
  return value;
}

function nonEmpty(value: string): string {
  if (value.trim() === '') throw new Error('must not be empty');
  return value;
}

function selector(value: string): Selector {
  try {
    return parseLabelSelector(value);
  } catch (err) {
    throw new Error(`bad label selector: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Repeats of --blocking-pod-selector are ORed, commas inside one are ANDed; `;` or a newline also
 * separates selectors, so KURED_BLOCKING_POD_SELECTOR can hold several. Empty entries are ignored:
 * an empty selector would match (and block on) every pod of the node.
 */
function blockingSelectors(values: readonly string[]): Selector[] {
  return eachItem(values, parseLabelSelector, 'bad label selector: ');
}

function regexp(value: string): RegExp | undefined {
  if (value === '') return undefined;
  try {
    return new RegExp(value);
  } catch (err) {
    throw new Error(`bad regular expression: ${(err as Error).message}`, { cause: err });
  }
}

function optionalUrl(schemes?: readonly string[]): (value: string) => string {
  return (value) => {
    const url = stripQuotes(value.trim());
    return url === '' ? '' : checkUrl(url, schemes);
  };
}

/**
 * A --notify-url the notifier can send to ('' = none), checked with the notifier's own parser so
 * that an unusable URL stops the start, not the first reboot. The error shows the URL redacted.
 */
function notifyUrl(value: string): string {
  const url = stripQuotes(value.trim());
  if (url === '') return '';
  try {
    checkUrl(url);
    parseNotifyUrl(url);
  } catch (err) {
    // parseNotifyUrl's message repeats the (redacted) URL; its cause says what is wrong.
    const cause = (err as Error).cause;
    const reason = cause instanceof Error ? cause.message : (err as Error).message;
    throw new InvalidValueError(redactUrl(url), reason, { cause: err });
  }
  return url;
}

/** The notify URL kured derives from --slack-hook-url ('' = unset); the error shows the URL redacted. */
function slackHookNotifyUrl(value: string): string {
  const hook = stripQuotes(value.trim());
  if (hook === '') return '';
  try {
    return slackHookUrlToNotifyUrl(hook);
  } catch (err) {
    throw new InvalidValueError(redactUrl(hook), 'expected https://hooks.slack.com/services/<T>/<B>/<X>', {
      cause: err,
    });
  }
}

function optional(check: (value: string) => string): (value: string) => string {
  return (value) => (value === '' ? '' : check(value));
}

/** Qualified names (condition types, annotation keys), comma-separated or repeated; duplicates dropped. */
function qualifiedNames(values: readonly string[]): string[] {
  const types = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return [...new Set(types.map(checkQualifiedName))];
}

/** A taint key (qualified name), or a prefix of keys ending in '/' (its part before checked as a DNS subdomain). */
function taintKeyOrPrefix(value: string): string {
  const v = value.trim();
  if (v.endsWith('/')) {
    checkQualifiedName(`${v}x`);
    return v;
  }
  return checkQualifiedName(v);
}

function timeZone(value: string): string {
  return checkTimeZone(value.trim());
}

/**
 * Repeats of --reboot-schedule each open the window (any matching one); `;` or a newline also
 * separates expressions (cron fields contain commas), so KURED_REBOOT_SCHEDULE can hold several.
 */
function schedules(values: readonly string[]): string[] {
  return eachItem(values, checkCronExpression);
}

/** Repeats, `;` or newlines: the --blackout ranges. */
function blackouts(values: readonly string[]): Blackout[] {
  return eachItem(values, parseBlackout);
}

/** Every item of a repeatable flag (splitList) parsed; the item that fails is named in the error. */
function eachItem<T>(values: readonly string[], parse: (item: string) => T, prefix = ''): T[] {
  return splitList(values).map((v) => {
    try {
      return parse(v);
    } catch (err) {
      throw new InvalidValueError(v, `${prefix}${(err as Error).message}`);
    }
  });
}

/** Values of a repeatable flag, each possibly `;`- or newline-separated; empty entries dropped. */
function splitList(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(/[;\n]/))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** --max-failures: '' (no budget), N (at least 1) or N% (1-100) of the nodes the DaemonSet runs on. */
function failureBudget(value: string): Budget | undefined {
  if (value.trim() === '') return undefined;
  return share(1)(value);
}

/** A label key (a qualified name with an optional DNS prefix), or '' for none. */
function labelKey(value: string): string {
  return value.trim() === '' ? '' : checkQualifiedName(value.trim());
}

type Spec = Omit<FlagSpec, 'env' | 'valueName' | 'repeatable' | 'origin'> &
  Partial<Pick<FlagSpec, 'valueName' | 'repeatable'>>;

function kured(spec: Spec): FlagSpec {
  return build(spec, 'kured');
}

function added(spec: Spec): FlagSpec {
  return build(spec, 'new');
}

function build(spec: Spec, origin: FlagSpec['origin']): FlagSpec {
  const placeholder: Record<FlagType, string> = {
    string: '<string>',
    boolean: '[bool]',
    integer: '<n>',
    array: '<value>',
  };
  return {
    ...spec,
    origin,
    env: envName(spec.name),
    valueName: spec.valueName ?? placeholder[spec.type],
    repeatable: spec.repeatable ?? false,
  };
}

/** `lock-ttl` → `KURED_LOCK_TTL`. */
export function envName(flag: string): string {
  return `KURED_${flag.toUpperCase().replace(/-/g, '_')}`;
}

const DURATION = '<duration>';

/** Every flag, in help order: kured's first (same names and defaults), then kured-ts's own. */
export const FLAGS: readonly FlagSpec[] = [
  kured({
    name: 'node-id',
    type: 'string',
    valueName: '<name>',
    default: '',
    defaultText: 'required (the chart sets KURED_NODE_ID from spec.nodeName)',
    description: 'name of the node this agent runs on',
    apply: set('nodeId', text),
  }),
  kured({
    name: 'period',
    type: 'string',
    valueName: DURATION,
    default: '1h',
    description:
      'how often the agent judges its node again when nothing wakes it (each tick jittered ±50%); the reboot sentinel itself is read every minute and wakes it at once',
    apply: set('periodMs', duration('positive')),
  }),
  kured({
    name: 'reboot-sentinel',
    type: 'string',
    valueName: '<path>',
    default: '/var/run/reboot-required',
    description: 'file whose existence means a reboot is required',
    apply: set('rebootSentinel', nonEmpty),
  }),
  kured({
    name: 'reboot-sentinel-command',
    type: 'string',
    valueName: '<command>',
    default: '',
    defaultText: '""',
    description:
      'command (split like a shell) used instead of the sentinel file: exit 0 = reboot, 1 = no reboot, other = error (not a reboot)',
    apply: set('rebootSentinelCommand', splitCommand),
  }),
  kured({
    name: 'reboot-method',
    type: 'string',
    valueName: '<method>',
    choices: ['command', 'signal'],
    default: 'command',
    description: 'how to reboot: command or signal',
    apply: set('rebootMethod', oneOf(['command', 'signal'] as const)),
  }),
  kured({
    name: 'reboot-command',
    type: 'string',
    valueName: '<command>',
    default: '/bin/systemctl reboot',
    description: 'command (split like a shell) run to reboot, for method command',
    apply: set('rebootCommand', splitCommand),
  }),
  kured({
    name: 'reboot-signal',
    type: 'integer',
    valueName: '<signal>',
    default: '39',
    defaultText: '39 (SIGRTMIN+5)',
    description: 'signal number sent to PID 1, for method signal',
    apply: set('rebootSignal', integer(1, 64)),
  }),
  kured({
    name: 'reboot-delay',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description: 'wait after the drain before rebooting (then re-verify cordon and lock)',
    apply: set('rebootDelayMs', duration('non-negative')),
  }),
  kured({
    name: 'drain-delay',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description: 'wait after taking the lock before draining',
    apply: set('drainDelayMs', duration('non-negative')),
  }),
  kured({
    name: 'drain-timeout',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description: 'give up the drain after this long (0 = no timeout)',
    apply: set('drainTimeoutMs', duration('non-negative')),
  }),
  kured({
    name: 'drain-grace-period',
    type: 'integer',
    valueName: '<seconds>',
    default: '-1',
    description: "seconds each pod gets to terminate (-1 = the pod's own grace period)",
    apply: set('drainGracePeriodSeconds', integer(-1)),
  }),
  kured({
    name: 'drain-pod-selector',
    type: 'string',
    valueName: '<selector>',
    default: '',
    defaultText: '"" (all pods)',
    description: 'only drain pods whose labels match this selector',
    apply: set('drainPodSelector', selector),
  }),
  kured({
    name: 'skip-wait-for-delete-timeout',
    type: 'integer',
    valueName: '<seconds>',
    default: '0',
    description: 'do not wait for pods deleting for longer than this while draining (0 = always wait)',
    apply: set('skipWaitForDeleteTimeoutSeconds', integer(0)),
  }),
  kured({
    name: 'force-reboot',
    type: 'boolean',
    default: 'false',
    description: 'reboot even if the drain fails or times out',
    apply: set('forceReboot', boolean),
  }),
  kured({
    name: 'ds-name',
    type: 'string',
    valueName: '<name>',
    default: 'kured',
    description: 'DaemonSet carrying the lock',
    apply: set('dsName', (v) => checkObjectName(v, 'subdomain')),
  }),
  kured({
    name: 'ds-namespace',
    type: 'string',
    valueName: '<namespace>',
    default: 'kube-system',
    description: 'namespace of that DaemonSet',
    apply: set('dsNamespace', (v) => checkObjectName(v, 'label')),
  }),
  kured({
    name: 'lock-annotation',
    type: 'string',
    valueName: '<key>',
    default: 'weave.works/kured-node-lock',
    description: 'annotation on the DaemonSet holding the lock',
    apply: set('lockAnnotation', checkQualifiedName),
  }),
  kured({
    name: 'lock-ttl',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description: 'lock expiry (0 = never)',
    apply: set('lockTtlMs', duration('non-negative')),
  }),
  kured({
    name: 'lock-release-delay',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description: 'wait before releasing the lock after a reboot',
    apply: set('lockReleaseDelayMs', duration('non-negative')),
  }),
  kured({
    name: 'concurrency',
    type: 'integer',
    valueName: '<n|n%>',
    default: '1',
    description:
      'how many nodes may reboot at once: N, or N% of the nodes the DaemonSet runs on (rounded down, at least 1)',
    apply: setShare('concurrency', 1),
  }),
  kured({
    name: 'prefer-no-schedule-taint',
    type: 'string',
    valueName: '<key>',
    default: '',
    defaultText: '"" (no taint; the chart sets weave.works/kured-node-reboot)',
    description: 'PreferNoSchedule taint key applied while a reboot is pending',
    apply: set('preferNoScheduleTaint', optional(checkQualifiedName)),
  }),
  kured({
    name: 'blocking-pod-selector',
    type: 'array',
    valueName: '<selector>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      'pods on this node matching it block reboots (repeatable: repeats OR, commas AND; ";" also separates)',
    apply: (values, draft) => {
      draft.config.blockingPodSelectors = blockingSelectors(values);
    },
  }),
  kured({
    name: 'prometheus-url',
    type: 'string',
    valueName: '<url>',
    default: '',
    defaultText: '"" (no alert blocker)',
    description: 'Prometheus whose active alerts block reboots',
    apply: set('prometheusUrl', optionalUrl(['http', 'https'])),
  }),
  added({
    name: 'alertmanager-url',
    type: 'string',
    valueName: '<url>',
    default: '',
    defaultText: '"" (no silences)',
    description:
      "Alertmanager in which a node's reboot is silenced (--silence-matcher), and whose silences for other nodes the alert blocker does not count",
    apply: set('alertmanagerUrl', optionalUrl(['http', 'https'])),
  }),
  added({
    name: 'silence-matcher',
    type: 'array',
    valueName: '<matchers>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      'one silence per value, Alertmanager matchers such as {node="{{.node}}"}; {{.node}} is the node\'s name (repeatable)',
    apply: (values, draft) => {
      draft.config.silenceMatchers = eachItem(values, parseMatcherSet);
    },
  }),
  added({
    name: 'silence-duration',
    type: 'string',
    valueName: DURATION,
    default: '15m',
    description: "lease of a node's silences, renewed at half of it while its cycle runs",
    apply: set('silenceDurationMs', duration('positive')),
  }),
  added({
    name: 'silence-tail',
    type: 'string',
    valueName: DURATION,
    default: '5m',
    description: "how long a node's silences last after its uncordon",
    apply: set('silenceTailMs', duration('non-negative')),
  }),
  added({
    name: 'before-reboot-hook',
    type: 'string',
    valueName: '<cronjob>',
    default: '',
    defaultText: '"" (none)',
    description:
      'suspended CronJob (in --hook-namespace) whose Job runs for the node after its drain, before the reboot; the chart renders hooks.beforeReboot as it',
    apply: set('beforeRebootHook', (v) => (v === '' ? v : hookTemplateName(v))),
  }),
  added({
    name: 'after-reboot-hook',
    type: 'string',
    valueName: '<cronjob>',
    default: '',
    defaultText: '"" (none)',
    description:
      'suspended CronJob (in --hook-namespace) whose Job runs for the node once it is Ready after the reboot, before the uncordon; the chart renders hooks.afterReboot as it',
    apply: set('afterRebootHook', (v) => (v === '' ? v : hookTemplateName(v))),
  }),
  added({
    name: 'hook-namespace',
    type: 'string',
    valueName: '<namespace>',
    default: '',
    defaultText: '"" (--ds-namespace)',
    description: "namespace of the hooks' templates and Jobs",
    apply: set('hookNamespace', (v) => (v === '' ? v : checkObjectName(v, 'label'))),
  }),
  added({
    name: 'hook-timeout',
    type: 'string',
    valueName: DURATION,
    default: '10m',
    description:
      "how long a hook's Job may take: a before-reboot hook past it ends the cycle as a failed drain, an after-reboot hook leaves the node cordoned and quarantined",
    apply: set('hookTimeoutMs', duration('positive')),
  }),
  added({
    name: 'blocking-query',
    type: 'array',
    valueName: '<promql>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      'PromQL evaluated on --prometheus-url: blocks reboots while it returns any series or a non-zero scalar',
    apply: (values, draft) => {
      draft.config.blockingQueries = values.map((v) => v.trim()).filter((v) => v !== '');
    },
  }),
  kured({
    name: 'alert-filter-regexp',
    type: 'string',
    valueName: '<regexp>',
    default: '',
    defaultText: '""',
    description: 'alert names to ignore (with --alert-filter-match-only: the only ones that block)',
    apply: set('alertFilterRegexp', regexp),
  }),
  kured({
    name: 'alert-filter-match-only',
    type: 'boolean',
    default: 'false',
    description: 'only alerts matching --alert-filter-regexp block',
    apply: set('alertFilterMatchOnly', boolean),
  }),
  kured({
    name: 'alert-firing-only',
    type: 'boolean',
    default: 'false',
    description: 'only firing alerts block (pending ones do not)',
    apply: set('alertFiringOnly', boolean),
  }),
  kured({
    name: 'reboot-days',
    type: 'array',
    valueName: '<days>',
    repeatable: true,
    window: true,
    default: 'su,mo,tu,we,th,fr,sa',
    description:
      'days reboots may start: 0-6 (0 = Sunday), names or ranges (mon-fri), comma-separated; "" = never',
    apply: (values, draft) => {
      draft.config.window.days = parseDays(values);
    },
  }),
  kured({
    name: 'start-time',
    type: 'string',
    valueName: '<time>',
    window: true,
    default: '0:00',
    description: 'reboots may start from this time of day (9am, 17:00, 5:30pm, 23:59:59)',
    apply: setWindow('startSecond', parseTimeOfDay),
  }),
  kured({
    name: 'end-time',
    type: 'string',
    valueName: '<time>',
    window: true,
    default: '23:59:59',
    description: 'until the end of this second; before --start-time = the window wraps midnight',
    apply: setWindow('endSecond', parseTimeOfDay),
  }),
  kured({
    name: 'time-zone',
    type: 'string',
    valueName: '<zone>',
    window: true,
    default: 'UTC',
    description: 'IANA zone of the window (Local = the zone of the process)',
    apply: setWindow('timeZone', timeZone),
  }),
  kured({
    name: 'annotate-nodes',
    type: 'boolean',
    default: 'false',
    description: "write kured's reboot-in-progress and most-recent-reboot-needed node annotations",
    apply: set('annotateNodes', boolean),
  }),
  kured({
    name: 'pre-reboot-node-labels',
    type: 'array',
    valueName: '<key=value>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description: 'labels set on the node before cordoning (comma-separated)',
    apply: (values, draft) => {
      draft.config.preRebootNodeLabels = parseLabels(values);
    },
  }),
  kured({
    name: 'post-reboot-node-labels',
    type: 'array',
    valueName: '<key=value>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description: 'labels set on the node after uncordoning (comma-separated)',
    apply: (values, draft) => {
      draft.config.postRebootNodeLabels = parseLabels(values);
    },
  }),
  kured({
    name: 'notify-url',
    type: 'string',
    valueName: '<url>',
    default: '',
    defaultText: '""',
    description:
      'notification URL (shoutrrr: slack, teams, telegram, discord, mattermost, rocketchat, gotify, pushover, googlechat, generic, smtp) or a JSON webhook https://…',
    apply: set('notifyUrl', notifyUrl),
  }),
  kured({
    name: 'slack-hook-url',
    type: 'string',
    valueName: '<url>',
    default: '',
    defaultText: '""',
    deprecated: 'use --notify-url',
    description:
      'deprecated: Slack webhook https://hooks.slack.com/services/T/B/X, converted to --notify-url',
    apply: (values, draft) => {
      draft.slackHookUrl = slackHookNotifyUrl(last(values));
    },
  }),
  kured({
    name: 'slack-username',
    type: 'string',
    valueName: '<name>',
    default: 'kured',
    deprecated: 'ignored, as by kured with notify URLs',
    description: 'deprecated and ignored (kept so kured command lines keep working)',
    apply: () => undefined,
  }),
  kured({
    name: 'slack-channel',
    type: 'string',
    valueName: '<channel>',
    default: '',
    defaultText: '""',
    deprecated: 'ignored, as by kured with notify URLs',
    description: 'deprecated and ignored (kept so kured command lines keep working)',
    apply: () => undefined,
  }),
  kured({
    name: 'message-template-drain',
    type: 'string',
    valueName: '<text>',
    default: DEFAULT_MESSAGE_DRAIN,
    description: 'notification text when draining (%s = node)',
    apply: set('messageTemplateDrain', text),
  }),
  kured({
    name: 'message-template-reboot',
    type: 'string',
    valueName: '<text>',
    default: DEFAULT_MESSAGE_REBOOT,
    description: 'notification text when rebooting (%s = node)',
    apply: set('messageTemplateReboot', text),
  }),
  kured({
    name: 'message-template-uncordon',
    type: 'string',
    valueName: '<text>',
    default: DEFAULT_MESSAGE_UNCORDON,
    description: 'notification text after uncordoning (%s = node)',
    apply: set('messageTemplateUncordon', text),
  }),
  kured({
    name: 'metrics-host',
    type: 'string',
    valueName: '<host>',
    default: '',
    defaultText: '"" (all interfaces)',
    description: 'address of the /metrics, /healthz and /readyz listener',
    apply: set('metricsHost', text),
  }),
  kured({
    name: 'metrics-port',
    type: 'integer',
    valueName: '<port>',
    default: '8080',
    description: 'port of that listener',
    apply: set('metricsPort', integer(0, 65535)),
  }),
  kured({
    name: 'log-format',
    type: 'string',
    valueName: '<format>',
    choices: ['text', 'json'],
    default: 'text',
    description: 'text or json',
    apply: set('logFormat', oneOf(['text', 'json'] as const)),
  }),
  added({
    name: 'readiness-gate',
    type: 'array',
    valueName: '<condition>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description: 'node condition type that must be True after the reboot before uncordoning (repeatable)',
    apply: (values, draft) => {
      draft.config.readinessGates = qualifiedNames(values);
    },
  }),
  added({
    name: 'post-reboot-wait-taint',
    type: 'array',
    valueName: '<key>',
    repeatable: true,
    default: '',
    defaultText: 'none (readiness.k8s.io/ always)',
    description:
      'taint key (or a prefix ending in /) whose taint must be gone after the reboot before uncordoning, besides readiness.k8s.io/ (repeatable)',
    apply: (values, draft) => {
      draft.config.postRebootWaitTaints = [
        ...new Set(
          eachItem(
            values.flatMap((v) => v.split(',')),
            taintKeyOrPrefix,
          ),
        ),
      ];
    },
  }),
  added({
    name: 'post-reboot-timeout',
    type: 'string',
    valueName: DURATION,
    default: '30m',
    description: 'bound for the post-reboot readiness gate',
    apply: set('postRebootTimeoutMs', duration('positive')),
  }),
  added({
    name: 'on-post-reboot-timeout',
    type: 'string',
    valueName: '<action>',
    choices: ['hold', 'release'],
    default: 'hold',
    description: 'hold (keep the lock, stop the wave) or release',
    apply: set('onPostRebootTimeout', oneOf(['hold', 'release'] as const)),
  }),
  added({
    name: 'wait-for-daemonset-pods',
    type: 'boolean',
    default: 'false',
    description: "after the reboot also wait for this node's DaemonSet pods to be Ready",
    apply: set('waitForDaemonSetPods', boolean),
  }),
  added({
    name: 'reboot-retries',
    type: 'integer',
    default: '3',
    description: 'reboots attempted while the bootID stays unchanged before giving up',
    apply: set('rebootRetries', integer(1)),
  }),
  added({
    name: 'max-reboots-per-need',
    type: 'integer',
    default: '2',
    description:
      'reboots one need may survive (the sentinel still asks at the first check after the new boot) before the node is quarantined reboot-loop, released only by an operator',
    apply: set('maxRebootsPerNeed', integer(1)),
  }),
  added({
    name: 'package-manager-wait',
    type: 'string',
    valueName: DURATION,
    default: '1h',
    description:
      "wait this long for the host's package manager (dpkg/apt, rpm/dnf, zypper lock held, unattended-upgrades running) before the cordon and the reboot, then say so with an Event and keep waiting",
    apply: set('packageManagerWaitMs', duration('positive')),
  }),
  added({
    name: 'on-uncordoned-during-delay',
    type: 'string',
    valueName: '<action>',
    choices: ['abort', 'redrain'],
    default: 'abort',
    description: 'abort (release, try next period) or redrain (cordon and drain again)',
    apply: set('onUncordonedDuringDelay', oneOf(['abort', 'redrain'] as const)),
  }),
  added({
    name: 'on-drain-failure',
    type: 'string',
    valueName: '<action>',
    choices: ['quarantine', 'requeue'],
    default: 'quarantine',
    description:
      'a node whose drain failed: quarantine (label kured-ts.dev/quarantined, Event naming the pods, passed over until its pods change or --quarantine-retry passes) or requeue (release and ask again)',
    apply: set('onDrainFailure', oneOf(['quarantine', 'requeue'] as const)),
  }),
  added({
    name: 'quarantine-cordon',
    type: 'boolean',
    default: 'false',
    description:
      'a quarantined node stays cordoned (until its next cycle ends or its quarantine goes) instead of uncordoned',
    apply: set('quarantineCordon', boolean),
  }),
  added({
    name: 'quarantine-retry',
    type: 'string',
    valueName: DURATION,
    default: '1h',
    defaultText: '1h (0 = only when its pods change)',
    description: 'a quarantined node whose pods did not change takes a slot again after this long',
    apply: set('quarantineRetryMs', duration('non-negative')),
  }),
  added({
    name: 'max-quarantined',
    type: 'string',
    valueName: '<n|n%>',
    default: '',
    defaultText: '"" (no limit)',
    description:
      'start no new cycle anywhere while more other nodes than this are quarantined (the reason in status, check, kured_ts_blocked{blocker="max-quarantined"})',
    apply: set('maxQuarantined', unhealthyLimit),
  }),
  added({
    name: 'wave-start',
    type: 'integer',
    default: '0',
    defaultText: '0 (= --concurrency: no slow start)',
    description:
      "slow start: the first this many nodes of a wave go before any other, judged by the node about to go from the nodes' own labels",
    apply: set('waveStart', integer(0)),
  }),
  added({
    name: 'wave-growth',
    type: 'string',
    valueName: '<none|linear:K|x2>',
    default: 'none',
    defaultText: 'none (after --wave-start, --concurrency)',
    description:
      'how each step of the slow start grows once the last has soaked: K nodes more, or twice as many, until a step reaches --concurrency',
    apply: set('waveGrowth', waveGrowth),
  }),
  added({
    name: 'soak',
    type: 'string',
    valueName: DURATION,
    default: '0',
    description:
      'a node counts toward the next step of the slow start (and its group as done) only once back and Ready this long, on its own clock',
    apply: set('soakMs', duration('non-negative')),
  }),
  added({
    name: 'max-failures',
    type: 'string',
    valueName: '<n|n%>',
    default: '',
    defaultText: '"" (no failure budget)',
    description:
      'halt the wave once this many of its nodes failed (quarantined, reboot failed, not back in time, a health check failed after it): a fleet pause written by kured-ts, lifted by kured-ts resume',
    apply: set('maxFailures', failureBudget),
  }),
  added({
    name: 'group-order',
    type: 'string',
    valueName: '<parallel|sequential[:a,b]>',
    default: 'parallel',
    description:
      'sequential: one --group-label group at a time, each finished (its nodes rebooted and soaked, or quarantined) before the next starts; in the order given, then by name, the nodes without the label last',
    apply: set('groupOrder', groupOrder),
  }),
  added({
    name: 'health-check',
    type: 'array',
    valueName: "<'G/V/R [NS/]NAME: EXPR'>",
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      "a CEL expression over one object (self) that must be true before a node takes a slot and after its reboot, e.g. 'apps/v1/deployments web/api: self.status.readyReplicas == self.spec.replicas' (core for the core group; the chart grants get on exactly these)",
    apply: (values, draft) => {
      draft.config.healthChecks = eachItem(values, healthCheck);
    },
  }),
  added({
    name: 'health-check-timeout',
    type: 'string',
    valueName: DURATION,
    default: '5m',
    description:
      'after a reboot, the --health-check expressions must hold within this long, or the node failed',
    apply: set('healthCheckTimeoutMs', duration('positive')),
  }),
  added({
    name: 'notify-events',
    type: 'array',
    valueName: '<kind>',
    repeatable: true,
    default: '',
    defaultText: 'all',
    description: `what the notify URL is told (comma-separated): all, ${NOTIFY_EVENTS.join(', ')}; each failure kind at most once per node and --period`,
    apply: (values, draft) => {
      draft.config.notifyEvents = notifyEvents(values);
    },
  }),
  ...FAILURE_EVENTS.map((kind) =>
    added({
      name: `message-template-${kind}`,
      type: 'string',
      valueName: '<text>',
      default: DEFAULT_FAILURE_MESSAGES[kind],
      description: `notification text of ${kind} (%s = node; the reason follows)`,
      apply: (values, draft) => {
        draft.config.failureTemplates = { ...draft.config.failureTemplates, [kind]: last(values) };
      },
    }),
  ),
  added({
    name: 'block-on-pdb',
    type: 'boolean',
    default: 'true',
    description:
      'do not take the lock while a PDB would refuse to let a pod here go (asked of the API server by a dry-run eviction of each pod the drain would evict)',
    apply: set('blockOnPdb', boolean),
  }),
  added({
    name: 'eviction-retry-delay',
    type: 'string',
    valueName: DURATION,
    default: '5s',
    description: 'back-off between evictions refused by a PDB',
    apply: set('evictionRetryDelayMs', duration('non-negative')),
  }),
  added({
    name: 'drain-rules',
    type: 'string',
    valueName: '<file>',
    default: '',
    defaultText: '"" (none)',
    description:
      "YAML list of drain rules for pods that cannot be labelled ({namespace, selector, drain: evict|skip|wait-completed, order}); a pod's own kured-ts.dev/drain and kured-ts.dev/drain-order labels win",
    apply: (values, draft) => {
      draft.config.drainRulesFile = last(values).trim();
      draft.config.drainRules = [];
    },
  }),
  added({
    name: 'drain-fallback',
    type: 'string',
    valueName: '<action>',
    choices: ['none', 'delete'],
    default: 'none',
    description:
      'pods whose eviction is still refused when --drain-timeout passes: none (the drain fails) or delete (deleted instead, as kubectl drain --disable-eviction; an Event DrainFallback names them; needs RBAC delete on pods)',
    apply: set('drainFallback', oneOf(['none', 'delete'] as const)),
  }),
  added({
    name: 'single-replica',
    type: 'string',
    valueName: '<action>',
    choices: ['off', 'restart'],
    default: 'off',
    description:
      'a pod the drain would evict that is the only ready replica of a Deployment (RollingUpdate, maxSurge ≥ 1): off (evicted as kured does) or restart (the Deployment is restarted as by kubectl rollout restart, and the drain waits until it is available with a new pod elsewhere; needs RBAC get/patch on deployments, get on replicasets)',
    apply: set('singleReplica', oneOf(['off', 'restart'] as const)),
  }),
  added({
    name: 'single-replica-timeout',
    type: 'string',
    valueName: DURATION,
    default: '10m',
    description:
      'bound for the wait for a restarted Deployment (--single-replica restart): past it the drain evicts the old pod as today, the reason in status',
    apply: set('singleReplicaTimeoutMs', duration('positive')),
  }),
  added({
    name: 'hold-after-drain-annotation',
    type: 'array',
    valueName: '<key>',
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      'node annotation key (repeatable, comma-separated): after the drain, before --reboot-delay, the node is held, cordoned and with its slot, while it carries one (an external worker: firmware, backup, storage rebalance)',
    apply: (values, draft) => {
      draft.config.holdAfterDrainAnnotations = qualifiedNames(values);
    },
  }),
  added({
    name: 'hold-timeout',
    type: 'string',
    valueName: DURATION,
    default: '1h',
    description: 'bound for the hold after the drain: past it the cycle ends as a failed drain does',
    apply: set('holdTimeoutMs', duration('positive')),
  }),
  added({
    name: 'volume-detach-timeout',
    type: 'string',
    valueName: DURATION,
    default: '10m',
    description:
      'after the drain, wait at most this long until the volumes of the evicted pods are detached from the node and unmounted (its status says so: no request); 0 = do not wait',
    apply: set('volumeDetachTimeoutMs', duration('non-negative')),
  }),
  added({
    name: 'volume-detach-timeout-action',
    type: 'string',
    valueName: '<action>',
    choices: ['fail', 'reboot'],
    default: 'fail',
    description:
      'past --volume-detach-timeout: fail (the cycle ends as a failed drain does, quarantined naming the volumes) or reboot (with them attached, said in status)',
    apply: set('volumeDetachTimeoutAction', oneOf(['fail', 'reboot'] as const)),
  }),
  added({
    name: 'node-check',
    type: 'array',
    valueName: "<'[WHEN] G/V/R [NS]: EXPR'>",
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      "the storage system's word about this node: a CEL expression over one list of objects (self.items) and this Node (node) that must be true; WHEN is after-drain (the default: before the reboot, waited for within --volume-detach-timeout and its action), at-slot (before the node takes a slot) or always (both), e.g. 'longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name)'; more than 500 items, an error or a missing resource fails closed (the chart grants list on exactly these)",
    apply: (values, draft) => {
      draft.config.nodeChecks = eachItem(values, nodeCheck);
    },
  }),
  added({
    name: 'reboot-schedule',
    type: 'array',
    valueName: '<cron>',
    window: true,
    default: '',
    defaultText: '""',
    repeatable: true,
    description:
      'window as a 5-field cron expression matched per minute in --time-zone (replaces days/start/end; repeat for several windows)',
    apply: (values, draft) => {
      draft.config.window.schedules = schedules(values);
    },
  }),
  added({
    name: 'blackout',
    type: 'array',
    valueName: '<from/to>',
    window: true,
    repeatable: true,
    default: '',
    defaultText: 'none',
    description:
      'no reboot starts in this range, in --time-zone: 2026-12-20/2027-01-03 (whole days), 2026-12-24T18:00/2026-12-26T08:00, or yearly 12-20/01-03',
    apply: (values, draft) => {
      draft.config.window.blackouts = blackouts(values);
    },
  }),
  added({
    name: 'group-label',
    type: 'string',
    valueName: '<label>',
    default: '',
    defaultText: '"" (no groups)',
    description:
      'node label whose values form groups (e.g. topology.kubernetes.io/zone); nodes without it form one group',
    apply: set('groupLabel', labelKey),
  }),
  added({
    name: 'group-concurrency',
    type: 'integer',
    valueName: '<n|n%>',
    default: '0',
    defaultText: '0 (no per-group limit)',
    description:
      'how many nodes of one --group-label group may reboot at once, within --concurrency: N, or N% of the group (rounded down, at least 1)',
    apply: setShare('groupConcurrency', 0),
  }),
  added({
    name: 'count-unavailable',
    type: 'boolean',
    default: 'true',
    description:
      'nodes NotReady, unreachable or cordoned by someone else take slots of --concurrency and --group-concurrency (as MCO and Karpenter count them)',
    apply: set('countUnavailable', boolean),
  }),
  added({
    name: 'control-plane-last',
    type: 'boolean',
    default: 'true',
    description:
      'control-plane nodes take a slot only once no worker waits for one or is rebooting (they always go one at a time, with the other members and their etcd Ready)',
    apply: set('controlPlaneLast', boolean),
  }),
  added({
    name: 'max-unhealthy-nodes',
    type: 'string',
    valueName: '<n|n%>',
    default: '',
    defaultText: '"" (no health gate)',
    description:
      'take no lock slot while more other nodes than this are NotReady, unreachable or cordoned by someone else',
    apply: set('maxUnhealthyNodes', unhealthyLimit),
  }),
  added({
    name: 'require-approval',
    type: 'boolean',
    default: 'false',
    description: 'a node ready to reboot waits (awaiting-approval) until `kured-ts approve NODE`',
    apply: set('requireApproval', boolean),
  }),
  added({
    name: 'approval-ttl',
    type: 'string',
    valueName: DURATION,
    default: '0',
    defaultText: '0 (approvals do not expire)',
    description: 'an approval not used within this long expires',
    apply: set('approvalTtlMs', duration('non-negative')),
  }),
  added({
    name: 'reboot-deadline',
    type: 'string',
    valueName: DURATION,
    default: '0',
    defaultText: '0 (no deadline)',
    description:
      'a node whose reboot has been required for longer is overdue: status, Event RebootOverdue, kured_ts_reboot_overdue',
    apply: set('rebootDeadlineMs', duration('non-negative')),
  }),
  added({
    name: 'history-limit',
    type: 'integer',
    default: '10',
    description: 'reboot cycles kept per node in its kured-ts.dev/history annotation (0 = none)',
    apply: set('historyLimit', integer(0, 100)),
  }),
  added({
    name: 'autoscaler-protection',
    type: 'boolean',
    default: 'true',
    description:
      'while a node is in its reboot cycle and for --settle-time after, annotate it cluster-autoscaler.kubernetes.io/scale-down-disabled=true and karpenter.sh/do-not-disrupt=true, and for the cycle karpenter.sh/do-not-repair=true (each only if absent; only those the agent added are removed)',
    apply: set('autoscalerProtection', boolean),
  }),
  added({
    name: 'settle-time',
    type: 'string',
    valueName: DURATION,
    default: '10m',
    description: 'how long the autoscaler protection stays after a reboot cycle ends',
    apply: set('settleTimeMs', duration('non-negative')),
  }),
  added({
    name: 'exclude-from-lb',
    type: 'boolean',
    default: 'true',
    description:
      'before the drain, label the node node.kubernetes.io/exclude-from-external-load-balancers (only if absent; removed at uncordon only if the agent added it), so cloud load balancers stop sending it traffic',
    apply: set('excludeFromLb', boolean),
  }),
  added({
    name: 'lb-drain-wait',
    type: 'string',
    valueName: DURATION,
    default: '2m',
    description:
      'with --exclude-from-lb, wait this long after the label before draining, when the cluster has a Service of type LoadBalancer (or cannot be asked): one service-controller sync (100s) plus a margin',
    apply: set('lbDrainWaitMs', duration('non-negative')),
  }),
  added({
    name: 'taint-timing',
    type: 'string',
    valueName: '<when>',
    choices: ['required', 'unblocked'],
    default: 'required',
    description:
      "when the PreferNoSchedule taint goes on: as soon as a reboot is required, or only once nothing blocks it (kured's timing)",
    apply: set('taintTiming', oneOf(['required', 'unblocked'] as const)),
  }),
  added({
    name: 'lock-queue',
    type: 'string',
    valueName: '<order>',
    choices: ['fair', 'none'],
    default: 'fair',
    description:
      "who takes a freed lock slot: the waiting node whose reboot has been needed longest (fair: the coordinator names it, and the waiter follows only its own Node; first come while no coordinator is live), or whoever asks first (none: kured's behaviour)",
    apply: set('lockQueue', oneOf(['fair', 'none'] as const)),
  }),
  added({
    name: 'coordinator',
    type: 'boolean',
    default: 'true',
    description:
      "follow the coordinator's queue (--lock-queue fair): read its Lease and wait for its turn; false: never read the Lease, first come (the chart sets it from coordinator.enabled)",
    apply: set('coordinator', boolean),
  }),
  added({
    name: 'fleetlock-url',
    type: 'string',
    valueName: '<url>',
    default: '',
    defaultText: '"" (no FleetLock)',
    description:
      'FleetLock server (airlock, poseidon/fleetlock) shared with other clusters: a node takes a slot of --fleetlock-group there (POST /v1/pre-reboot, id = node name) before the in-cluster lock and gives it back (/v1/steady-state) after its cycle',
    apply: set('fleetlockUrl', optionalUrl(['http', 'https'])),
  }),
  added({
    name: 'fleetlock-group',
    type: 'string',
    valueName: '<name>',
    default: 'default',
    description:
      'the FleetLock group whose slots this cluster takes (clusters that share a budget share a group)',
    apply: set('fleetlockGroup', nonEmpty),
  }),
  added({
    name: 'host-exec',
    type: 'string',
    valueName: '<mode>',
    choices: ['nsenter', 'direct'],
    default: 'nsenter',
    description: "nsenter (into PID 1's mount namespace, privileged pod) or direct (agent on the host)",
    apply: set('hostExec', oneOf(['nsenter', 'direct'] as const)),
  }),
  added({
    name: 'host-root',
    type: 'string',
    valueName: '<path>',
    default: '/',
    description:
      "where the host's / is seen by the agent: --kubelet-config, logind's configuration and the package managers' lock files are read under it, read-only (the chart mounts them under /host)",
    apply: set('hostRoot', nonEmpty),
  }),
  added({
    name: 'kubelet-config',
    type: 'string',
    valueName: '<path>',
    default: '/var/lib/kubelet/config.yaml',
    description:
      'the kubelet\'s configuration file on the host (its --config), read at start for shutdownGracePeriod and published in the status ("" = not read)',
    apply: set('kubeletConfig', text),
  }),
  added({
    name: 'kubeconfig',
    type: 'string',
    valueName: '<path>',
    default: '',
    defaultText: '"" (KUBECONFIG or in-cluster)',
    description: 'kubeconfig file',
    apply: set('kubeconfig', text),
  }),
];

/** The default as docs show it. */
export function shownDefault(flag: FlagSpec): string {
  if (flag.defaultText !== undefined) return flag.defaultText;
  return flag.default === '' ? '""' : flag.default;
}

/** The configuration table of docs/configuration.md (markdown): flag | env | default | meaning. */
export function renderConfigTable(): string {
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  const rows = FLAGS.map((f) => {
    const flag = `\`--${f.name}\`${f.repeatable ? ' (repeatable)' : ''}`;
    const meaning = `${f.origin === 'new' ? '(kured-ts) ' : ''}${f.description}`;
    return `| ${flag} | \`${f.env}\` | ${cell(shownDefault(f))} | ${cell(meaning)} |`;
  });
  return ['| flag | env | default | meaning |', '|---|---|---|---|', ...rows].join('\n') + '\n';
}

/** A flag's key in the chart's values: camelCase of its name (`reboot-delay` → rebootDelay). */
export function valuesKey(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/**
 * Flags the Helm chart sets itself, never from `configuration`: --drain-rules points at the ConfigMap
 * the chart renders from its top-level value drainRules (the rules themselves, not a path); --host-root
 * is where the chart mounts the host's files (/host).
 */
const CHART_SET_FLAGS = new Set(['node-id', 'kubeconfig', 'drain-rules', 'host-root']);

/**
 * charts/kured-ts/files/agent-defaults.yaml: each scalar flag's default under its values key
 * (camelCase), as a string. The chart renders a configuration key only when its value differs, so
 * that a KURED_* variable set through the chart's env is not overridden by a default (npm run docs).
 */
export function renderChartDefaultsYaml(): string {
  const lines = FLAGS.filter((f) => f.type !== 'array' && !CHART_SET_FLAGS.has(f.name)).map(
    (f) => `${valuesKey(f.name)}: ${JSON.stringify(f.default)}`,
  );
  return (
    [
      "# Generated from src/config/flags.ts by `npm run docs`: the agent's default of each scalar flag.",
      '# The chart leaves a configuration key out of the args when its value is this default.',
      ...lines,
    ].join('\n') + '\n'
  );
}

/** A flag's default as written in the table (commands that share a flag share its default). */
export function flagDefault(name: string): string {
  const flag = FLAGS.find((f) => f.name === name);
  if (flag === undefined) throw new Error(`no flag --${name}`);
  return flag.default;
}
