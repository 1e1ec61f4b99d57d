// The admission policies that confine the coordinator's ServiceAccount (src/coordinator) to what the
// coordinator does, and its Lease to the coordinator. RBAC lets it patch every Node and create Leases
// in the lock's namespace (a create cannot be limited by resourceNames: the name is in the body); it
// cannot say "only the turn annotation", "only its own Lease" or "only values of this shape". These
// policies do: on a Node the coordinator may set the turn annotation kured-ts.dev/lock-turn (one of
// its two JSON forms, a few hundred bytes) or remove it, and change nothing else; it may create and
// update only its own Lease, with a lease duration of 1 to 60 s, a holder of at most 128 characters,
// and of its annotations only its advice (kured-ts.dev/fleet-advice, a JSON object of at most 2048
// bytes); and nobody else may create or update that Lease (an admin may delete it). A stolen
// coordinator token can then reorder the queue and hold it back for as long as it keeps the Lease
// renewed (which grants nothing: the agents still take their slots under the lock's rules), but not
// cordon, label or taint a node, hold the Lease for years with one write, write megabytes that the
// agents read and copy into their statuses, nor create another component's leader-election Lease in
// the lock's namespace (often kube-system); and no other token can pose as the coordinator.
//
// Built as the agent's policies are (agent-policy.ts): one policy per resource kind and question, no
// parameter object, a placeholder per value. charts/kured-ts/files/coordinator-admission-policy.yaml
// is generated from here by `npm run docs`; the chart puts its values in place of the placeholders.
// CEL in kube has no JSON parser: the shapes are checked on the text, with a size bound before any
// regular expression (which then never runs over a large value).
import { dump } from 'js-yaml';
import {
  ADVICE_ANNOTATION,
  ADVICE_MAX_BYTES,
  HOLDER_MAX_CHARS,
  LEGACY_HEALTH_ANNOTATION,
  coordinatorLeaseName,
} from '../queue/coordinator-lease.js';
import { TURN_ANNOTATION } from '../queue/turn.js';
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

/** The values each installation writes into the coordinator's policies. */
export type CoordinatorPolicyValueKey =
  'coordinatorServiceAccount' | 'coordinatorLease' | 'coordinatorLeaseName';

/**
 * The coordinator's policies, by the suffix of their names: what its token may do to Nodes and to
 * Leases, and who may write its Lease.
 */
export type CoordinatorPolicyKind = 'nodes' | 'lease' | 'lease-writer';
export const COORDINATOR_POLICY_KINDS: readonly CoordinatorPolicyKind[] = ['nodes', 'lease', 'lease-writer'];

/** Lease annotation the coordinator published before issue 41 (the fleet's health): it may remove it, never write it. */
const RETIRED_HEALTH_ANNOTATION = LEGACY_HEALTH_ANNOTATION;

/** The largest turn annotation (bytes): both forms with the longest holder fit in 240. */
const MAX_TURN_BYTES = 300;
/** The largest advice on the Lease (bytes): the agents read no larger. */
const MAX_ADVICE_BYTES = ADVICE_MAX_BYTES;
/** The longest holder identity on the Lease (and `by` in a turn): a pod name and a random suffix. */
const MAX_HOLDER_CHARS = HOLDER_MAX_CHARS;
/**
 * The coordinator's lease duration: 30 s when it leads, 1 s when it releases the Lease on SIGTERM. A
 * longer one would make the agents and the standby wait that long for a coordinator that is gone.
 */
const LEASE_DURATION_SECONDS = { min: 1, max: 60 };

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

/** An RFC 3339 time, as Date.toISOString() writes it (or with an offset, or without a fraction). */
const TIME = '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})';
/** A holder identity in a turn: printable ASCII but the quote and the backslash (no JSON escape). */
const HOLDER = `[ !#-\\[\\]-~]{1,${MAX_HOLDER_CHARS}}`;
/** The turn's two forms (src/queue/turn.ts formatTurn and formatLapsedTurn), exactly. */
const TURN_FORM = `^(\\{"since":"${TIME}","by":"${HOLDER}"\\}|\\{"lapsed":\\{"since":"${TIME}","by":"${HOLDER}","at":"${TIME}"\\}\\})$`;

/** Is annotation `key` on `obj`? And its value. (CEL) */
function annotation(obj: string, key: string): { present: string; value: string } {
  return {
    present: `(has(${obj}.metadata.annotations) && '${key}' in ${obj}.metadata.annotations)`,
    value: `${obj}.metadata.annotations['${key}']`,
  };
}

/** On Nodes: the turn annotation only; the whole spec (cordon, taints), labels and the rest unchanged. */
function nodesPolicy(): PolicySpec {
  const turn = annotation('object', TURN_ANNOTATION);
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
      // the node's agent reads its turn, and copies the holder into its status when the turn lapses
      forbid(
        `!${turn.present} || (size(${turn.value}) <= ${MAX_TURN_BYTES} && ${turn.value}.matches(${celString(TURN_FORM)}))`,
        `'the kured-ts coordinator writes the turn of node ' + object.metadata.name + ' only as {"since","by"} or {"lapsed":{"since","by","at"}}, at most ${MAX_TURN_BYTES} bytes'`,
      ),
    ],
  );
}

/** Field F of a create absent, of an update unchanged (a CREATE has no oldObject). */
function absentOrSame(field: string): string {
  return `(request.operation == 'CREATE' ? !has(object.${field}) : ${same(field)})`;
}

