import { describe, expect, it } from '@jest/globals';
import { envName, FLAGS, renderConfigTable, shownDefault } from '../../src/config/flags.js';
import { defaultConfig } from '../../src/config/parse.js';

/** Every flag DESIGN §3 lists (kured's and the new ones), plus --kubeconfig (DESIGN §7). */
const DESIGN_FLAGS = [
  'node-id', 'period', 'reboot-sentinel', 'reboot-sentinel-command', 'reboot-method', 'reboot-command',
  'reboot-signal', 'reboot-delay', 'drain-delay', 'drain-timeout', 'drain-grace-period', 'drain-pod-selector',
  'skip-wait-for-delete-timeout', 'force-reboot', 'ds-name', 'ds-namespace', 'lock-annotation', 'lock-ttl',
  'lock-release-delay', 'concurrency', 'prefer-no-schedule-taint', 'blocking-pod-selector', 'prometheus-url',
  'alert-filter-regexp', 'alert-filter-match-only', 'alert-firing-only', 'reboot-days', 'start-time', 'end-time',
  'time-zone', 'annotate-nodes', 'pre-reboot-node-labels', 'post-reboot-node-labels', 'notify-url',
  'slack-hook-url', 'message-template-drain', 'message-template-reboot', 'message-template-uncordon',
  'metrics-host', 'metrics-port', 'log-format', 'readiness-gate', 'post-reboot-timeout', 'on-post-reboot-timeout',
  'wait-for-daemonset-pods', 'reboot-retries', 'on-uncordoned-during-delay', 'block-on-pdb', 'eviction-retry-delay',
  'reboot-schedule', 'host-exec', 'kubeconfig',
]; // prettier-ignore

/**
 * The fleet-policy flags beyond DESIGN §3 (group concurrency, health gate, exclusions, approval,
 * history, PromQL blockers, patch deadlines, the lock queue's order), DESIGN §14's (autoscaler
 * protection, a reboot budget shared with other clusters through FleetLock) and DESIGN §15's.
 */
const FLEET_POLICY_FLAGS = [
  'blackout', 'group-label', 'group-concurrency', 'max-unhealthy-nodes', 'require-approval', 'approval-ttl',
  'history-limit', 'taint-timing', 'blocking-query', 'reboot-deadline', 'lock-queue', 'count-unavailable',
  'control-plane-last', 'autoscaler-protection', 'settle-time', 'on-drain-failure', 'quarantine-cordon',
  'quarantine-retry', 'max-quarantined', 'fleetlock-url', 'fleetlock-group', 'drain-rules', 'drain-fallback',
  'hold-after-drain-annotation', 'hold-timeout', 'volume-detach-timeout', 'volume-detach-timeout-action', 'node-check', 'coordinator', 'exclude-from-lb', 'lb-drain-wait', 'host-root',
  'kubelet-config', 'single-replica', 'single-replica-timeout',
  // issue 45: waves you can trust with a bad kernel
  'wave-start', 'wave-growth', 'soak', 'max-failures', 'group-order', 'health-check', 'health-check-timeout',
  'notify-events', 'message-template-drain-failed', 'message-template-quarantined',
  'message-template-reboot-failed', 'message-template-not-back', 'message-template-wave-halted',
  'message-template-overdue',
  // DESIGN §15 (issue 44): the package manager, reboot loops
  'package-manager-wait', 'max-reboots-per-need',
  // issue 56: in step with the cluster's other operators
  'post-reboot-wait-taint', 'alertmanager-url', 'silence-matcher', 'silence-duration', 'silence-tail',
  'before-reboot-hook', 'after-reboot-hook', 'hook-namespace', 'hook-timeout',
]; // prettier-ignore

