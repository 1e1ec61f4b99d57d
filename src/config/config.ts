// The agent's configuration: typed, parsed once at the edge (src/cli/cli.ts), never raw strings.
import type { Matcher } from '../silence/matchers.js';
import { hideUserInfo } from '../text/redact.js';
import { redactUrl } from '../notify/notify-url.js';
import { describeProxy, type ProxySettings } from '../http/proxy.js';
import { formatLabelSelector, type Selector } from '../selector/label-selector.js';
import type { WindowConfig } from '../window/window-config.js';
import type { Budget } from './budget.js';
import type { FailureEvent, NotifyEvent } from '../notify/notifier.js';

export type { WindowConfig } from '../window/window-config.js';

/** How the drain treats a pod: evicted (default), never touched, or waited for until it completes. */
export type DrainMode = 'evict' | 'skip' | 'wait-completed';

/** One entry of the rules file. The first entry matching a pod decides (each field on its own). */
export interface DrainRule {
  /** 1-based position in the file, to name it in reasons and errors. */
  entry: number;
  /** Only pods of this namespace; undefined = any namespace. */
  namespace?: string;
  /** Only pods whose labels match; empty = every pod (of `namespace`). */
  selector: Selector;
  /** The mode it gives; undefined = it says nothing about the mode. */
  drain?: DrainMode;
  /** The order it gives; undefined = it says nothing about the order. */
  order?: number;
}

/** --wave-growth: each step of the slow start as large as the last, K more, or twice as large. */
export type WaveGrowth = { kind: 'none' } | { kind: 'linear'; step: number } | { kind: 'double' };

/**
 * --group-order: `parallel` (default) lets every group go at once; `sequential` finishes one group
 * before the next starts: in the order given (`order`), then the other groups by name, then the
 * nodes without the label.
 */
export type GroupOrder = { kind: 'parallel' } | { kind: 'sequential'; order: string[] };

/**
 * --health-check 'GROUP/VERSION/RESOURCE [NAMESPACE/]NAME: EXPR': the object read with one GET and a
 * CEL expression over it (as `self`) that must give true.
 */
export interface HealthCheck {
  /** The API group ('' for the core group, written `core` or left empty). */
  group: string;
  version: string;
  /** The resource (plural, lower case): deployments. */
  resource: string;
  /** The object's namespace; undefined for a cluster-scoped object. */
  namespace?: string;
  name: string;
  /** The CEL expression (what follows the first ": " after the name). */
  expression: string;
  /** The check as written (for reasons and `check`). */
  text: string;
}

/**
 * --node-check '[WHEN] GROUP/VERSION/RESOURCE [NAMESPACE]: EXPR': the storage system's word about this
 * node (issue 54). One LIST of the resource (in NAMESPACE, or cluster-wide) and a CEL expression over
 * it (`self`, with `self.items`) and this Node (`node`) that must give true: after the drain, before
 * the reboot (WHEN `after-drain`, the default: "no volume attached here"); before the node takes a
 * slot (`at-slot`: "the Ceph cluster is healthy", which a drained storage node itself degrades); or
 * both (`always`: "no volume whose last healthy replica is here").
 */
export interface NodeCheck {
  group: string;
  version: string;
  resource: string;
  /** undefined: the whole cluster (a cluster-scoped resource, or every namespace). */
  namespace?: string;
  expression: string;
  /** When it is judged: after the drain, before the slot (the node about to go asks), or both. */
  when: NodeCheckWhen;
  /** The check as written (for reasons and `check`). */
  text: string;
}

/** When a node check is judged (its leading word; after-drain when none). */
export type NodeCheckWhen = 'after-drain' | 'at-slot' | 'always';

