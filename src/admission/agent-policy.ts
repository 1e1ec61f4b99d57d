// The admission policy that confines a kured-ts agent's ServiceAccount to what the agent does: a
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, CEL) shipped with the chart. RBAC can
// say "patch nodes" and "patch this DaemonSet"; it cannot say "only my own node" or "only the lock
// annotation". This policy does, so a stolen agent token (it sits on every node's disk) can no
// longer rewrite the privileged DaemonSet's pod template, cordon or label the whole fleet, or
// approve its own reboot.
//
// Four policies, one per resource kind (nodes, the lock DaemonSet, evictions, pod deletions), so that each
// type-checks against the one kind it matches: kube-apiserver checks every expression against every
// matched kind and shows each mismatch as a warning in the policy's status.
//
// The policies take no parameter object (DESIGN §12): what differs per installation is written into
// their expressions. A ConfigMap parameter with parameterNotFoundAction Allow meant "allow
// everything" whenever the API server's parameter informer lost track of it, which kube-apiserver
// 1.32 does for good after a binding naming the kind is deleted and recreated (a reinstall;
// kubernetes/kubernetes#130887). charts/kured-ts/files/agent-admission-policy.yaml is generated from
// here by `npm run docs` with a placeholder (PLACEHOLDER) for each value; the chart puts its values
// in their place, the simulator and the tests agentPolicies(). The fake API server enforces them
// with a CEL engine (src/sim/fake-api/cel-admission.ts), so `simulate` and the integration tests send
// every agent write through them.
//
// Written for Kubernetes' typed CEL: comprehensions only over maps (labels, annotations) and lists
// (taints, userInfo.extra values), never over an object; no map or list literals whose element
// type the checker would have to infer; every optional field guarded with has().
import { dump } from 'js-yaml';
import {
  OTHER_METADATA,
  celString,
  forbid,
  mapUnchangedExcept,
  placeholder,
  same,
  withValues,
  type NamedExpression,
  type PolicySpec,
  type Validation,
} from './policy-parts.js';
import { restartPolicy } from './restart-policy.js';
import type { Config } from '../config/config.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../node/cycle.js';
import { DO_NOT_REPAIR_ANNOTATION, EXCLUDE_LB_LABEL } from '../node/cycle-marks.js';
import { autoscalerAnnotationOk, cycleMarkOk } from './node-marks.js';
import { HISTORY_ANNOTATION } from '../node/history.js';
import { APPROVAL_ANNOTATION } from '../node/approval.js';
import { REBOOT_REQUEST_ANNOTATION } from '../node/reboot-request.js';
import { AUTOSCALER_ANNOTATIONS, PROTECTION_ANNOTATION } from '../node/autoscaler.js';
import { KURED_IN_PROGRESS_ANNOTATION, KURED_REBOOT_NEEDED_ANNOTATION } from '../node/node.js';
import { STATUS_ANNOTATION } from '../node/status.js';
import { ANNOTATION_MAX_BYTES, OTHER_ANNOTATION_MAX_BYTES } from '../node/annotation-bounds.js';
import { QUARANTINE_ANNOTATION, QUARANTINE_LABEL, QUARANTINE_VALUES } from '../node/quarantine.js';
import { WAVE_NODE_LABELS, WAVE_WRITABLE, waveAnnotationRules, waveLabelRules } from './wave-policy.js';
import { maxOwnersPattern } from './max-owners.js';

/** The claim a pod-bound ServiceAccount token carries: the node the pod runs on (Kubernetes 1.30+). */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** The values each installation writes into the policies (what agentPolicyParams gives). */
export type PolicyValueKey =
  | 'serviceAccount'
  | 'requireNodeClaim'
  | 'lockDaemonSet'
  | 'lockAnnotation'
  | 'taint'
  | 'nodeLabels'
  | 'drainGracePeriod'
  | 'maxOwners'
  | 'podDelete'
  | 'deploymentRestart';

/** Value `key` as a CEL string literal (values are label keys, names and numbers: no quote, no backslash). */
function value(key: PolicyValueKey): string {
  return `'${placeholder(key)}'`;
}

/** Annotations the agent writes and removes, and those it may only remove: the same everywhere. */
const NODE_ANNOTATIONS_LIST = (): string => AGENT_NODE_ANNOTATIONS.join(',');

const IS_OUR_TAINT = (t: string): string => `(${value('taint')} != '' && ${t}.key == ${value('taint')})`;

