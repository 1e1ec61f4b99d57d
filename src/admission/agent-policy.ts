// The admission policy that confines a kured-ts agent's ServiceAccount to what the agent does: a
// ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, CEL) shipped with the chart. RBAC can
// say "patch nodes" and "patch this DaemonSet"; it cannot say "only my own node" or "only the lock
// annotation". This policy does, so a stolen agent token (it sits on every node's disk) can no
// longer rewrite the privileged DaemonSet's pod template, cordon or label the whole fleet, or
// approve its own reboot.
//
// The spec is static (charts/kured-ts/files/agent-admission-policy.yaml is generated from here by
// `npm run docs`); what differs per installation comes from a ConfigMap of parameters
// (agentPolicyParams), which the chart renders from its values and the simulator from the agents'
// configuration. The fake API server enforces the same spec with a CEL engine (src/sim/fake-api/
// cel-admission.ts), so `simulate` and the integration tests send every agent write through it.
//
// Written for Kubernetes' typed CEL: comprehensions only over maps (labels, annotations) and lists
// (taints, userInfo.extra values), never over an object; no map or list literals whose element
// type the checker would have to infer; every optional field guarded with has().
import { dump } from 'js-yaml';
import type { Config } from '../config/config.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../node/cycle.js';
import { HISTORY_ANNOTATION } from '../node/history.js';
import { APPROVAL_ANNOTATION } from '../node/approval.js';
import { KURED_IN_PROGRESS_ANNOTATION, KURED_REBOOT_NEEDED_ANNOTATION } from '../node/node.js';
import { STATUS_ANNOTATION } from '../node/status.js';

/** The claim a pod-bound ServiceAccount token carries: the node the pod runs on (Kubernetes 1.30+). */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** One CEL expression with a name (variables, match conditions). */
export interface NamedExpression {
  name: string;
  expression: string;
}

/** A validation as the API has it. */
export interface Validation {
  expression: string;
  messageExpression: string;
  reason: 'Forbidden';
}

/** The spec of a ValidatingAdmissionPolicy, as far as kured-ts uses it. */
export interface PolicySpec {
  failurePolicy: 'Fail' | 'Ignore';
  paramKind: { apiVersion: string; kind: string };
  matchConstraints: {
    resourceRules: {
      apiGroups: string[];
      apiVersions: string[];
      operations: string[];
      resources: string[];
    }[];
  };
  matchConditions: NamedExpression[];
  variables: NamedExpression[];
  validations: Validation[];
}

/** `has(object.F) == has(oldObject.F) && (!has(object.F) || object.F == oldObject.F)`: F unchanged. */
function same(field: string): string {
  const now = `object.${field}`;
  const before = `oldObject.${field}`;
  return `(has(${now}) == has(${before}) && (!has(${now}) || ${now} == ${before}))`;
}

/** Is `key` in the comma-separated list params.data[list]? */
function listed(list: string, key: string): string {
  return `(',' + params.data.${list} + ',').contains(',' + ${key} + ',')`;
}

/**
 * Every key of map F is unchanged, except keys in the `writable` list (added, changed or removed
 * freely) and keys in the `removable` list (may only disappear).
 */
function mapUnchangedExcept(field: string, writable: string, removable?: string): string {
  const now = `object.${field}`;
  const before = `oldObject.${field}`;
  const kept = (m: string, other: string, k: string): string =>
    `(has(${other}) && ${k} in ${other} && ${other}[${k}] == ${m}[${k}])`;
  const mayGo = removable === undefined ? '' : ` || ${listed(removable, 'k')}`;
  return [
    `(!has(${now}) || ${now}.all(k, ${listed(writable, 'k')} || ${kept(now, before, 'k')}))`,
    `(!has(${before}) || ${before}.all(k, ${listed(writable, 'k')}${mayGo} || (has(${now}) && k in ${now})))`,
  ].join(' && ');
}

const IS_OUR_TAINT = (t: string): string => `(params.data.taint != '' && ${t}.key == params.data.taint)`;

/** Node taints: only ours (PreferNoSchedule) may come or go; every other taint stays exactly. */
const TAINTS_OK = [
  `(!has(object.spec.taints) || object.spec.taints.all(t, (${IS_OUR_TAINT('t')} && t.effect == 'PreferNoSchedule') || (has(oldObject.spec.taints) && oldObject.spec.taints.exists(o, o == t))))`,
  `(!has(oldObject.spec.taints) || oldObject.spec.taints.all(o, ${IS_OUR_TAINT('o')} || (has(object.spec.taints) && object.spec.taints.exists(t, t == o))))`,
].join(' && ');

/** Node spec fields besides unschedulable and taints (v1.35): all unchanged. */
const NODE_SPEC_FIELDS = ['podCIDR', 'podCIDRs', 'providerID', 'configSource', 'externalID'];
/** Metadata the agent never writes, on either object. */
const OTHER_METADATA = ['ownerReferences', 'finalizers'];

