// The admission policies that keep a stolen agent token from becoming a way to run arbitrary pods
// (issue 56, item 4). The agent may create Jobs in the hooks' namespace (RBAC cannot say more); these
// policies admit only a hook's Job: for the token's own node, in that namespace, and exactly the pod of
// the hook's template.
//
// Two policies:
// - `hook-jobs` (no parameter): every Job the agent creates names a configured hook and the token's
//   own node (labels on the Job and its pods), in the hooks' namespace, with no owner or finalizer.
// - `hook-template` (its parameter the hook's template, a suspended CronJob, bound once per hook with
//   an objectSelector on the hook label): the Job's pod spec is the template's as the API server
//   stored it (defaults included: the agent copies what it reads), its pod labels the template's plus
//   the hook's two and the Job controller's, its annotations and finalizers the template's, its name
//   the template's followed by a dash, and the Job spec's fields
//   that decide what runs and how often (parallelism, completions, retries, deadlines, who manages
//   it, a manual selector) the template's.
//
// The other policies of kured-ts take no parameter (agent-policy.ts says why: a parameter informer
// that kube-apiserver loses must not switch enforcement off). This one does, with
// parameterNotFoundAction Deny: an informer lost (kubernetes/kubernetes#130887) refuses every hook
// Job, so hooks fail closed and say so; they never run a pod the template does not describe. The
// template cannot be written into the policy's expressions instead: the pod spec the API server
// compares is the one it defaulted, which the chart cannot know.
import { dump } from 'js-yaml';
import { IS_THE_AGENT, NODE_CLAIM, NODE_NAME_EXTRA } from './agent-policy.js';
import { forbid, listed, placeholder, sameAs, type PolicySpec } from './policy-parts.js';
import { HOOK_LABEL, HOOK_NODE_LABEL } from '../hooks/hook-job.js';

/** The values each installation writes into the hook policies. */
type HookPolicyValueKey = 'serviceAccount' | 'requireNodeClaim' | 'hookNamespace' | 'hooks';

function value(key: HookPolicyValueKey): string {
  return `'${placeholder(key)}'`;
}

/** The labels the Job controller writes on a Job's pods (their values are the API server's own). */
const CONTROLLER_LABELS =
  'controller-uid,job-name,batch.kubernetes.io/controller-uid,batch.kubernetes.io/job-name';

/** The Job spec's fields that must be the template's (present in both and equal, or in neither). */
const JOB_FIELDS = [
  'parallelism',
  'completions',
  'backoffLimit',
  'backoffLimitPerIndex',
  'maxFailedIndexes',
  'activeDeadlineSeconds',
  'ttlSecondsAfterFinished',
  'completionMode',
  'podFailurePolicy',
  'successPolicy',
  'managedBy',
  'suspend',
];

const JOB_LABELS = 'object.metadata.labels';
const POD_LABELS = 'object.spec.template.metadata.labels';
const TEMPLATE = 'params.spec.jobTemplate.spec';

/** `path` has `key`, a map-valued path guarded. */
function hasKey(path: string, key: string): string {
  return `(has(${path}) && '${key}' in ${path})`;
}

/** Field F of the Job spec is the template's. */
function sameAsTemplate(field: string): string {
  return sameAs(`object.spec.${field}`, `${TEMPLATE}.${field}`);
}

/** The policy on the agent's Jobs that needs no parameter. */
function hookJobsPolicy(): PolicySpec {
  const hook = `${JOB_LABELS}['${HOOK_LABEL}']`;
  const node = `${JOB_LABELS}['${HOOK_NODE_LABEL}']`;
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['jobs'] },
      ],
    },
    matchConditions: [IS_THE_AGENT],
    variables: [{ name: 'nodeClaim', expression: NODE_CLAIM }],
    validations: [
      forbid(`request.operation == 'CREATE'`, `'the kured-ts agent may create hook Jobs, never change one'`),
      forbid(
        `request.namespace == ${value('hookNamespace')}`,
        `'the kured-ts agent may create Jobs only in ' + ${value('hookNamespace')}`,
      ),
      forbid(
        `${hasKey(JOB_LABELS, HOOK_LABEL)} && ${listed(value('hooks'), hook)}`,
        `'a Job of the kured-ts agent must be a configured hook (label ${HOOK_LABEL}: one of ' + ${value('hooks')} + ')'`,
      ),
      forbid(
        `${hasKey(JOB_LABELS, HOOK_NODE_LABEL)} && (variables.nodeClaim == '' ? ${value('requireNodeClaim')} != 'true' : variables.nodeClaim == ${node})`,
        `variables.nodeClaim == '' ? 'the kured-ts agent token carries no node claim (${NODE_NAME_EXTRA}): no hook Job may be created with it' : 'the kured-ts agent on node ' + variables.nodeClaim + ' may create hook Jobs only for its own node (label ${HOOK_NODE_LABEL})'`,
      ),
      forbid(
        `${hasKey(POD_LABELS, HOOK_LABEL)} && ${hasKey(POD_LABELS, HOOK_NODE_LABEL)} && ${hasKey(JOB_LABELS, HOOK_LABEL)} && ${hasKey(JOB_LABELS, HOOK_NODE_LABEL)} && ${POD_LABELS}['${HOOK_LABEL}'] == ${hook} && ${POD_LABELS}['${HOOK_NODE_LABEL}'] == ${node}`,
        `'the pods of a kured-ts hook Job carry the Job\\'s ${HOOK_LABEL} and ${HOOK_NODE_LABEL}'`,
      ),
      forbid(
        `!has(object.metadata.ownerReferences) && !has(object.metadata.finalizers)`,
        `'a kured-ts hook Job has no owner and no finalizer'`,
      ),
    ],
  };
}

