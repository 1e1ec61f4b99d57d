// The blocker registry: which blockers run, in which order, for a configuration.
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import type { Kube } from '../kube/kube.js';
import type { NodeOps } from '../node/node.js';
import type { Blocker } from './blocker.js';
import { ControlPlaneBlocker } from './control-plane.js';
import { PauseBlocker } from './pause.js';
import { PdbBlocker } from './pdb.js';
import { PodsBlocker } from './pods.js';
import { PrometheusBlocker, type PrometheusBlockerOptions } from './prometheus.js';
import type { SilenceApi } from '../silence/alertmanager.js';
import { otherNodesCover } from '../silence/cover.js';
import type { Matcher } from '../silence/matchers.js';
import { QueryBlocker } from './prometheus-query.js';
import { QuarantineBlocker } from './quarantine.js';
import { PackageManagerBlocker } from './package-manager.js';
import type { HostFiles } from '../host/host.js';
import { RebootLoopBlocker } from './reboot-loop.js';
import { HealthCheckBlocker, HealthChecks } from './health-check.js';
import { NodeCheckBlocker, NodeChecks } from './node-check.js';
import type { CelEvaluator } from '../cel/cel.js';
import { WorkerCel } from '../cel/worker-cel.js';

export type BlockerConfig = Pick<
  Config,
  | 'nodeId'
  | 'dsName'
  | 'dsNamespace'
  | 'prometheusUrl'
  | 'alertFilterRegexp'
  | 'alertFilterMatchOnly'
  | 'alertFiringOnly'
  | 'blockingPodSelectors'
  | 'blockOnPdb'
  | 'drainPodSelector'
  | 'drainRules'
  | 'drainGracePeriodSeconds'
  | 'singleReplica'
  | 'quarantineRetryMs'
  | 'proxy'
  | 'blockingQueries'
  | 'packageManagerWaitMs'
  | 'healthChecks'
  | 'nodeChecks'
  | 'silenceMatchers'
>;

/**
 * pause (always), reboot-loop (always: a node quarantined reboot-loop), quarantine (always: the node's own label says whether it holds), control-plane
 * (always: judged for a
 * control-plane node only, at the slot and again before the reboot), package-manager (where the
 * host can be read: before the lock and again before the reboot), prometheus (with --prometheus-url) and one
 * prometheus-query per --blocking-query, pods
 * (with --blocking-pod-selector), pdb (unless --block-on-pdb=false), health-check (with
 * --health-check: `io.checks` when the caller shares them, as the agent does with its soak), node-check
 * (with an at-slot --node-check).
 * firstBlock() evaluates them in this order.
 */
export function createBlockers(
  config: BlockerConfig,
  io: {
    kube: Kube;
    node: NodeOps;
    clock: Clock;
    checks?: HealthChecks | undefined;
    /** The node checks when the caller shares them (the agent does with its wait after the drain). */
    nodeChecks?: NodeChecks | undefined;
    /** Where the checks' CEL runs when they are not given: default WorkerCel. */
    cel?: CelEvaluator;
    host?: HostFiles | undefined;
    /** --alertmanager-url: our silences for other nodes' cycles cover alerts the blocker then does not count. */
    alertmanager?: SilenceApi | undefined;
  },
): Blocker[] {
  const { kube, node, clock, host } = io;
  const nodeId = config.nodeId;
  const blockers: Blocker[] = [
    new PauseBlocker({ kube, node, dsNamespace: config.dsNamespace, dsName: config.dsName }),
    new RebootLoopBlocker(node),
    new QuarantineBlocker({ kube, node, nodeId, clock, retryMs: config.quarantineRetryMs }),
  ];
  blockers.push(new ControlPlaneBlocker({ kube, nodeId: config.nodeId }));
  if (host !== undefined) {
    blockers.push(new PackageManagerBlocker({ host, clock, waitMs: config.packageManagerWaitMs }));
  }
  if (config.prometheusUrl !== '') {
    blockers.push(
      new PrometheusBlocker({
        url: config.prometheusUrl,
        filter: config.alertFilterRegexp,
        matchOnly: config.alertFilterMatchOnly,
        firingOnly: config.alertFiringOnly,
        proxy: config.proxy,
        ...coverOf(io.alertmanager, nodeId, config.silenceMatchers),
      }),
    );
    for (const query of config.blockingQueries) {
      blockers.push(new QueryBlocker({ url: config.prometheusUrl, query, proxy: config.proxy }));
    }
  }
  if (config.blockingPodSelectors.length > 0) {
    blockers.push(new PodsBlocker({ kube, nodeId: config.nodeId, selectors: config.blockingPodSelectors }));
  }
  if (config.blockOnPdb) {
    blockers.push(
      new PdbBlocker({
        kube,
        nodeId: config.nodeId,
        drainPodSelector: config.drainPodSelector,
        drainRules: config.drainRules,
        drainGracePeriodSeconds: config.drainGracePeriodSeconds,
        singleReplicaRestart: config.singleReplica === 'restart',
      }),
    );
  }
  return [...blockers, ...checkBlockers(config, io)];
}

/** The alert blocker's cover by our silences for other nodes, with --alertmanager-url and --silence-matcher. */
function coverOf(
  api: SilenceApi | undefined,
  nodeId: string,
  sets: readonly (readonly Matcher[])[],
): Pick<PrometheusBlockerOptions, 'cover'> {
  return api === undefined ? {} : { cover: (signal) => otherNodesCover(api, nodeId, sets, signal) };
}

/** health-check (with --health-check) and node-check (with an at-slot --node-check). */
function checkBlockers(config: BlockerConfig, io: Parameters<typeof createBlockers>[1]): Blocker[] {
  const cel = io.cel ?? new WorkerCel();
  const { kube } = io;
  const blockers: Blocker[] = [];
  if (config.healthChecks.length > 0)
    blockers.push(new HealthCheckBlocker(io.checks ?? new HealthChecks(kube, config.healthChecks, cel)));
  if (config.nodeChecks.some((c) => c.when !== 'after-drain')) {
    const checks =
      io.nodeChecks ?? new NodeChecks({ kube, nodeId: config.nodeId, checks: config.nodeChecks, cel });
    blockers.push(new NodeCheckBlocker(checks));
  }
  return blockers;
}
