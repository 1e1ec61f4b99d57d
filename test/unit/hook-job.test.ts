// The hook's Job from its template (src/hooks/hook-job.ts): its name, what is added, how it stands.
import { describe, expect, it } from '@jest/globals';
import {
  HOOK_LABEL,
  HOOK_NODE_LABEL,
  hookJobName,
  jobFromTemplate,
  jobState,
  nodeLabelProblem,
} from '../../src/hooks/hook-job.js';

const TEMPLATE = {
  spec: {
    jobTemplate: {
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: { app: 'noout' }, annotations: { team: 'storage' } },
          spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'ceph:v18' }] },
        },
      },
    },
  },
};

describe('the hook Job name', () => {
  it('is the same for the same node and cycle, and differs for another node or cycle', () => {
    const a = hookJobName('kured-ts-before-reboot', 'n1', '2026-01-05T10:00:00.000Z');
    expect(hookJobName('kured-ts-before-reboot', 'n1', '2026-01-05T10:00:00.000Z')).toBe(a);
    expect(hookJobName('kured-ts-before-reboot', 'n2', '2026-01-05T10:00:00.000Z')).not.toBe(a);
    expect(hookJobName('kured-ts-before-reboot', 'n1', '2026-01-06T10:00:00.000Z')).not.toBe(a);
    expect(a).toMatch(/^kured-ts-before-reboot-[0-9a-f]{10}$/);
  });

  it('fits a label value (63 characters) whatever the template name', () => {
    const name = hookJobName(`${'x'.repeat(51)}-`, 'n1', 'now');
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^x+-[0-9a-f]{10}$/);
  });
});

describe('the Job from the template', () => {
  it('keeps the Job and pod spec as stored and adds only the hook and node labels', () => {
    const made = jobFromTemplate(TEMPLATE, { hook: 'before-reboot', name: 'j', namespace: 'ns', node: 'n1' });
    expect(made).toEqual({
      job: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: {
          name: 'j',
          namespace: 'ns',
          labels: { [HOOK_LABEL]: 'before-reboot', [HOOK_NODE_LABEL]: 'n1' },
        },
        spec: {
          backoffLimit: 0,
          template: {
            metadata: {
              labels: { app: 'noout', [HOOK_LABEL]: 'before-reboot', [HOOK_NODE_LABEL]: 'n1' },
              annotations: { team: 'storage' },
            },
            spec: TEMPLATE.spec.jobTemplate.spec.template.spec,
          },
        },
      },
    });
  });

  it.each([
    ['not an object', 'x'],
    ['a CronJob without a job template', { spec: { schedule: '* * * * *' } }],
    ['a job template without a pod spec', { spec: { jobTemplate: { spec: { template: {} } } } }],
  ])('refuses a template that is %s', (_, template) => {
    expect(
      jobFromTemplate(template, { hook: 'after-reboot', name: 'j', namespace: 'ns', node: 'n1' }),
    ).toEqual({
      problem: 'the template has no spec.jobTemplate.spec.template.spec',
    });
  });

  it.each([
    ['n1', undefined],
    ['ip-10-0-0-1.eu-west-1.compute.internal', undefined],
    ['a'.repeat(64), 'not a label value'],
  ])('says whether node %s can be a label value', (node, problem) => {
    const said = nodeLabelProblem(node);
    if (problem === undefined) expect(said).toBeUndefined();
    else expect(said).toContain(problem);
  });
});

describe('where a Job stands', () => {
  it.each([
    ['no status', {}, { running: '0 active, 0 failed' }],
    ['running', { status: { active: 1, failed: 1 } }, { running: '1 active, 1 failed' }],
    ['complete', { status: { conditions: [{ type: 'Complete', status: 'True' }] } }, { done: true }],
    [
      'failed, with the reason and message',
      {
        status: {
          conditions: [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'too slow' }],
        },
      },
      { failed: 'DeadlineExceeded: too slow' },
    ],
    [
      'a condition not True',
      { status: { conditions: [{ type: 'Complete', status: 'False' }] } },
      { running: '0 active, 0 failed' },
    ],
  ])('reads a Job with %s', (_, job, state) => {
    expect(jobState(job)).toEqual(state);
  });
});
