// The agent's admission policy on Deployments (--single-replica restart): RBAC grants `patch
// deployments` cluster-wide when the flag is on, and cannot say "only the restart annotation". This
// policy does: the agent may change nothing of a Deployment but its pod template's
// kubectl.kubernetes.io/restartedAt annotation, and only to a time, as `kubectl rollout restart`
// does; without the flag it may change no Deployment at all. A stolen token can then restart any
// Deployment (a rolling update, with its surge and budgets), not change its image, command, replicas,
// service account or anything else of what it runs.
import { RESTARTED_AT_ANNOTATION } from '../drain/single-replica.js';
import {
  OTHER_METADATA,
  celString,
  forbid,
  mapUnchangedExcept,
  placeholder,
  same,
  type NamedExpression,
  type PolicySpec,
} from './policy-parts.js';

/** DeploymentSpec's fields (apps/v1, v1.35) other than the template: all unchanged. */
const SPEC_FIELDS = [
  'replicas',
  'selector',
  'strategy',
  'minReadySeconds',
  'revisionHistoryLimit',
  'paused',
  'progressDeadlineSeconds',
];

/** An RFC 3339 time, as kubectl writes it (and the agent: its clock's toISOString). */
const TIME = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$';

const ANNOTATIONS = 'spec.template.metadata.annotations';

/** The restartedAt annotation, where present on `obj`, is a time (CEL). */
function restartedAtIsTime(obj: string): string {
  const map = `${obj}.${ANNOTATIONS}`;
  const key = `'${RESTARTED_AT_ANNOTATION}'`;
  return `!has(${map}) || !(${key} in ${map}) || ${map}[${key}].matches(${celString(TIME)})`;
}

/** The policy on Deployments, judging the agent (`isTheAgent`) only. */
export function restartPolicy(isTheAgent: NamedExpression): PolicySpec {
  const enabled = `'${placeholder('deploymentRestart')}' == 'true'`;
  const unchanged = [
    ...SPEC_FIELDS.map((f) => same(`spec.${f}`)),
    same('spec.template.spec'),
    same('spec.template.metadata.labels'),
    same('metadata.labels'),
    same('metadata.annotations'),
    ...OTHER_METADATA.map((f) => same(`metadata.${f}`)),
    mapUnchangedExcept(ANNOTATIONS, `'${RESTARTED_AT_ANNOTATION}'`),
  ].join(' && ');
  const name = `object.metadata.namespace + '/' + object.metadata.name`;
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] },
      ],
    },
    matchConditions: [isTheAgent],
    variables: [],
    validations: [
      forbid(
        enabled,
        `'the kured-ts agent changes no Deployment: --single-replica is not restart in this installation'`,
      ),
      forbid(
        unchanged,
        `'the kured-ts agent may change only the pod template annotation ${RESTARTED_AT_ANNOTATION} of Deployment ' + ${name} + ', nothing else'`,
      ),
      forbid(
        restartedAtIsTime('object'),
        `'the kured-ts agent writes ${RESTARTED_AT_ANNOTATION} only as an RFC 3339 time, on Deployment ' + ${name}`,
      ),
    ],
  };
}
