// docs/integrations.md's kube-prometheus-stack recipe against a real Prometheus (Debian's): the
// alerts that fire by design there (Watchdog, InfoInhibitor) and the kured-ts chart's own would hold
// every node; the filter migrate-values proposes ignores them, and an alert about the workloads
// still holds the reboot. The filter goes through the agent's own flag parser, as the chart passes it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PrometheusBlocker } from '../../../src/blockers/prometheus.js';
import { parseFlags } from '../../../src/config/parse.js';
import { RECOMMENDED_ALERT_FILTER } from '../../../src/migrate/alert-filter.js';
import { migrateKuredValues } from '../../../src/migrate/kured-chart-values.js';
import { startPrometheus, type RealDaemon } from '../../fakes/real-daemon.js';

/** What a kube-prometheus-stack cluster with kured-ts's PrometheusRule fires on a quiet day, and one real alert. */
const RULES = `
groups:
  - name: general.rules
    interval: 1s
    rules:
      - alert: Watchdog
        expr: vector(1)
        labels: { severity: none }
      - alert: InfoInhibitor
        expr: vector(1)
        labels: { severity: none }
  - name: kured-ts
    interval: 1s
    rules:
      - alert: KuredTsRebootRequiredTooLong
        expr: vector(1)
        labels: { severity: warning }
  - name: kubernetes-apps
    interval: 1s
    rules:
      - alert: KubePodCrashLooping
        expr: vector(1)
        labels: { severity: warning, namespace: db }
`;
const ALL = ['InfoInhibitor', 'KubePodCrashLooping', 'KuredTsRebootRequiredTooLong', 'Watchdog'];

let prometheus: RealDaemon;

beforeAll(async () => {
  prometheus = await startPrometheus(RULES, async (at) => {
    const blocker = new PrometheusBlocker({ url: at, filter: undefined, matchOnly: false, firingOnly: true });
    return (await blocker.activeAlerts()).length === ALL.length;
  });
}, 30_000);

afterAll(async () => {
  await prometheus.stop();
});

/** The alerts that hold a node, judged by the agent configured with this --alert-filter-regexp. */
async function holding(filter: string): Promise<string[]> {
  const config = parseFlags(
    ['alert-filter-regexp', 'alert-firing-only'],
    { 'alert-filter-regexp': filter === '' ? [] : [filter], 'alert-firing-only': ['true'] },
    {},
  );
  const blocker = new PrometheusBlocker({
    url: prometheus.url,
    filter: config.alertFilterRegexp,
    matchOnly: false,
    firingOnly: config.alertFiringOnly,
  });
  return (await blocker.activeAlerts()).sort();
}

/** The filter migrate-values proposes for these kured values (its note's quoted value). */
function proposed(kured: Record<string, unknown>): string {
  const note = migrateKuredValues({
    configuration: { prometheusUrl: 'http://prometheus:9090', ...kured },
  }).notes.find((n) => n.kind === 'proposed');
  const quoted = /alertFilterRegexp: '(.*)' \(/.exec(note?.why ?? '');
  if (quoted?.[1] === undefined) throw new Error(`no proposal in ${JSON.stringify(note)}`);
  return quoted[1];
}

describe('kube-prometheus-stack and the alert filter, against a real Prometheus', () => {
  it.each([
    { name: 'without a filter every alert that fires by design holds the node', filter: '', want: ALL },
    {
      name: 'the recommended filter leaves only the alert about the workloads',
      filter: RECOMMENDED_ALERT_FILTER,
      want: ['KubePodCrashLooping'],
    },
    {
      name: 'the filter proposed for kured values without one is the recommended one',
      filter: proposed({}),
      want: ['KubePodCrashLooping'],
    },
    {
      name: "the filter proposed over kured's Watchdog-only filter keeps kured's and ignores the rest",
      filter: proposed({ alertFilterRegexp: '^Watchdog$' }),
      want: ['KubePodCrashLooping'],
    },
    {
      name: "kured's Watchdog-only filter alone lets InfoInhibitor and kured-ts's own alert hold the node",
      filter: '^Watchdog$',
      want: ['InfoInhibitor', 'KubePodCrashLooping', 'KuredTsRebootRequiredTooLong'],
    },
  ])('$name', async ({ filter, want }) => {
    expect(await holding(filter)).toEqual(want);
  });
});