/** The policy that holds the agent's Job to its hook's template (the binding's parameter). */
function hookTemplatePolicy(): PolicySpec {
  const templatePod = `${TEMPLATE}.template`;
  const templateLabels = `${templatePod}.metadata.labels`;
  const labelOk = `k == '${HOOK_LABEL}' || k == '${HOOK_NODE_LABEL}' || ${listed(`'${CONTROLLER_LABELS}'`, 'k')} || (has(${templateLabels}) && k in ${templateLabels} && ${templateLabels}[k] == ${POD_LABELS}[k])`;
  const annotations = (root: string): string => `${root}.metadata.annotations`;
  const jobAnnotations = annotations('object.spec.template');
  const templateAnnotations = annotations(templatePod);
  return {
    failurePolicy: 'Fail',
    paramKind: { apiVersion: 'batch/v1', kind: 'CronJob' },
    matchConstraints: {
      resourceRules: [
        { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['jobs'] },
      ],
    },
    matchConditions: [IS_THE_AGENT],
    variables: [],
    validations: [
      forbid(
        `${hasKey(JOB_LABELS, HOOK_LABEL)} && ${hasKey('params.metadata.labels', HOOK_LABEL)} && ${JOB_LABELS}['${HOOK_LABEL}'] == params.metadata.labels['${HOOK_LABEL}']`,
        `'a kured-ts hook Job is checked against the template of its own hook'`,
      ),
      forbid(
        `object.spec.template.spec == ${templatePod}.spec`,
        `'the pods of a kured-ts hook Job must be exactly those of its template, cronjob ' + params.metadata.name`,
      ),
      forbid(
        `has(${POD_LABELS}) && ${POD_LABELS}.all(k, ${labelOk}) && (!has(${templateLabels}) || ${templateLabels}.all(k, k in ${POD_LABELS}))`,
        `'the pods of a kured-ts hook Job carry the labels of its template, cronjob ' + params.metadata.name + ', and the hook\\'s own, no others'`,
      ),
      forbid(
        `object.metadata.name.startsWith(params.metadata.name + '-')`,
        `'a kured-ts hook Job is named after its template, cronjob ' + params.metadata.name`,
      ),
      forbid(
        sameAs('object.spec.template.metadata.finalizers', `${templatePod}.metadata.finalizers`),
        `'the pods of a kured-ts hook Job carry the finalizers of its template, cronjob ' + params.metadata.name`,
      ),
      forbid(
        `has(${jobAnnotations}) == has(${templateAnnotations}) && (!has(${jobAnnotations}) || ${jobAnnotations} == ${templateAnnotations})`,
        `'the pods of a kured-ts hook Job carry the annotations of its template, cronjob ' + params.metadata.name`,
      ),
      forbid(
        `${JOB_FIELDS.map(sameAsTemplate).join(' && ')} && (!has(object.spec.manualSelector) || object.spec.manualSelector == false)`,
        `'a kured-ts hook Job runs as its template, cronjob ' + params.metadata.name + ', says (${JOB_FIELDS.join(', ')}; no manual selector)'`,
      ),
    ],
  };
}

type HookPolicyKind = 'hook-jobs' | 'hook-template';

/** The hook policies as shipped, with placeholders for an installation's values. */
export function hookPolicySpecs(): Record<HookPolicyKind, PolicySpec> {
  return { 'hook-jobs': hookJobsPolicy(), 'hook-template': hookTemplatePolicy() };
}

/**
 * The specs as the chart ships them (charts/kured-ts/files/hook-admission-policy.yaml).
 * @public `npm run docs` (scripts/docs.mjs) writes that file with it.
 */
export function renderHookPolicySpecYaml(): string {
  const header = [
    '# Generated from src/admission/hook-policy.ts by `npm run docs`: do not edit.',
    "# The specs of the ValidatingAdmissionPolicies templates/hooks.yaml renders for the hooks' Jobs;",
    '# templates/hooks.yaml puts the values in place of __KURED_TS_*__.',
  ].join('\n');
  return `${header}\n${dump(hookPolicySpecs(), { lineWidth: -1, noRefs: true })}`;
}
