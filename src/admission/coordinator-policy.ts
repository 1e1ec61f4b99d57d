// The admission policy that confines the coordinator's ServiceAccount (src/coordinator) to what the
// coordinator does. RBAC lets it patch every Node and create Leases in the lock's namespace (a
// create cannot be limited by resourceNames: the name is in the body); it cannot say "only the turn
// annotation" or "only its own Lease". These policies do: on a Node the coordinator may set or
// remove kured-ts.dev/lock-turn and change nothing else, and it may create and update only its own
// Lease. A stolen coordinator token can then reorder the queue (which grants nothing: the agents
// still take their slots under the lock's rules), but not cordon, label or taint a node, nor create
// another component's leader-election Lease in the lock's namespace (often kube-system).
//
// Built as the agent's policies are (agent-policy.ts): one policy per resource kind, no parameter
// object, a placeholder per value. charts/kured-ts/files/coordinator-admission-policy.yaml is
// generated from here by `npm run docs`; the chart puts its values in place of the placeholders.
import { dump } from 'js-yaml';
import { coordinatorLeaseName } from '../queue/coordinator-lease.js';
import { TURN_ANNOTATION } from '../queue/turn.js';
import {
  OTHER_METADATA,
  forbid,
  mapUnchangedExcept,
  placeholder,
  same,
  withValues,
  type NamedExpression,
  type PolicySpec,
  type Validation,
} from './agent-policy.js';

/** The values each installation writes into the coordinator's policies. */
export type CoordinatorPolicyValueKey = 'coordinatorServiceAccount' | 'coordinatorLease';

/** The coordinator's policies, by the suffix of their names. */
export type CoordinatorPolicyKind = 'nodes' | 'lease';
export const COORDINATOR_POLICY_KINDS: readonly CoordinatorPolicyKind[] = ['nodes', 'lease'];

/** Value `key` as a CEL string literal (names only: no quote, no backslash). */
function value(key: CoordinatorPolicyValueKey): string {
  return `'${placeholder(key)}'`;
}

/** The coordinator's ServiceAccount: only its requests are judged (the agents have their own policies). */
const IS_THE_COORDINATOR: NamedExpression = {
  name: 'is-the-kured-ts-coordinator',
  expression: `request.userInfo.username == ${value('coordinatorServiceAccount')}`,
};

function coordinatorPolicy(
  rule: PolicySpec['matchConstraints']['resourceRules'][number],
  validations: Validation[],
): PolicySpec {
  return {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [rule] },
    matchConditions: [IS_THE_COORDINATOR],
    variables: [],
    validations,
  };
}

/** On Nodes: the turn annotation only; the whole spec (cordon, taints), labels and the rest unchanged. */
function nodesPolicy(): PolicySpec {
  return coordinatorPolicy(
    { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] },
    [
      forbid(
        same('spec'),
        `'the kured-ts coordinator may not change the spec of node ' + object.metadata.name + ' (no cordon, no taint): it names turns, the agents act'`,
      ),
      forbid(
        [same('metadata.labels'), ...OTHER_METADATA.map((f) => same(`metadata.${f}`))].join(' && '),
        `'the kured-ts coordinator may not change the labels, owners or finalizers of node ' + object.metadata.name`,
      ),
      forbid(
        mapUnchangedExcept('metadata.annotations', `'${TURN_ANNOTATION}'`),
        `'the kured-ts coordinator may change only the annotation ${TURN_ANNOTATION} of node ' + object.metadata.name`,
      ),
    ],
  );
}

/** On Leases: its own, created and renewed; no other Lease of the namespace. */
function leasePolicy(): PolicySpec {
  const lease = value('coordinatorLease');
  return coordinatorPolicy(
    {
      apiGroups: ['coordination.k8s.io'],
      apiVersions: ['v1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['leases'],
    },
    [
      forbid(
        `object.metadata.namespace + '/' + object.metadata.name == ${lease}`,
        `'the kured-ts coordinator may create and update only its own Lease ' + ${lease} + ', not ' + object.metadata.namespace + '/' + object.metadata.name`,
      ),
    ],
  );
}

/** The policies by the suffix of their names, with placeholders for the values (what the chart ships). */
export function coordinatorPolicySpecs(): Record<CoordinatorPolicyKind, PolicySpec> {
  return { nodes: nodesPolicy(), lease: leasePolicy() };
}

/** The policies of an installation: the shipped specs with its values. */
export function coordinatorPolicies(
  values: Record<CoordinatorPolicyValueKey, string>,
): Record<CoordinatorPolicyKind, PolicySpec> {
  return withValues(coordinatorPolicySpecs(), values);
}

/** The values of an installation: the coordinator's ServiceAccount and the lock it keeps the queue of. */
export function coordinatorPolicyParams(
  lock: { dsNamespace: string; dsName: string },
  serviceAccount: { namespace: string; name: string },
): Record<CoordinatorPolicyValueKey, string> {
  return {
    coordinatorServiceAccount: `system:serviceaccount:${serviceAccount.namespace}:${serviceAccount.name}`,
    coordinatorLease: `${lock.dsNamespace}/${coordinatorLeaseName(lock.dsName)}`,
  };
}

/**
 * The specs as the chart ships them (charts/kured-ts/files/coordinator-admission-policy.yaml).
 * @public `npm run docs` (scripts/docs.mjs) writes that file with it.
 */
export function renderCoordinatorPolicySpecYaml(): string {
  const header = [
    '# Generated from src/admission/coordinator-policy.ts by `npm run docs`: do not edit.',
    "# The specs of the coordinator's ValidatingAdmissionPolicies, one per resource kind;",
    '# templates/admission-policy.yaml puts the values in place of __KURED_TS_*__.',
  ].join('\n');
  return `${header}\n${dump(coordinatorPolicySpecs(), { lineWidth: -1, noRefs: true })}`;
}