describe('the flag table', () => {
  it('holds every flag of DESIGN §3 and --kubeconfig', () => {
    const names = FLAGS.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(DESIGN_FLAGS));
  });

  it('holds each flag once', () => {
    const names = FLAGS.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('only adds deprecated kured flags and the fleet-policy flags beyond DESIGN §3', () => {
    const extra = FLAGS.filter((f) => !DESIGN_FLAGS.includes(f.name) && !FLEET_POLICY_FLAGS.includes(f.name));
    expect(extra.map((f) => [f.name, f.origin, f.deprecated !== undefined])).toEqual([
      ['slack-username', 'kured', true],
      ['slack-channel', 'kured', true],
    ]);
  });

  it.each(FLAGS.map((f) => [f.name, f.env]))('names the variable of --%s %s', (name, env) => {
    expect(env).toBe(envName(name));
    expect(env).toMatch(/^KURED_[A-Z0-9_]+$/);
  });

  it('maps names to variables as kured does', () => {
    expect(envName('lock-ttl')).toBe('KURED_LOCK_TTL');
    expect(envName('blocking-pod-selector')).toBe('KURED_BLOCKING_POD_SELECTOR');
  });

  it('marks exactly the list flags as repeatable', () => {
    const repeatable = FLAGS.filter((f) => f.repeatable).map((f) => f.name);
    expect(repeatable.sort()).toEqual(
      [
        'blocking-pod-selector',
        'blocking-query',
        'hold-after-drain-annotation',
        'post-reboot-node-labels',
        'pre-reboot-node-labels',
        'readiness-gate',
        'post-reboot-wait-taint',
        'silence-matcher',
        'reboot-days',
        'reboot-schedule',
        'blackout',
        'health-check',
        'node-check',
        'notify-events',
      ].sort(),
    );
  });

  it('gives enum flags a default among their choices', () => {
    for (const flag of FLAGS.filter((f) => f.choices !== undefined)) {
      expect(flag.choices).toContain(flag.default);
    }
  });

  it('parses every default (so help and behaviour agree), leaving no field unset', () => {
    const config = defaultConfig();
    // Three fields are undefined by design: no alert filter, no health gate, no quarantine cap.
    const optional = [
      'alertFilterRegexp',
      'maxUnhealthyNodes',
      'maxQuarantined',
      'maxFailures',
      // --group-concurrency 0 (its default): no limit per group
      'groupConcurrency',
    ];
    const unset = Object.entries(config).filter(([key, v]) => v === undefined && !optional.includes(key));
    expect(unset).toEqual([]);
  });

  it('marks the window flags', () => {
    const window = FLAGS.filter((f) => f.window === true).map((f) => f.name);
    expect(window).toEqual([
      'reboot-days',
      'start-time',
      'end-time',
      'time-zone',
      'reboot-schedule',
      'blackout',
    ]);
  });
});

describe('the configuration table of docs/configuration.md', () => {
  const table = renderConfigTable();
  const lines = table.trimEnd().split('\n');

  it('has a header and one row per flag', () => {
    expect(lines[0]).toBe('| flag | env | default | meaning |');
    expect(lines).toHaveLength(FLAGS.length + 2);
  });

  it('shows flag, variable, default and meaning', () => {
    expect(table).toContain('| `--lock-ttl` | `KURED_LOCK_TTL` | 0 | lock expiry (0 = never) |');
    expect(table).toContain(
      '| `--blocking-pod-selector` (repeatable) | `KURED_BLOCKING_POD_SELECTOR` | none |',
    );
    expect(table).toContain('| `--post-reboot-timeout` | `KURED_POST_REBOOT_TIMEOUT` | 30m | (kured-ts) ');
  });

  it('keeps every row at four cells (pipes in text are escaped)', () => {
    for (const line of lines) {
      expect(line.split(/(?<!\\)\|/).length - 2).toBe(4);
    }
  });

  it('shows quoted empty defaults', () => {
    const flag = FLAGS.find((f) => f.name === 'alert-filter-regexp');
    expect(flag && shownDefault(flag)).toBe('""');
  });
});