/** Node taints: only ours (PreferNoSchedule) may come or go; every other taint stays exactly. */
const TAINTS_OK = [
  `(!has(object.spec.taints) || object.spec.taints.all(t, (${IS_OUR_TAINT('t')} && t.effect == 'PreferNoSchedule') || (has(oldObject.spec.taints) && oldObject.spec.taints.exists(o, o == t))))`,
  `(!has(oldObject.spec.taints) || oldObject.spec.taints.all(o, ${IS_OUR_TAINT('o')} || (has(object.spec.taints) && object.spec.taints.exists(t, t == o))))`,
].join(' && ');

/**
 * The quarantine label, when the agent sets or changes it, says drain-failed or reboot-loop: no other
 * word (an operator's own value on it may stay as it is).
 */
const QUARANTINE_VALUE_OK = ((): string => {
  const key = `'${QUARANTINE_LABEL}'`;
  const now = 'object.metadata.labels';
  const before = 'oldObject.metadata.labels';
  return [
    `!has(${now})`,
    `!(${key} in ${now})`,
    `${now}[${key}] in [${QUARANTINE_VALUES.map((v) => `'${v}'`).join(', ')}]`,
    `(has(${before}) && ${key} in ${before} && ${before}[${key}] == ${now}[${key}])`,
  ].join(' || ');
})();

/**
 * Each annotation the agent writes within its bound (annotation-bounds.ts), in UTF-8 bytes; a value
 * it leaves as it was may stay (one an older version wrote must not wedge the new one's writes).
 */
const ANNOTATIONS_BOUNDED = (): string => {
  const now = 'object.metadata.annotations';
  const before = 'oldObject.metadata.annotations';
  const keys = AGENT_NODE_ANNOTATIONS.map((k) => `'${k}'`).join(', ');
  const bound = Object.entries(ANNOTATION_MAX_BYTES)
    .map(([k, bytes]) => `k == '${k}' ? ${bytes} : `)
    .join('');
  return `!has(${now}) || ${now}.all(k, !(k in [${keys}]) || size(bytes(${now}[k])) <= (${bound}${OTHER_ANNOTATION_MAX_BYTES}) || (has(${before}) && k in ${before} && ${before}[k] == ${now}[k]))`;
};

/** The bounds as the denial names them. */
const BOUNDS_TEXT = (): string =>
  Object.entries(ANNOTATION_MAX_BYTES)
    .map(([k, bytes]) => `${k} ${bytes}`)
    .join(', ');

/**
 * The agent lifts only a cordon its own record says it set (issue 55): the cycle record's
 * `"cordoned":true` (its cordon, or kured's adopted), or the quarantine record's (--quarantine-cordon),
 * as the node carried it before the write. An operator's cordon (kubectl cordon, before or during a
 * cycle: the record then says false) stays.
 */
const UNCORDON_OURS = ((): string => {
  const before = 'oldObject.metadata.annotations';
  const says = (key: string): string =>
    `('${key}' in ${before} && ${before}['${key}'].contains('"cordoned":true'))`;
  return [
    `!(has(oldObject.spec.unschedulable) && oldObject.spec.unschedulable)`,
    `(has(object.spec.unschedulable) && object.spec.unschedulable)`,
    `(has(${before}) && (${says(CYCLE_ANNOTATION)} || ${says(QUARANTINE_ANNOTATION)}))`,
  ].join(' || ');
})();

/** Node spec fields besides unschedulable and taints (v1.35): all unchanged. */
const NODE_SPEC_FIELDS = ['podCIDR', 'podCIDRs', 'providerID', 'configSource', 'externalID'];
/** The agent's ServiceAccount: only its requests are judged; kubelets, controllers, operators are not. */
/** The policies judge the agent's ServiceAccount alone (the hook policies too). */
export const IS_THE_AGENT: NamedExpression = {
  name: 'is-the-kured-ts-agent',
  expression: `request.userInfo.username == ${value('serviceAccount')}`,
};

/** A lock entry as kured-ts (and kured) write it, with a real creation time (year 1970 or later). */
const LOCK_ENTRY =
  '\\{"nodeID":"[^"]*","metadata":\\{[^{}]*\\},"created":"(19[7-9][0-9]|[2-9][0-9]{3})-[^"]*","TTL":[0-9]+\\}';
/**
 * The lock values the agent writes: kured's single form, or the multi form with at most the
 * configured --concurrency as maxOwners (the placeholder is `1|2|…|C`). No manual lock, no entry
 * without a creation time, no larger maxOwners.
 */
const LOCK_FORM = `^(${LOCK_ENTRY}|\\{"maxOwners":(${placeholder('maxOwners')}),"locks":\\[(${LOCK_ENTRY}(,${LOCK_ENTRY})*)?\\]\\})$`;