/** Everything the agent needs; each field is one flag of DESIGN §3. Durations in milliseconds. */
export interface Config {
  /** --node-id: this node's name. Required for the agent. */
  nodeId: string;
  /** --period: how often the agent judges its node again when nothing wakes it (ticks jittered ±50%). Default 1h. */
  periodMs: number;
  /** --reboot-sentinel: file whose existence means reboot. Default /var/run/reboot-required. */
  rebootSentinel: string;
  /** --reboot-sentinel-command: argv run in the host; exit 0 = reboot. Default none (file sentinel). */
  rebootSentinelCommand: string[];
  /** --reboot-method: default 'command'. */
  rebootMethod: 'command' | 'signal';
  /** --reboot-command: argv. Default ['/bin/systemctl', 'reboot']. */
  rebootCommand: string[];
  /** --reboot-signal: default 39 (SIGRTMIN+5). */
  rebootSignal: number;
  /** --reboot-delay: wait after drain, before re-verify and reboot. Default 0. */
  rebootDelayMs: number;
  /** --drain-delay: wait after taking the lock before draining. Default 0. */
  drainDelayMs: number;
  /** --drain-timeout: 0 = no timeout. Default 0. */
  drainTimeoutMs: number;
  /** --drain-grace-period: seconds; -1 = each pod's own. Default -1. */
  drainGracePeriodSeconds: number;
  /** --drain-pod-selector: only pods matching are drained. Default empty (all). */
  drainPodSelector: Selector;
  /** --drain-rules: the rules file ('' = none). Its rules are read at start-up (withDrainRules). */
  drainRulesFile: string;
  /** The rules of --drain-rules, in file order; [] without the flag. */
  drainRules: readonly DrainRule[];
  /**
   * --drain-fallback: `delete` deletes the pods whose eviction was still refused when --drain-timeout
   * passed (kubectl drain --disable-eviction); `none` (default) never deletes a pod.
   */
  drainFallback: 'none' | 'delete';
  /**
   * --single-replica: `restart` restarts the Deployment of a pod the drain would evict that is its only
   * ready replica (RollingUpdate, maxSurge ≥ 1) and waits for a new pod elsewhere before the drain;
   * `off` (default) evicts it as kured does.
   */
  singleReplica: 'off' | 'restart';
  /** --single-replica-timeout: how long the drain waits for a restarted Deployment. Default 10m. */
  singleReplicaTimeoutMs: number;
  /**
   * --hold-after-drain-annotation: after the drain (before --reboot-delay) the agent waits while its
   * node carries any of these annotations, set by an external worker. Default none.
   */
  holdAfterDrainAnnotations: string[];
  /** --hold-timeout: bound for that hold; past it the cycle ends as a failed drain. Default 1h. */
  holdTimeoutMs: number;
  /**
   * --volume-detach-timeout: after the drain, the node waits until the volumes of the pods it evicted
   * are detached from it and unmounted (its status' volumesAttached and volumesInUse), at most this
   * long. 0 = no wait. Default 10m.
   */
  volumeDetachTimeoutMs: number;
  /**
   * --volume-detach-timeout-action: past the timeout, `fail` ends the cycle as a failed drain does
   * (cordon undone, slot released, quarantined naming the volumes); `reboot` reboots with them
   * attached, and the status says so. Default fail.
   */
  volumeDetachTimeoutAction: 'fail' | 'reboot';
  /**
   * --node-check (repeated): judged after the drain, within the wait for the volumes (the same
   * --volume-detach-timeout and its action bound both), and at the slot for those marked `at-slot`.
   */
  nodeChecks: NodeCheck[];
  /** --skip-wait-for-delete-timeout: seconds; pods deleting for longer are not waited for. 0 = off. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** --force-reboot: reboot even when the drain fails. Default false. */
  forceReboot: boolean;
  /**
   * --on-drain-failure: `quarantine` (default) labels a node whose drain failed and passes it over
   * until its pods change or --quarantine-retry passes; `requeue` only releases (it asks again at once).
   */
  onDrainFailure: 'requeue' | 'quarantine';
  /** --quarantine-cordon: a quarantined node stays cordoned (by us) instead of uncordoned. Default false. */
  quarantineCordon: boolean;
  /** --quarantine-retry: a quarantined node tries again after this long; 0 = only when its pods change. Default 1h. */
  quarantineRetryMs: number;
  /** --max-quarantined: more other nodes quarantined than this halts new cycles fleet-wide; undefined = off. */
  maxQuarantined: Budget | undefined;
  /**
   * --wave-start: the first this many nodes of a wave go before any other (slow start); 0 (default)
   * = --concurrency, which is no slow start at all (today's behaviour).
   */
  waveStart: number;
  /** --wave-growth: how each step of the slow start grows; none (default): one step, then --concurrency. */
  waveGrowth: WaveGrowth;
  /** --soak: a node counts toward the next step only once back and Ready this long (its own clock). Default 0. */
  soakMs: number;
  /** --max-failures: this many failed nodes in a wave halt it (a fleet pause); undefined = no budget. */
  maxFailures: Budget | undefined;
  /** --group-order: groups (--group-label) one after another, or all at once (default). */
  groupOrder: GroupOrder;
  /** --health-check: objects whose CEL expression must be true before a slot and after a reboot. */
  healthChecks: HealthCheck[];
  /** --health-check-timeout: bound for the checks after a reboot; past it the node failed. Default 5m. */
  healthCheckTimeoutMs: number;
  /** --notify-events: the kinds of notification sent. Default all. */
  notifyEvents: NotifyEvent[];
  /** --message-template-<kind> of each failure kind, with %s = node (the reason follows the text). */
  failureTemplates: Record<FailureEvent, string>;
  /** --ds-name. Default 'kured'. */
  dsName: string;
  /** --ds-namespace. Default 'kube-system'. */
  dsNamespace: string;
  /** --lock-annotation. Default 'weave.works/kured-node-lock'. */
  lockAnnotation: string;
  /** --lock-ttl: 0 = never expires. */
  lockTtlMs: number;
  /** --lock-release-delay. Default 0. */
  lockReleaseDelayMs: number;
  /**
   * --concurrency: nodes that may hold a slot at once: N, or N% of the nodes the lock's DaemonSet
   * runs on, resolved for the fleet at each decision (src/capacity/budget.ts). Default 1.
   */
  concurrency: Budget;
  /** --group-label: node label whose values form groups; '' = no groups. */
  groupLabel: string;
  /**
   * --group-concurrency: slots per group, within --concurrency: N, or N% of the group's nodes;
   * undefined (the flag's 0) = no per-group limit.
   */
  groupConcurrency: Budget | undefined;
  /**
   * --count-unavailable: nodes NotReady, unreachable or cordoned by someone else (not in a reboot
   * cycle, holding no slot) take slots of --concurrency and their group's. Default true.
   */
  countUnavailable: boolean;
  /**
   * --control-plane-last: a control-plane node (label node-role.kubernetes.io/control-plane) takes a
   * slot only when no worker waits for one or is in its reboot cycle. Default true. Whatever it says,
   * control-plane nodes go one at a time, and only while the other members of the control plane
   * (their Nodes and etcd pods) are Ready.
   */
  controlPlaneLast: boolean;
  /** --max-unhealthy-nodes: other nodes allowed unhealthy before no slot is taken; undefined = off. */
  maxUnhealthyNodes: Budget | undefined;
  /** --require-approval: wait for `kured-ts approve` before taking a slot. Default false. */
  requireApproval: boolean;
  /** --approval-ttl: an unused approval expires after this long; 0 = never. */
  approvalTtlMs: number;
  /** --history-limit: reboot cycles kept in the node's history annotation. Default 10. */
  historyLimit: number;
  /**
   * --autoscaler-protection: annotate the node against autoscaler scale-down (cluster-autoscaler,
   * Karpenter) during its cycle and --settle-time after, and against Karpenter's node repair
   * (karpenter.sh/do-not-repair) during its cycle. Default true.
   */
  autoscalerProtection: boolean;
  /** --settle-time: the autoscaler protection stays this long after a cycle ends. Default 10m. */
  settleTimeMs: number;
  /**
   * --exclude-from-lb: before the drain, label the node node.kubernetes.io/exclude-from-external-load-balancers
   * (only where absent; removed at the end of the cycle only when ours). Default true.
   */
  excludeFromLb: boolean;
  /**
   * --lb-drain-wait: after that label, wait this long before the drain when the cluster has a Service
   * of type LoadBalancer (or cannot tell). Default 2m.
   */
  lbDrainWaitMs: number;
  /** --reboot-deadline: a reboot required for longer is overdue; 0 = no deadline. */
  rebootDeadlineMs: number;
  /** --prefer-no-schedule-taint: taint key; '' = no taint (kured's default). */
  preferNoScheduleTaint: string;
  /**
   * --taint-timing: `required` (default) taints as soon as a reboot is required, blocked or not;
   * `unblocked` only once nothing blocks it (kured's timing: on lock contention, never while blocked).
   */
  taintTiming: 'required' | 'unblocked';
  /**
   * --lock-queue: `fair` (default) hands a freed slot to the waiting node whose reboot has been needed
   * longest, named by the coordinator (src/coordinator; first come while none is live); `none` to
   * whoever asks first (kured).
   */
  lockQueue: 'fair' | 'none';
  /**
   * --coordinator: follow the coordinator's queue (read its Lease and wait for its turn). Default
   * true; false never reads the Lease (the chart sets it from coordinator.enabled).
   */
  coordinator: boolean;
  /**
   * --fleetlock-url: a FleetLock server (airlock, poseidon/fleetlock) whose slot the node takes before
   * the in-cluster lock and gives back after the cycle; '' = none (default).
   */
  fleetlockUrl: string;
  /** --fleetlock-group: the FleetLock group whose slots this cluster's nodes take. Default 'default'. */
  fleetlockGroup: string;
  /** --blocking-pod-selector: each entry is one selector (commas AND); entries OR. Default none. */
  blockingPodSelectors: Selector[];
  /** --blocking-query: PromQL expressions that block while they return a series or a non-zero scalar. */
  blockingQueries: string[];
  /** --prometheus-url: '' = no alert blocker. */
  prometheusUrl: string;
  /** --alertmanager-url: '' = no silences. */
  alertmanagerUrl: string;
  /** --silence-matcher: one silence per set ({{.node}} not yet replaced). */
  silenceMatchers: Matcher[][];
  /** --silence-duration. Default 15m. */
  silenceDurationMs: number;
  /** --silence-tail. Default 5m. */
  silenceTailMs: number;
  /** --before-reboot-hook: the CronJob that is the before-reboot hook's template; '' = none. */
  beforeRebootHook: string;
  /** --after-reboot-hook: the CronJob that is the after-reboot hook's template; '' = none. */
  afterRebootHook: string;
  /** --hook-namespace: where the hooks' templates are and their Jobs go; '' = --ds-namespace. */
  hookNamespace: string;
  /** --hook-timeout. Default 10m. */
  hookTimeoutMs: number;
  /** --alert-filter-regexp: alerts whose name matches are ignored (or, with match-only, the only ones). */
  alertFilterRegexp: RegExp | undefined;
  /** --alert-filter-match-only. Default false. */
  alertFilterMatchOnly: boolean;
  /** --alert-firing-only: ignore pending alerts. Default false. */
  alertFiringOnly: boolean;
  /** --reboot-days/--start-time/--end-time/--time-zone/--reboot-schedule. */
  window: WindowConfig;
  /** --annotate-nodes: kured's progress annotations. Default false. */
  annotateNodes: boolean;
  /** --pre-reboot-node-labels. */
  preRebootNodeLabels: Record<string, string>;
  /** --post-reboot-node-labels. */
  postRebootNodeLabels: Record<string, string>;
  /** --notify-url (or converted --slack-hook-url); '' = none. */
  notifyUrl: string;
  /** --message-template-drain, with %s = node. */
  messageTemplateDrain: string;
  /** --message-template-reboot. */
  messageTemplateReboot: string;
  /** --message-template-uncordon. */
  messageTemplateUncordon: string;
  /** --metrics-host. Default '' (all interfaces). */
  metricsHost: string;
  /** --metrics-port. Default 8080. */
  metricsPort: number;
  /** --log-format. Default 'text'. */
  logFormat: 'text' | 'json';
  /** --readiness-gate: node condition types that must be True after the reboot. */
  readinessGates: string[];
  /**
   * --post-reboot-wait-taint: taint keys (or prefixes ending in '/') whose taints must be gone after
   * the reboot, besides READINESS_TAINT_PREFIX.
   */
  postRebootWaitTaints: string[];
  /** --post-reboot-timeout. Default 30m. */
  postRebootTimeoutMs: number;
  /** --on-post-reboot-timeout. Default 'hold'. */
  onPostRebootTimeout: 'hold' | 'release';
  /** --wait-for-daemonset-pods. Default false. */
  waitForDaemonSetPods: boolean;
  /** --reboot-retries. Default 3. */
  rebootRetries: number;
  /**
   * --max-reboots-per-need. Default 2: reboots one need may survive (the sentinel still asking at the
   * first check after the new boot) before the node is quarantined `reboot-loop`.
   */
  maxRebootsPerNeed: number;
  /**
   * --package-manager-wait. Default 1h: how long a node waits for its host's package manager
   * before it says so with an Event (it keeps waiting: never a reboot while a lock is held).
   */
  packageManagerWaitMs: number;
  /** --on-uncordoned-during-delay. Default 'abort'. */
  onUncordonedDuringDelay: 'abort' | 'redrain';
  /** --block-on-pdb. Default true. */
  blockOnPdb: boolean;
  /** --eviction-retry-delay. Default 5s. */
  evictionRetryDelayMs: number;
  /** HTTP_PROXY, HTTPS_PROXY and NO_PROXY (environment only, as in kured): Prometheus and notifications. */
  proxy: ProxySettings;
  /** --host-exec: 'nsenter' (privileged pod with hostPID) or 'direct'. Default 'nsenter'. */
  hostExec: 'nsenter' | 'direct';
  /** --host-root: where the host's / is seen (the chart: /host). Default '/'. */
  hostRoot: string;
  /** --kubelet-config: the kubelet's configuration file on the host; '' = not read. */
  kubeletConfig: string;
  /** --kubeconfig: '' = KUBECONFIG env or in-cluster. */
  kubeconfig: string;
}

