// The configuration every simulated agent runs with: kured's defaults plus the simulation's choices.
import type { Config } from '../config.js';
import { parseLabelSelector } from '../selector/label-selector.js';
import { BLOCKING_LABEL, DS_NAME, DS_NAMESPACE } from './cluster.js';

/** The knobs of simulate that reach the agents. Durations in ms. */
export interface SimAgentSettings {
  concurrency: number;
  periodMs: number;
  rebootDelayMs: number;
  /** PreferNoSchedule taint key; '' = off (kured's default). */
  taint: string;
  blockOnPdb: boolean;
  drainTimeoutMs: number;
  evictionRetryDelayMs: number;
  /** URL of the simulated Prometheus; '' = no alert blocker. */
  prometheusUrl: string;
}

export const LOCK_ANNOTATION = 'weave.works/kured-node-lock';
export const SIM_TAINT = 'weave.works/kured-node-reboot';

/** A complete Config for the agent on `nodeId`. */
export function simAgentConfig(nodeId: string, s: SimAgentSettings): Config {
  return {
    nodeId,
    periodMs: s.periodMs,
    rebootSentinel: '/var/run/reboot-required',
    rebootSentinelCommand: [],
    rebootMethod: 'command',
    rebootCommand: ['/bin/systemctl', 'reboot'],
    rebootSignal: 39,
    rebootDelayMs: s.rebootDelayMs,
    drainDelayMs: 0,
    drainTimeoutMs: s.drainTimeoutMs,
    drainGracePeriodSeconds: -1,
    drainPodSelector: [],
    skipWaitForDeleteTimeoutSeconds: 0,
    forceReboot: false,
    dsName: DS_NAME,
    dsNamespace: DS_NAMESPACE,
    lockAnnotation: LOCK_ANNOTATION,
    lockTtlMs: 0,
    lockReleaseDelayMs: 0,
    concurrency: s.concurrency,
    preferNoScheduleTaint: s.taint,
    blockingPodSelectors: [parseLabelSelector(`${BLOCKING_LABEL}=true`)],
    prometheusUrl: s.prometheusUrl,
    alertFilterRegexp: undefined,
    alertFilterMatchOnly: false,
    alertFiringOnly: false,
    window: { days: [0, 1, 2, 3, 4, 5, 6], startSecond: 0, endSecond: 86399, timeZone: 'UTC', schedule: '' },
    annotateNodes: false,
    preRebootNodeLabels: {},
    postRebootNodeLabels: {},
    notifyUrl: '',
    messageTemplateDrain: 'Draining node %s',
    messageTemplateReboot: 'Rebooting node %s',
    messageTemplateUncordon: 'Node %s rebooted & uncordoned successfully!',
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    logFormat: 'text',
    readinessGates: [],
    postRebootTimeoutMs: 30 * 60_000,
    onPostRebootTimeout: 'hold',
    waitForDaemonSetPods: false,
    rebootRetries: 3,
    onUncordonedDuringDelay: 'abort',
    blockOnPdb: s.blockOnPdb,
    evictionRetryDelayMs: s.evictionRetryDelayMs,
    hostExec: 'direct',
    kubeconfig: '',
  };
}
