// Issue 46: every answer the drain, the lock, the node writes and the reboot record can get, and whom
// it is about: the pod or the request (acted on), or the API server (retried with back-off, never
// blamed on the node). One table; the drain's reading of an eviction's answer beside it.
import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../../src/kube/http.js';
import { DeadlineError } from '../../src/http/request.js';
import { answerClass, isRetryableRead, type AnswerClass } from '../../src/kube/errors.js';
import { evictionAnswer, mayHaveCommitted, type EvictionAnswer } from '../../src/drain/eviction-answer.js';

const EVICTION = 'POST /api/v1/namespaces/default/pods/web-1/eviction';

/** kube-apiserver's answer: HTTP `code` with a Status of this message (and causes). */
function answer(
  code: number,
  message: string,
  o: { causes?: { reason: string; message?: string }[]; retryAfter?: number } = {},
): KubeApiError {
  const status = { kind: 'Status', status: 'Failure', message, code, details: { causes: o.causes } };
  return new KubeApiError(code, JSON.stringify(status), EVICTION, o.retryAfter);
}

/** A network error as our transport throws it: the request named, Node's error as the cause. */
function network(code: string, message: string): Error {
  return new Error(`${EVICTION}: ${message}`, { cause: Object.assign(new Error(message), { code }) });
}

interface Row {
  err: unknown;
  /** answerClass */
  about: AnswerClass;
  /** isRetryableRead: sent again inside the call (reads, patches, dry runs). */
  again: boolean;
  /** evictionAnswer */
  eviction: EvictionAnswer;
}

const server = (err: unknown, again = true): Row => ({ err, about: 'server', again, eviction: 'server' });
const request = (err: unknown, eviction: EvictionAnswer): Row => ({
  err,
  about: 'request',
  again: false,
  eviction,
});

const BUDGET = "Cannot evict pod as it would violate the pod's disruption budget.";

const rows: [string, Row][] = [
  [
    'a 500 of an etcd that timed out is about the server',
    server(answer(500, 'etcdserver: request timed out')),
  ],
  ['a 502 of a proxy in front of the API server is about the server', server(answer(502, 'Bad Gateway'))],
  ['a 503 of an API server not ready is about the server', server(answer(503, 'service unavailable'))],
  ['a 504 of a gateway that timed out is about the server', server(answer(504, 'Gateway Timeout'))],
  ['a 408 of a request that timed out in the server is about the server', server(answer(408, 'timeout'))],
  [
    'a 429 of API Priority and Fairness with Retry-After is about the server',
    server(answer(429, 'Too many requests, please try again later.', { retryAfter: 1 })),
  ],
  [
    'a webhook that could not be called (failurePolicy Fail) is about the server',
    server(
      answer(500, 'Internal error occurred: failed calling webhook "v.example.com": connection refused'),
    ),
  ],
  [
    'no answer within the deadline is about the server, not sent again inside that call',
    server(new DeadlineError(`${EVICTION}: no answer within 30s`), false),
  ],
  ['a reset connection is about the server', server(network('ECONNRESET', 'read ECONNRESET'))],
  [
    'a refused connection is about the server',
    server(network('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:6443')),
  ],
  ['a socket hung up mid-answer is about the server', server(network('ECONNRESET', 'socket hang up'))],
  [
    "a PodDisruptionBudget's 429 with its cause is about the pod",
    request(
      answer(429, BUDGET, {
        causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods' }],
      }),
      'budget',
    ),
  ],
  [
    "a PodDisruptionBudget's 429 in kube's words without a cause is about the pod",
    request(answer(429, BUDGET), 'budget'),
  ],
  [
    'the 500 of a pod under two PodDisruptionBudgets is about the pod',
    request(
      answer(
        500,
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      ),
      'rejected',
    ),
  ],
  [
    "an admission webhook's denial is about the request",
    request(
      answer(400, 'admission webhook "deny.example.com" denied the request: web-1 may not be evicted'),
      'denied',
    ),
  ],
  [
    "an admission webhook's denial with a 500 of its choosing is about the request",
    request(answer(500, 'admission webhook "deny.example.com" denied the request: no'), 'denied'),
  ],
  [
    "a ValidatingAdmissionPolicy's denial is about the request",
    request(
      answer(
        403,
        "pods \"web-1\" is forbidden: ValidatingAdmissionPolicy 'no-evict' with binding 'no-evict' denied request: not now",
      ),
      'denied',
    ),
  ],
  [
    "RBAC's 403 is about the request",
    request(
      answer(403, 'pods "web-1" is forbidden: User "x" cannot create resource "pods/eviction"'),
      'rejected',
    ),
  ],
  [
    "a 403 for a namespace being deleted is about the pod's namespace",
    request(
      answer(403, 'forbidden: namespace web is being terminated', {
        causes: [{ reason: 'NamespaceTerminating' }],
      }),
      'namespace-terminating',
    ),
  ],
  [
    'a 422 of an invalid request is about the request',
    request(answer(422, 'Eviction.policy "web-1" is invalid'), 'rejected'),
  ],
  [
    'a 400 of a bad request is about the request',
    request(answer(400, 'name in URL does not match name in Eviction object'), 'rejected'),
  ],
  ['a 404 of a pod gone is about the pod', request(answer(404, 'pods "web-1" not found'), 'gone')],
  [
    'a 409 on the UID precondition (another pod took its name) is about the pod',
    request(answer(409, 'Precondition failed: UID in precondition: a, UID in object meta: b'), 'gone'),
  ],
  [
    'a 501 of a request the server does not implement is about the request',
    request(answer(501, 'not implemented'), 'rejected'),
  ],
  [
    'an error nobody can place is about the request (acted on, never retried without end)',
    request(new TypeError('x is not a function'), 'rejected'),
  ],
];

describe('whom an API answer is about', () => {
  it.each(rows)('%s', (_name, row) => {
    expect(answerClass(row.err)).toBe(row.about);
    expect(isRetryableRead(row.err)).toBe(row.again);
    expect(evictionAnswer(row.err)).toBe(row.eviction);
  });
});

describe('an eviction answered about the server', () => {
  it.each([
    ['may have been carried out after a 500', answer(500, 'etcdserver: request timed out'), true],
    ['may have been carried out after no answer', new DeadlineError('no answer'), true],
    ['may have been carried out after a reset', network('ECONNRESET', 'read ECONNRESET'), true],
    [
      'was not carried out after a 429 of API Priority and Fairness (refused before it is handled)',
      answer(429, 'Too many requests, please try again later.'),
      false,
    ],
    ["was not carried out after a PodDisruptionBudget's 429", answer(429, BUDGET), false],
  ])('%s', (_name, err, committed) => {
    expect(mayHaveCommitted(err)).toBe(committed);
  });
});