/**
 * The largest lock value the agent writes (bytes): an entry is about 250 bytes with a group and a
 * wave, so 200 slots fit; every agent watches this DaemonSet, so a forged value must not be large.
 */
const LOCK_MAX_BYTES = 65_536;

/** The lock annotation's value on `obj`, is it there, and is it of LOCK_FORM? (CEL) */
function lockAnnotation(obj: string): { present: string; value: string } {
  return {
    present: `(has(${obj}.metadata.annotations) && ${value('lockAnnotation')} in ${obj}.metadata.annotations)`,
    value: `${obj}.metadata.annotations[${value('lockAnnotation')}]`,
  };
}

/** The node the request's token is bound to, or '' when it carries no claim. */
export const NODE_CLAIM = `has(request.userInfo.extra) && '${NODE_NAME_EXTRA}' in request.userInfo.extra && size(request.userInfo.extra['${NODE_NAME_EXTRA}']) > 0 ? request.userInfo.extra['${NODE_NAME_EXTRA}'][0] : ''`;

/** A policy judging the agent's requests of one resource, as its three policies all are. */
function agentPolicy(
  rule: PolicySpec['matchConstraints']['resourceRules'][number],
  variables: NamedExpression[],
  validations: Validation[],
): PolicySpec {
  return {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule] },
    matchConditions: [IS_THE_AGENT],
    variables,
    validations,
  };
}

/** The policy on Nodes: only its own node, and there only what kured-ts owns. */
function nodesPolicy(): PolicySpec {
  return agentPolicy(
    { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] },
    [{ name: 'nodeClaim', expression: NODE_CLAIM }],
    [
      forbid(
        `variables.nodeClaim == '' ? ${value('requireNodeClaim')} != 'true' : variables.nodeClaim == object.metadata.name`,
        `variables.nodeClaim == '' ? 'the kured-ts agent token carries no node claim (${NODE_NAME_EXTRA}): no node may be changed with it' : 'the kured-ts agent on node ' + variables.nodeClaim + ' may change only its own node, not ' + object.metadata.name`,
      ),
      forbid(
        `${NODE_SPEC_FIELDS.map((f) => same(`spec.${f}`)).join(' && ')} && ${OTHER_METADATA.map((f) => same(`metadata.${f}`)).join(' && ')}`,
        `'the kured-ts agent may change only spec.unschedulable, its taint, its labels and its annotations of node ' + object.metadata.name`,
      ),
      forbid(
        UNCORDON_OURS,
        `'the kured-ts agent may lift only a cordon its cycle or quarantine record says it set (not one someone else set) on node ' + object.metadata.name`,
      ),
      forbid(
        TAINTS_OK,
        `'the kured-ts agent may add or remove only its own PreferNoSchedule taint (' + ${value('taint')} + ') on node ' + object.metadata.name`,
      ),
      forbid(
        // the load-balancer exclusion label is judged further by cycleMarkOk
        mapUnchangedExcept('metadata.labels', `${value('nodeLabels')} + ',${EXCLUDE_LB_LABEL}'`),
        `'the kured-ts agent may change only the labels ' + ${value('nodeLabels')} + ' of node ' + object.metadata.name`,
      ),
      forbid(
        QUARANTINE_VALUE_OK,
        `'the kured-ts agent may set the label ${QUARANTINE_LABEL} only to ${QUARANTINE_VALUES.join(' or ')} on node ' + object.metadata.name`,
      ),
      ...waveLabelRules(forbid, celString),
      forbid(
        AUTOSCALER_ANNOTATIONS.map(autoscalerAnnotationOk).join(' && '),
        `'the kured-ts agent may add ${AUTOSCALER_ANNOTATIONS.join(' and ')} only where absent, as "true", and remove only those it added, of node ' + object.metadata.name`,
      ),
      forbid(
        `${cycleMarkOk('labels', EXCLUDE_LB_LABEL, 'lbExcludedAt')} && ${cycleMarkOk('annotations', DO_NOT_REPAIR_ANNOTATION, 'doNotRepair')}`,
        `'the kured-ts agent may add ${EXCLUDE_LB_LABEL} and ${DO_NOT_REPAIR_ANNOTATION} only where absent, as "true", with the cycle record naming them, and remove only those its record names, of node ' + object.metadata.name`,
      ),
      forbid(
        mapUnchangedExcept(
          'metadata.annotations',
          `'${NODE_ANNOTATIONS_LIST()}'`,
          `'${REMOVABLE_ANNOTATIONS.join(',')}'`,
        ),
        `'the kured-ts agent may change only the annotations ${NODE_ANNOTATIONS_LIST()} (and remove ${REMOVABLE_ANNOTATIONS.join(', ')}) of node ' + object.metadata.name`,
      ),
      forbid(
        ANNOTATIONS_BOUNDED(),
        `'the kured-ts agent writes each of its annotations within its bound in bytes (${BOUNDS_TEXT()}, others ${OTHER_ANNOTATION_MAX_BYTES}) on node ' + object.metadata.name`,
      ),
    ],
  );
}

