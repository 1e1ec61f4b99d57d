import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../../src/kube/http.js';
import {
  isConflict,
  isConflictOrInvalid,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  policyDenial,
  statusBody,
  statusCode,
  statusMessage,
} from '../../src/kube/errors.js';
import { backoffMs, retry } from '../../src/kube/retry.js';
import { FakeClock } from '../fakes/fake-clock.js';

function apiError(code: number, body = ''): KubeApiError {
  return new KubeApiError(code, body, 'GET /api/v1/nodes/n1');
}

describe('API error classification', () => {
  it.each([
    [404, isNotFound],
    [409, isConflict],
    [410, isGone],
    [422, isInvalid],
    [429, isTooManyRequests],
  ])('recognises HTTP %i', (code, predicate) => {
    expect(predicate(apiError(code))).toBe(true);
    expect(predicate(apiError(500))).toBe(false);
    expect(predicate(new Error('ECONNREFUSED'))).toBe(false);
    expect(predicate(undefined)).toBe(false);
  });

  it('treats 409 and 422 as a lost race', () => {
    expect([409, 422, 404].map((c) => isConflictOrInvalid(apiError(c)))).toEqual([true, true, false]);
  });

  it('reads the status code of a watch error too', () => {
    expect(statusCode(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(410);
  });

  it('parses the Status body that client-node keeps as JSON text', () => {
    const body = JSON.stringify({
      kind: 'Status',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 1' }] },
    });
    const err = apiError(429, body);
    expect(statusBody(err)?.details?.causes?.[0]?.reason).toBe('DisruptionBudget');
    expect(statusMessage(err)).toBe(
      "Cannot evict pod as it would violate the pod's disruption budget. (429)",
    );
  });

  it.each([
    ['a non-JSON body', apiError(502, 'Bad Gateway'), 'Bad Gateway (502)'],
    ['an empty body', apiError(500, ''), 'GET /api/v1/nodes/n1: HTTP 500'],
    ['a plain error', new Error('connect ECONNREFUSED\nmore'), 'connect ECONNREFUSED'],
    ['a string', 'boom', 'boom'],
  ])('gives a one-line message for %s', (_name, err, message) => {
    expect(statusMessage(err)).toBe(message);
  });
});

describe('an admission policy denial', () => {
  const status = (message: string): string => JSON.stringify({ kind: 'Status', message });
  const denied =
    'pods "web-1" is forbidden: ValidatingAdmissionPolicy \'kured-ts-agent-eviction\' with binding ' +
    "'kured-ts-agent-eviction' denied request: the kured-ts agent evicts with the grace period of its configuration (-1, -1 = the grace period of the pod), not another";
  const policy = {
    policy: 'kured-ts-agent-eviction',
    message:
      'the kured-ts agent evicts with the grace period of its configuration (-1, -1 = the grace period of the pod), not another',
  };
  it.each<[string, unknown, object | undefined]>([
    ["is read from kube-apiserver's 403", apiError(403, status(denied)), policy],
    [
      'is read from a policy without a binding name',
      apiError(403, status("ValidatingAdmissionPolicy 'p' denied request: no")),
      { policy: 'p', message: 'no' },
    ],
    [
      'is read from the 422 of a validation whose reason is Invalid',
      apiError(422, status("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no")),
      { policy: 'p', message: 'no' },
    ],
    [
      'is read through the errors that add context to it',
      new Error('cannot write node n1', { cause: new Error('x', { cause: apiError(403, status(denied)) }) }),
      policy,
    ],
    [
      'is not an RBAC refusal',
      apiError(403, status('pods "web-1" is forbidden: User "x" cannot create')),
      undefined,
    ],
    ['is not a 500 that quotes one', apiError(500, status(denied)), undefined],
    ['is not a network error', new Error('ECONNREFUSED'), undefined],
  ])('%s', (_name, err, expected) => {
    expect(policyDenial(err)).toEqual(expected);
  });
});

describe('retry', () => {
  it('retries only what the predicate accepts, with growing jittered delays, up to the bound', async () => {
    const clock = new FakeClock();
    const delays: number[] = [];
    let calls = 0;
    const run = retry(
      () => {
        calls++;
        return Promise.reject(apiError(409));
      },
      {
        attempts: 5,
        baseMs: 100,
        maxMs: 500,
        retryOn: isConflict,
        clock,
        random: () => 0.5,
        onRetry: (_e, _a, d) => delays.push(d),
      },
    );
    const settled = run.catch((err: unknown) => err);
    await clock.advanceUntilIdle();
    expect(isConflict(await settled)).toBe(true);
    expect(calls).toBe(5);
    expect(delays).toEqual([75, 150, 300, 375]);
  });

  it('throws at once what the predicate does not accept', async () => {
    let calls = 0;
    await expect(
      retry(
        () => {
          calls++;
          return Promise.reject(apiError(403));
        },
        { retryOn: isConflict, clock: new FakeClock() },
      ),
    ).rejects.toMatchObject({ code: 403 });
    expect(calls).toBe(1);
  });

  it('returns the first success', async () => {
    const clock = new FakeClock();
    const run = retry((attempt) => (attempt < 3 ? Promise.reject(apiError(422)) : Promise.resolve(attempt)), {
      retryOn: isInvalid,
      clock,
    });
    await clock.advanceUntilIdle();
    await expect(run).resolves.toBe(3);
  });

  it('stops when the signal aborts during a backoff, with the last answer (it says more than "aborted")', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    let attempts = 0;
    const run = retry(
      () => {
        attempts++;
        return Promise.reject(apiError(409));
      },
      { retryOn: isConflict, clock, signal: controller.signal },
    );
    const settled = run.catch((err: unknown) => err);
    await clock.advance(0);
    controller.abort(new Error('stop'));
    expect(statusCode(await settled)).toBe(409);
    await clock.advanceUntilIdle();
    expect(attempts).toBe(1); // no attempt after the abort
  });

  it('does not start when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const run = retry(() => Promise.resolve(1), { clock: new FakeClock(), signal: controller.signal });
    await expect(run).rejects.toThrow('stop');
  });

  it.each([
    [1, 0, 50],
    [1, 0.999, 100],
    [3, 0, 200],
    [10, 1, 2000],
  ])(
    'bounds the backoff before attempt %i+1 (random %f) within [ceiling/2, ceiling]',
    (attempt, random, expected) => {
      expect(backoffMs(attempt, 100, 2000, () => random)).toBe(expected);
    },
  );
});
