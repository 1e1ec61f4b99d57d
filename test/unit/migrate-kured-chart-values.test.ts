// kured chart values files (test/fixtures/kured-chart: chart 2.x, 5.x defaults, a 6.x production
// override) migrated to kured-ts chart values: what is carried, what is noted and why.
import { proposeAlertFilter, RECOMMENDED_ALERT_FILTER } from '../../src/migrate/alert-filter.js';
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import {
  kuredDaemonSetName,
  memoryBytes,
  migrateKuredValues,
  renderMigrationTable,
} from '../../src/migrate/kured-chart-values.js';

const fixture = (name: string): unknown =>
  load(readFileSync(new URL(`../fixtures/kured-chart/${name}`, import.meta.url), 'utf8'));

const TAINT_NOTE = 'configuration.preferNoScheduleTaint';
/** kured-ts keeps its --exclude-from-lb default, and says so (issue 44). */
const LB_NOTE = 'configuration.excludeFromLb';

describe('migrating kured chart values', () => {
  it.each([
    {
      name: "chart 5.x's own defaults keep kured-ts's defaults, except what kured sets explicitly",
      file: 'chart-5.x-defaults.yaml',
      values: {
        image: { pullPolicy: 'IfNotPresent' },
        revisionHistoryLimit: 10,
        maxUnavailable: 1,
        configuration: {
          metricsPort: 8080,
          lockTtl: 0,
          alertFiringOnly: false,
          alertFilterMatchOnly: false,
          forceReboot: false,
          drainDelay: 0,
          rebootCommand: '/bin/systemctl reboot',
          annotateNodes: false,
          lockReleaseDelay: 0,
          logFormat: 'text',
          concurrency: 1,
        },
        rbac: { create: true },
        serviceAccount: { create: true },
        metrics: { serviceMonitor: { interval: '60s' }, service: { enabled: false, port: 8080 } },
        nodeSelector: { 'kubernetes.io/os': 'linux' },
      },
      notes: [
        ['image.repository', 'refused'],
        [TAINT_NOTE, 'changed'],
        [LB_NOTE, 'changed'],
      ],
    },
    {
      name: 'a 6.x production file keeps its window, blockers and monitoring, and lists what kured-ts does differently',
      file: 'chart-6.x-production.yaml',
      values: expect.objectContaining({
        configuration: expect.objectContaining({
          startTime: '22:00',
          endTime: '05:00',
          timeZone: 'Europe/Berlin',
          rebootDays: ['mo', 'tu', 'we', 'th'],
          concurrency: 2,
          blockingPodSelector: ['app=etcd-backup', 'job-name'],
          preferNoScheduleTaint: 'weave.works/kured-node-reboot',
        }),
        // kured's extraArgs map stays one: the chart renders it last, so it wins as in kured
        extraArgs: { 'force-reboot': true, 'skip-wait-for-delete-timeout': 300 },
        // kured's keys the chart now honours under the same names
        updateStrategy: 'OnDelete',
        hostNetwork: true,
        volumes: [{ name: 'extra', emptyDir: {} }],
        metrics: {
          serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' }, interval: '30s' },
          service: { enabled: true, port: 9090, annotations: { 'prometheus.io/scrape': 'true' } },
          namespace: 'monitoring',
        },
        livenessProbe: { periodSeconds: 60 },
        priorityClassName: 'system-node-critical',
      }),
      notes: [
        ['podSecurityPolicy.create', 'refused'],
        ['configuration.useRebootSentinelHostPath', 'refused'],
        ['configuration.slackChannel', 'changed'],
        ['extraArgs.node-id', 'refused'],
        ['extraArgs.debug', 'lost'],
        ['resources', 'changed'],
        ['livenessProbe', 'refused'],
        [LB_NOTE, 'changed'],
        // kured's filter lets the kured-ts chart's own alerts hold the fleet: extended, not replaced
        ['configuration.alertFilterRegexp', 'proposed'],
      ],
    },
    {
      name: 'a 2.x file: top-level metrics flags move under configuration, values kured-ts refuses are listed',
      file: 'chart-2.x-invalid.yaml',
      values: { configuration: { metricsHost: '0.0.0.0', metricsPort: 9101, concurrency: 3 } },
      notes: [
        ['configuration.startTime', 'lost'],
        ['configuration.period', 'lost'],
        ['configuration.notifyUrl', 'lost'],
        ['configuration.rebootDays', 'lost'],
        ['unknownTopLevel', 'lost'],
        [TAINT_NOTE, 'changed'],
        [LB_NOTE, 'changed'],
      ],
    },
  ])('$name', ({ file, values, notes }) => {
    const m = migrateKuredValues(fixture(file));
    expect(m.values).toEqual(values);
    expect(m.notes.map((n) => [n.key, n.kind])).toEqual(notes);
  });

  it('says why, naming the value and the flag, when kured-ts refuses a value', () => {
    const notes = migrateKuredValues(fixture('chart-2.x-invalid.yaml')).notes;
    expect(notes.find((n) => n.key === 'configuration.startTime')?.why).toBe(
      'refused by kured-ts, not carried over: invalid value "25:00" for --start-time: hour must be 0-23',
    );
    // A secret in a refused URL is not repeated.
    expect(notes.find((n) => n.key === 'configuration.notifyUrl')?.why).not.toContain('pass');
  });

  it.each([
    [
      'container.apparmor.security.beta.kubernetes.io/kured',
      'container.apparmor.security.beta.kubernetes.io/kured-ts',
    ],
    [
      'container.seccomp.security.alpha.kubernetes.io/kured',
      'container.seccomp.security.alpha.kubernetes.io/kured-ts',
    ],
  ])("renames %s to name the agent's container, which the API server checks", (from, to) => {
    const m = migrateKuredValues({ podAnnotations: { [from]: 'runtime/default', team: 'ops' } });
    expect(m.values.podAnnotations).toEqual({ [to]: 'runtime/default', team: 'ops' });
    expect(m.notes.filter((n) => n.key === 'podAnnotations').map((n) => n.kind)).toEqual(['changed']);
  });

  it('keeps annotations that name another container or none', () => {
    const annotations = { 'container.apparmor.security.beta.kubernetes.io/sidecar': 'unconfined', a: 'b' };
    const m = migrateKuredValues({ podAnnotations: annotations });
    expect(m.values.podAnnotations).toEqual(annotations);
    expect(m.notes.filter((n) => n.key === 'podAnnotations')).toEqual([]);
  });

  it.each([
    [
      "Go's SSL_CERT_FILE also becomes Node's NODE_EXTRA_CA_CERTS, from the same source",
      [{ name: 'SSL_CERT_FILE', value: '/etc/corp-ca/ca.crt' }],
      [
        { name: 'SSL_CERT_FILE', value: '/etc/corp-ca/ca.crt' },
        { name: 'NODE_EXTRA_CA_CERTS', value: '/etc/corp-ca/ca.crt' },
      ],
      [['extraEnvVars.SSL_CERT_FILE', 'changed']],
    ],
    [
      'a NODE_EXTRA_CA_CERTS already there is kept as the user set it',
      [
        { name: 'SSL_CERT_FILE', value: '/a' },
        { name: 'NODE_EXTRA_CA_CERTS', value: '/b' },
      ],
      [
        { name: 'SSL_CERT_FILE', value: '/a' },
        { name: 'NODE_EXTRA_CA_CERTS', value: '/b' },
      ],
      [['extraEnvVars.SSL_CERT_FILE', 'changed']],
    ],
    [
      'proxy variables, in either case, are read by kured-ts: no note',
      [
        { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
        { name: 'no_proxy', value: '.svc' },
      ],
      [
        { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
        { name: 'no_proxy', value: '.svc' },
      ],
      [],
    ],
  ])('%s', (_name, extraEnvVars, carried, notes) => {
    const m = migrateKuredValues({ extraEnvVars });
    expect(m.values.extraEnvVars).toEqual(carried);
    expect(m.notes.filter((n) => n.key.startsWith('extraEnvVars')).map((n) => [n.key, n.kind])).toEqual(
      notes,
    );
  });

  it('keeps the Secret reference of an environment variable as it is', () => {
    const m = migrateKuredValues(fixture('chart-6.x-production.yaml'));
    expect(m.values.extraEnvVars).toEqual([
      { name: 'KURED_SLACK_HOOK_URL', valueFrom: { secretKeyRef: { name: 'kured-slack', key: 'url' } } },
      { name: 'HTTPS_PROXY', value: 'http://proxy.internal:3128' },
    ]);
  });

  it.each([
    [
      'a kured flag given in camelCase',
      { extraArgs: { lockTtl: '1h' } },
      { extraArgs: { 'lock-ttl': '1h' } },
    ],
    ['a flag with leading dashes', { extraArgs: { '--period': '5m' } }, { extraArgs: { period: '5m' } }],
    ['a boolean flag', { extraArgs: { 'annotate-nodes': true } }, { extraArgs: { 'annotate-nodes': true } }],
    [
      'a bare flag, kured\'s ""',
      { extraArgs: { 'force-reboot': '' } },
      { extraArgs: { 'force-reboot': '' } },
    ],
    [
      'a flag the admission policy is rendered from, as its configuration key',
      { extraArgs: { concurrency: 2 } },
      { configuration: { concurrency: 2 } },
    ],
  ])('carries extraArgs as the kured map the chart renders last: %s', (_name, input, values) => {
    expect(migrateKuredValues(input).values).toEqual(values);
  });

  it("shares kured's lock when told kured's release", () => {
    const m = migrateKuredValues(
      { configuration: { concurrency: 2 } },
      { dsName: 'kured', dsNamespace: 'kube-system' },
    );
    expect(m.values.configuration).toEqual({ concurrency: 2, dsName: 'kured', dsNamespace: 'kube-system' });
  });

  it.each([
    ['kured', 'kured'],
    ['my-kured', 'my-kured'],
    ['reboots', 'reboots-kured'],
  ])("names kured's DaemonSet for release %s: %s", (release, name) => {
    expect(kuredDaemonSetName(release)).toBe(name);
  });

  it.each([
    ['128Mi', 128 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['100M', 1e8],
    ['67108864', 2 ** 26],
    ['lots', NaN],
  ])('reads the memory quantity %s', (q, bytes) => {
    expect(memoryBytes(q)).toBe(bytes);
  });

  it('notes nothing for a file that is not a map, and carries nothing', () => {
    expect(migrateKuredValues(['a'])).toEqual({
      values: {},
      notes: [{ key: '(file)', why: 'not a map of values', kind: 'lost' }],
      carried: 0,
    });
  });

  it('renders the mapping as a table with one row per rule', () => {
    const table = renderMigrationTable().split('\n');
    expect(table[0]).toBe('| kured chart | kured-ts chart | note |');
    expect(table.some((l) => l.startsWith('| `metrics.create` | `metrics.serviceMonitor.enabled` |'))).toBe(
      true,
    );
    expect(table.some((l) => l.startsWith('| `hostNetwork` | `hostNetwork` |'))).toBe(true);
    expect(table.some((l) => l.startsWith('| `podSecurityPolicy.create` | - | not carried over:'))).toBe(
      true,
    );
  });
});

describe('the load balancers (issue 44)', () => {
  it('keeps --exclude-from-lb on and says why and how to turn it off', () => {
    const m = migrateKuredValues({ configuration: { period: '1h' } });
    expect(m.values).not.toHaveProperty('configuration.excludeFromLb');
    const note = m.notes.find((n) => n.key === LB_NOTE);
    expect(note?.kind).toBe('changed');
    expect(note?.why).toMatch(
      /kept at the kured-ts default \(true\).*set it to false to keep kured's behaviour/,
    );
  });
});

describe('the alert filter migrate-values proposes', () => {
  const url = 'http://prometheus:9090';
  it.each([
    { name: 'proposes nothing without a Prometheus', configuration: {}, proposed: undefined },
    {
      name: 'proposes the recommended filter for a Prometheus without one',
      configuration: { prometheusUrl: url },
      proposed: RECOMMENDED_ALERT_FILTER,
    },
    {
      name: "extends kured's own filter instead of replacing it",
      configuration: { prometheusUrl: url, alertFilterRegexp: '^Watchdog$' },
      proposed: `(?:^Watchdog$)|${RECOMMENDED_ALERT_FILTER}`,
    },
    {
      name: 'proposes nothing where the filter already ignores the alerts that fire by design',
      configuration: { prometheusUrl: url, alertFilterRegexp: '^(Watchdog|InfoInhibitor|Kured.*)$' },
      proposed: undefined,
    },
    {
      name: 'proposes nothing where the filter lists the alerts that count (match-only)',
      configuration: { prometheusUrl: url, alertFilterRegexp: '^Critical.*', alertFilterMatchOnly: true },
      proposed: undefined,
    },
    {
      name: 'proposes nothing over a filter that is no regular expression (its own note says so)',
      configuration: { prometheusUrl: url, alertFilterRegexp: '(' },
      proposed: undefined,
    },
    {
      name: "proposes nothing where kured's match-only is the chart's boolean as a string",
      configuration: { prometheusUrl: url, alertFilterRegexp: '^Critical.*', alertFilterMatchOnly: 'True' },
      proposed: undefined,
    },
  ])('$name', ({ configuration, proposed }) => {
    expect(proposeAlertFilter({ configuration })?.regexp).toBe(proposed);
  });

  it.each([
    {
      name: 'proposes nothing where extraArgs sets match-only (it wins over configuration)',
      values: { configuration: { prometheusUrl: url }, extraArgs: { 'alert-filter-match-only': '' } },
    },
    {
      name: 'proposes nothing where extraArgs names the Prometheus',
      values: { extraArgs: { 'prometheus-url': url } },
    },
    {
      name: 'proposes nothing where a KURED_* variable sets the filter',
      values: {
        configuration: { prometheusUrl: url },
        extraEnv: [{ name: 'KURED_ALERT_FILTER_REGEXP', value: '^Watchdog$' }],
      },
    },
  ])('$name', ({ values }) => {
    expect(proposeAlertFilter(values)).toBeUndefined();
  });
});