/** The policy on DaemonSets: only the lock annotation of the lock DaemonSet, in kured's form, and the wave's. */
function lockPolicy(): PolicySpec {
  const now = lockAnnotation('object');
  const before = lockAnnotation('oldObject');
  return agentPolicy(
    { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['daemonsets'] },
    [],
    [
      forbid(
        `object.metadata.namespace + '/' + object.metadata.name == ${value('lockDaemonSet')} && ${same('spec')} && ${same('metadata.labels')} && ${OTHER_METADATA.map((f) => same(`metadata.${f}`)).join(' && ')} && ${mapUnchangedExcept('metadata.annotations', `${value('lockAnnotation')} + '${WAVE_WRITABLE}'`)}`,
        `'the kured-ts agent may change only the annotation ' + ${value('lockAnnotation')} + ' (and its wave\\'s ${WAVE_WRITABLE.slice(1).replace(',', ' and halt ')}) of DaemonSet ' + ${value('lockDaemonSet')} + ', not of ' + object.metadata.namespace + '/' + object.metadata.name + ' or anything else'`,
      ),
      // a value not of this form (an operator's manual lock, garbage) may stay as it is or be
      // replaced by one of it; never written by the agent where the lock was of it
      forbid(
        `!${now.present} || size(bytes(${now.value})) <= ${LOCK_MAX_BYTES} || (${before.present} && ${before.value} == ${now.value})`,
        `'the kured-ts agent writes the lock within ${LOCK_MAX_BYTES} bytes'`,
      ),
      forbid(
        `!${now.present} || ${now.value}.matches(${celString(LOCK_FORM)}) || (${before.present} && !${before.value}.matches(${celString(LOCK_FORM)}))`,
        `'the kured-ts agent writes the lock only in kured\\'s form, every slot with its creation time and maxOwners at most --concurrency (' + ${value('maxOwners')} + '): no manual lock, no larger lock'`,
      ),
      ...waveAnnotationRules(forbid, celString),
    ],
  );
}

/**
 * The policy on evictions: only with the configured grace period. The rest of the Eviction is not
 * judged: the precondition on the pod's UID that every eviction of the agent names (issue 44), and a
 * dry run (the PDB pre-flight), can only narrow what is evicted.
 */