/** Lease spec fields the coordinator never writes (coordinated leader election's), absent or unchanged. */
const UNWRITTEN_SPEC = ['preferredHolder', 'strategy'];

/** The bounds of what the coordinator writes on its Lease: spec, labels and annotations. */
function leaseBounds(): Validation[] {
  const { min, max } = LEASE_DURATION_SECONDS;
  const duration = 'object.spec.leaseDurationSeconds';
  const holder = 'object.spec.holderIdentity';
  const advice = annotation('object', ADVICE_ANNOTATION);
  return [
    forbid(
      `has(object.spec) && has(${duration}) && ${duration} >= ${min} && ${duration} <= ${max}`,
      `'the kured-ts coordinator writes its Lease with leaseDurationSeconds from ${min} to ${max}, not ' + (has(object.spec) && has(${duration}) ? string(${duration}) : 'none')`,
    ),
    forbid(
      `!has(object.spec) || !has(${holder}) || size(${holder}) <= ${MAX_HOLDER_CHARS}`,
      `'the kured-ts coordinator writes its Lease with a holderIdentity of at most ${MAX_HOLDER_CHARS} characters, not ' + string(size(${holder}))`,
    ),
    forbid(
      `!has(object.spec) || (${UNWRITTEN_SPEC.map((f) => absentOrSame(`spec.${f}`)).join(' && ')})`,
      `'the kured-ts coordinator writes only holderIdentity, leaseDurationSeconds, acquireTime, renewTime and leaseTransitions of its Lease'`,
    ),
    forbid(
      ['metadata.labels', ...OTHER_METADATA.map((f) => `metadata.${f}`)].map(absentOrSame).join(' && '),
      `'the kured-ts coordinator may not change the labels, owners or finalizers of its Lease'`,
    ),
    forbid(
      `request.operation == 'CREATE' ? !has(object.metadata.annotations) || object.metadata.annotations.all(k, k == '${ADVICE_ANNOTATION}') : ${mapUnchangedExcept('metadata.annotations', `'${ADVICE_ANNOTATION}'`, `'${RETIRED_HEALTH_ANNOTATION}'`)}`,
      `'the kured-ts coordinator may set on its Lease only the annotation ${ADVICE_ANNOTATION} (and remove ${RETIRED_HEALTH_ANNOTATION})'`,
    ),
    // agents of an older version trust the retired health annotation while the DaemonSet rolls: an
    // update that keeps it is refused (the coordinator removes it in each of its writes)
    forbid(
      `request.operation == 'CREATE' || !has(object.metadata.annotations) || !('${RETIRED_HEALTH_ANNOTATION}' in object.metadata.annotations)`,
      `'the kured-ts coordinator removes ${RETIRED_HEALTH_ANNOTATION} from its Lease in each write; it may not keep it'`,
    ),
    // size() counts characters, bytes() the UTF-8 bytes; the outline only: the agents judge the content
    forbid(
      `!${advice.present} || (size(${advice.value}) <= ${MAX_ADVICE_BYTES} && size(bytes(${advice.value})) <= ${MAX_ADVICE_BYTES} && ${advice.value}.matches(${celString('^\\{.*\\}$')}))`,
      `'the kured-ts coordinator writes its advice (${ADVICE_ANNOTATION}) as a JSON object of at most ${MAX_ADVICE_BYTES} bytes'`,
    ),
  ];
}

/** On Leases: its own, created and renewed, within the bounds; no other Lease of the namespace. */
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
      ...leaseBounds(),
    ],
  );
}

/**
 * On the coordinator's Lease, for every user: created and updated only by the coordinator, so that
 * no other token (another component's leader election, an agent's, a controller's) poses as it or
 * lets it lapse; a DELETE is left to RBAC (an admin's recovery). resourceNames keeps the rest of the
 * cluster's Lease writes (every kubelet's heartbeat) away from CEL; it matches a create by its
 * name, and no generateName can make ours (kube's random suffixes have no vowels; ours ends in
 * "nator"). The match condition adds the namespace.
 */
function leaseWriterPolicy(): PolicySpec {
  const lease = value('coordinatorLease');
  const coordinator = value('coordinatorServiceAccount');
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: ['coordination.k8s.io'],
          apiVersions: ['v1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['leases'],
          resourceNames: [placeholder('coordinatorLeaseName')],
        },
      ],
    },
    matchConditions: [
      {
        name: 'is-the-kured-ts-coordinator-lease',
        expression: `object.metadata.namespace + '/' + object.metadata.name == ${lease}`,
      },
    ],
    variables: [],
    validations: [
      forbid(
        `request.userInfo.username == ${coordinator}`,
        `'only the kured-ts coordinator (' + ${coordinator} + ') may create or update the Lease ' + ${lease} + ', not ' + request.userInfo.username + ' (deleting it is left to RBAC)'`,
      ),
    ],
  };
}

/** The policies by the suffix of their names, with placeholders for the values (what the chart ships). */
export function coordinatorPolicySpecs(): Record<CoordinatorPolicyKind, PolicySpec> {
  return { nodes: nodesPolicy(), lease: leasePolicy(), 'lease-writer': leaseWriterPolicy() };
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
    coordinatorLeaseName: coordinatorLeaseName(lock.dsName),
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