/** The policy's spec: the same for every installation (parameters come from the ConfigMap). */
export function agentPolicySpec(): PolicySpec {
  return {
    failurePolicy: 'Fail',
    paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
    matchConstraints: {
      resourceRules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] },
        { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['daemonsets'] },
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods/eviction'] },
      ],
    },
    // Only the agent's ServiceAccount is judged: kubelets, controllers and operators are not.
    matchConditions: [
      {
        name: 'is-the-kured-ts-agent',
        expression:
          "has(params.data) && 'serviceAccount' in params.data && request.userInfo.username == params.data.serviceAccount",
      },
    ],
    variables: [
      {
        name: 'nodeClaim',
        expression: `has(request.userInfo.extra) && '${NODE_NAME_EXTRA}' in request.userInfo.extra && size(request.userInfo.extra['${NODE_NAME_EXTRA}']) > 0 ? request.userInfo.extra['${NODE_NAME_EXTRA}'][0] : ''`,
      },
      { name: 'isNode', expression: "request.resource.resource == 'nodes'" },
      { name: 'isLock', expression: "request.resource.resource == 'daemonsets'" },
      {
        name: 'isEviction',
        expression: "request.resource.resource == 'pods' && request.subResource == 'eviction'",
      },
    ],
    validations: [
      {
        expression: `!variables.isNode || (variables.nodeClaim == '' ? params.data.requireNodeClaim != 'true' : variables.nodeClaim == object.metadata.name)`,
        messageExpression: `variables.nodeClaim == '' ? 'the kured-ts agent token carries no node claim (${NODE_NAME_EXTRA}): no node may be changed with it' : 'the kured-ts agent on node ' + variables.nodeClaim + ' may change only its own node, not ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isNode || (${NODE_SPEC_FIELDS.map((f) => same(`spec.${f}`)).join(' && ')} && ${OTHER_METADATA.map((f) => same(`metadata.${f}`)).join(' && ')})`,
        messageExpression: `'the kured-ts agent may change only spec.unschedulable, its taint, its labels and its annotations of node ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isNode || (${TAINTS_OK})`,
        messageExpression: `'the kured-ts agent may add or remove only its own PreferNoSchedule taint (' + params.data.taint + ') on node ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isNode || (${mapUnchangedExcept('metadata.labels', 'nodeLabels')})`,
        messageExpression: `'the kured-ts agent may change only the labels ' + params.data.nodeLabels + ' of node ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isNode || (${mapUnchangedExcept('metadata.annotations', 'nodeAnnotations', 'removableNodeAnnotations')})`,
        messageExpression: `'the kured-ts agent may change only the annotations ' + params.data.nodeAnnotations + ' (and remove ' + params.data.removableNodeAnnotations + ') of node ' + object.metadata.name`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isLock || (object.metadata.namespace + '/' + object.metadata.name == params.data.lockDaemonSet && ${same('spec')} && ${same('metadata.labels')} && ${OTHER_METADATA.map((f) => same(`metadata.${f}`)).join(' && ')} && ${mapUnchangedExcept('metadata.annotations', 'lockAnnotation')})`,
        messageExpression: `'the kured-ts agent may change only the annotation ' + params.data.lockAnnotation + ' of DaemonSet ' + params.data.lockDaemonSet + ', not of ' + object.metadata.namespace + '/' + object.metadata.name + ' or anything else'`,
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isEviction || (params.data.drainGracePeriod == '-1' ? !has(object.deleteOptions) || !has(object.deleteOptions.gracePeriodSeconds) : has(object.deleteOptions) && has(object.deleteOptions.gracePeriodSeconds) && string(object.deleteOptions.gracePeriodSeconds) == params.data.drainGracePeriod)`,
        messageExpression: `'the kured-ts agent evicts with the grace period of its configuration (' + params.data.drainGracePeriod + ', -1 = the grace period of the pod), not another'`,
        reason: 'Forbidden',
      },
    ],
  };
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
>;

export interface PolicyTarget {
  /** The agent's ServiceAccount. */
  serviceAccount: { namespace: string; name: string };
  /** Refuse node writes from a token without the node claim (before Kubernetes 1.30). Default true. */
  requireNodeClaim?: boolean;
}

/** The node annotations the agent writes (and removes). */
export const AGENT_NODE_ANNOTATIONS = [
  STATUS_ANNOTATION,
  CYCLE_ANNOTATION,
  HISTORY_ANNOTATION,
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
];

/** The parameters ConfigMap's data: every list comma-separated (label keys cannot contain a comma). */
export function agentPolicyParams(config: PolicyConfig, target: PolicyTarget): Record<string, string> {
  const labels = [
    CYCLE_LABEL,
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
    nodeAnnotations: AGENT_NODE_ANNOTATIONS.join(','),
    removableNodeAnnotations: APPROVAL_ANNOTATION,
    drainGracePeriod: String(config.drainGracePeriodSeconds),
  };
}

/** The spec as the chart ships it (charts/kured-ts/files/agent-admission-policy.yaml). */
export function renderPolicySpecYaml(): string {
  const header = [
    '# Generated from src/admission/agent-policy.ts by `npm run docs`: do not edit.',
    '# The spec of the ValidatingAdmissionPolicy templates/admission-policy.yaml renders.',
  ].join('\n');
  return `${header}\n${dump(agentPolicySpec(), { lineWidth: -1, noRefs: true })}`;
}