function evictionPolicy(): PolicySpec {
  const grace = value('drainGracePeriod');
  return agentPolicy(
    { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods/eviction'] },
    [],
    [
      forbid(
        `${grace} == '-1' ? !has(object.deleteOptions) || !has(object.deleteOptions.gracePeriodSeconds) : has(object.deleteOptions) && has(object.deleteOptions.gracePeriodSeconds) && string(object.deleteOptions.gracePeriodSeconds) == ${grace}`,
        `'the kured-ts agent evicts with the grace period of its configuration (' + ${grace} + ', -1 = the grace period of the pod), not another'`,
      ),
    ],
  );
}

/**
 * The policy on pod deletions (--drain-fallback delete): none at all unless the fallback is
 * configured (podDelete 'true'), and then only of pods bound to the agent's own node, as the node
 * claim of its pod-bound token names it. RBAC grants `delete pods` cluster-wide when the fallback is
 * on; this is what keeps a stolen token from deleting the fleet's pods.
 */
function podDeletePolicy(): PolicySpec {
  const enabled = `${value('podDelete')} == 'true'`;
  return agentPolicy(
    { apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['pods'] },
    [{ name: 'nodeClaim', expression: NODE_CLAIM }],
    [
      forbid(
        enabled,
        `'the kured-ts agent deletes no pod: --drain-fallback is not delete in this installation'`,
      ),
      forbid(
        `variables.nodeClaim != '' && has(oldObject.spec.nodeName) && oldObject.spec.nodeName == variables.nodeClaim`,
        `variables.nodeClaim == '' ? 'the kured-ts agent token carries no node claim (${NODE_NAME_EXTRA}): no pod may be deleted with it' : 'the kured-ts agent on node ' + variables.nodeClaim + ' may delete only pods bound to its own node, not ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + (has(oldObject.spec.nodeName) ? ' on node ' + oldObject.spec.nodeName : ' (not bound to a node)')`,
      ),
    ],
  );
}

/** The policies by the suffix of their names, with placeholders for the values (what the chart ships). */
export function agentPolicySpecs(): Record<PolicyKind, PolicySpec> {
  return {
    nodes: nodesPolicy(),
    lock: lockPolicy(),
    eviction: evictionPolicy(),
    pods: podDeletePolicy(),
    deployments: restartPolicy(IS_THE_AGENT),
  };
}

/** The five policies, one per resource kind. */
export type PolicyKind = 'nodes' | 'lock' | 'eviction' | 'pods' | 'deployments';
export const POLICY_KINDS: readonly PolicyKind[] = ['nodes', 'lock', 'eviction', 'pods', 'deployments'];

/** The policies of an installation: the shipped specs with its values. */
export function agentPolicies(values: Record<PolicyValueKey, string>): Record<PolicyKind, PolicySpec> {
  return withValues(agentPolicySpecs(), values);
}

/** What the parameters depend on: the agent's configuration and where its ServiceAccount lives. */
export type PolicyConfig = Pick<
  Config,
  | 'dsNamespace'
  | 'dsName'
  | 'lockAnnotation'
  | 'preferNoScheduleTaint'
  | 'preRebootNodeLabels'
  | 'postRebootNodeLabels'
  | 'drainGracePeriodSeconds'
  | 'concurrency'
  | 'drainFallback'
  | 'singleReplica'
>;

export interface PolicyTarget {
  /** The agent's ServiceAccount. */
  serviceAccount: { namespace: string; name: string };
  /** Refuse node writes from a token without the node claim (before Kubernetes 1.30). Default true. */
  requireNodeClaim?: boolean;
}

/**
 * The node annotations the agent may only remove: an operator's, used up by a reboot (an approval,
 * an admin's reboot request). Never written: a stolen token cannot approve or request a reboot.
 */
const REMOVABLE_ANNOTATIONS = [APPROVAL_ANNOTATION, REBOOT_REQUEST_ANNOTATION];

/** The node annotations the agent writes (and removes). */
export const AGENT_NODE_ANNOTATIONS = [
  STATUS_ANNOTATION,
  CYCLE_ANNOTATION,
  HISTORY_ANNOTATION,
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
  QUARANTINE_ANNOTATION,
  PROTECTION_ANNOTATION,
  // each further judged by autoscalerAnnotationOk
  ...AUTOSCALER_ANNOTATIONS,
  // judged further by cycleMarkOk
  DO_NOT_REPAIR_ANNOTATION,
];

/** The values of an installation, for the placeholders of the policies (lists comma-separated). */
export function agentPolicyParams(
  config: PolicyConfig,
  target: PolicyTarget,
): Record<PolicyValueKey, string> {
  const labels = [
    CYCLE_LABEL,
    QUARANTINE_LABEL,
    ...WAVE_NODE_LABELS,
    ...Object.keys(config.preRebootNodeLabels),
    ...Object.keys(config.postRebootNodeLabels),
  ];
  const { namespace, name } = target.serviceAccount;
  return {
    serviceAccount: `system:serviceaccount:${namespace}:${name}`,
    requireNodeClaim: String(target.requireNodeClaim ?? true),
    lockDaemonSet: `${config.dsNamespace}/${config.dsName}`,
    lockAnnotation: config.lockAnnotation,
    taint: config.preferNoScheduleTaint,
    nodeLabels: [...new Set(labels)].join(','),
    drainGracePeriod: String(config.drainGracePeriodSeconds),
    maxOwners: maxOwnersPattern(config),
    podDelete: String(config.drainFallback === 'delete'),
    deploymentRestart: String(config.singleReplica === 'restart'),
  };
}

/**
 * The specs as the chart ships them (charts/kured-ts/files/agent-admission-policy.yaml).
 * @public `npm run docs` (scripts/docs.mjs) writes that file with it.
 */
export function renderPolicySpecYaml(): string {
  const header = [
    '# Generated from src/admission/agent-policy.ts by `npm run docs`: do not edit.',
    '# The specs of the ValidatingAdmissionPolicies templates/admission-policy.yaml renders, one per',
    '# resource kind; templates/admission-policy.yaml puts the values in place of __KURED_TS_*__.',
  ].join('\n');
  return `${header}\n${dump(agentPolicySpecs(), { lineWidth: -1, noRefs: true })}`;
}