/** kured's notification texts. */
export const DEFAULT_MESSAGE_DRAIN = 'Draining node %s';
export const DEFAULT_MESSAGE_REBOOT = 'Rebooting node %s';
export const DEFAULT_MESSAGE_UNCORDON = 'Node %s rebooted & uncordoned successfully!';

/** The texts of the failure notifications (--message-template-<kind>), %s = node; the reason follows. */
export const DEFAULT_FAILURE_MESSAGES: Readonly<Record<FailureEvent, string>> = {
  'drain-failed': 'Drain of node %s failed',
  quarantined: 'Node %s quarantined: its drain failed',
  'reboot-failed': 'Reboot of node %s failed',
  'not-back': 'Node %s not back in time after its reboot',
  'wave-halted': 'Reboot wave halted after node %s failed',
  overdue: 'Reboot of node %s is overdue',
};

/**
 * A bad command-line or environment value. `flag` is the long flag name (`--end-time`), `value`
 * the offending text; the message is the one line the CLI prints before exiting with status 2.
 */
export class UsageError extends Error {
  constructor(
    readonly flag: string,
    readonly value: string,
    readonly reason: string,
    /** The environment variable the value came from, when it did not come from the command line. */
    readonly envName?: string,
  ) {
    const from = envName === undefined ? '' : ` (from ${envName})`;
    super(`invalid value ${JSON.stringify(value)} for ${flag}${from}: ${reason}`);
    this.name = 'UsageError';
  }
}

/**
 * A value a parser refused. Parsers of lists throw it to say which element was bad; other
 * parsers may throw a plain Error and the whole value is reported.
 */
export class InvalidValueError extends Error {
  constructor(
    readonly value: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(reason, options);
    this.name = 'InvalidValueError';
  }
}

/**
 * The effective configuration as log fields, secrets redacted: notify URLs carry webhook tokens,
 * URLs may carry passwords. Selectors and regexps are shown as the text users wrote.
 */
export function redactConfig(config: Config): Record<string, unknown> {
  return {
    ...config,
    notifyUrl: redactUrl(config.notifyUrl),
    proxy: describeProxy(config.proxy),
    prometheusUrl: hideUserInfo(config.prometheusUrl),
    alertmanagerUrl: hideUserInfo(config.alertmanagerUrl),
    fleetlockUrl: hideUserInfo(config.fleetlockUrl),
    alertFilterRegexp: config.alertFilterRegexp?.source ?? '',
    drainPodSelector: formatLabelSelector(config.drainPodSelector),
    blockingPodSelectors: config.blockingPodSelectors.map((s) => formatLabelSelector(s)),
  };
}
