// The FleetLock client: each answer of a server (or its silence) becomes data with its reason; every
// request carries the protocol's header and body and a deadline; transient failures are retried a
// bounded number of times with growing pauses, a refusal is returned at once.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Clock } from '../../src/clock/clock.js';
import type { TextRequest } from '../../src/http/request.js';
import { HttpFleetLock, type HttpExchange } from '../../src/fleetlock/http-fleetlock.js';
import type { FleetLockAnswer } from '../../src/fleetlock/fleetlock.js';
import { startFleetLockServer, type FleetLockServer } from '../fakes/fleetlock-server.js';

/** A clock whose sleeps end at once, recording each pause (the back-off). */
function pausesClock(): Clock & { pauses: number[] } {
  const pauses: number[] = [];
  return {
    pauses,
    now: () => new Date('2026-01-05T00:00:00Z'),
    sleep: (ms) => {
      pauses.push(ms);
      return Promise.resolve();
    },
  };
}

function client(
  exchange: HttpExchange | undefined,
  clock: Clock,
  url = 'http://fleetlock.example:8080/',
): HttpFleetLock {
  return new HttpFleetLock({
    url,
    group: 'workers',
    id: 'n1',
    clock,
    random: () => 0.5,
    timeoutMs: 200,
    ...(exchange === undefined ? {} : { exchange }),
  });
}

type Answer = { status: number; text: string } | Error;

describe('the client reads each answer of a server as data', () => {
  const rows: [string, Answer[], FleetLockAnswer, number][] = [
    ['a 200 grants the slot', [{ status: 200, text: '{}' }], { granted: true }, 1],
    [
      'a 200 with a body that is no JSON still grants (only the status counts)',
      [{ status: 200, text: 'ok' }],
      { granted: true },
      1,
    ],
    [
      'a failed_lock refusal is returned at once with the server’s kind and value as the reason',
      [{ status: 409, text: '{"kind":"failed_lock","value":"semaphore full"}' }],
      { granted: false, kind: 'failed_lock', reason: 'fleetlock: failed_lock: semaphore full', attempts: 1 },
      1,
    ],
    [
      'a 500 is retried, and after the last attempt its kind is the reason',
      Array<Answer>(3).fill({ status: 500, text: '{"kind":"internal_error","value":"db down"}' }),
      {
        granted: false,
        kind: 'internal_error',
        reason: 'fleetlock: internal_error: db down (HTTP 500) (3 attempts)',
        attempts: 3,
      },
      3,
    ],
    [
      'a 500 followed by a grant is a grant',
      [
        { status: 500, text: '{"kind":"internal_error","value":"x"}' },
        { status: 200, text: '' },
      ],
      { granted: true },
      2,
    ],
    [
      'an error answer whose body is no JSON is a bad answer, not a grant',
      [{ status: 400, text: '<html>bad gateway</html>' }],
      {
        granted: false,
        kind: 'bad-answer',
        reason: 'fleetlock: bad-answer: HTTP 400 without a FleetLock error body',
        attempts: 1,
      },
      1,
    ],
    [
      'an error body without a kind is a bad answer',
      [{ status: 403, text: '{"value":"no"}' }],
      {
        granted: false,
        kind: 'bad-answer',
        reason: 'fleetlock: bad-answer: HTTP 403 without a FleetLock error body',
        attempts: 1,
      },
      1,
    ],
    [
      'a connection refused every time says the server did not answer',
      Array<Answer>(3).fill(new Error('connect ECONNREFUSED 10.0.0.1:8080')),
      {
        granted: false,
        kind: 'unreachable',
        reason:
          'fleetlock: no answer from http://fleetlock.example:8080: connect ECONNREFUSED 10.0.0.1:8080 (3 attempts)',
        attempts: 3,
      },
      3,
    ],
  ];

  it.each(rows)('%s', async (_name, answers, expected, requests) => {
    const sent: { url: string; request: TextRequest }[] = [];
    const exchange: HttpExchange = (url, request) => {
      sent.push({ url, request });
      const next = answers[sent.length - 1];
      if (next === undefined) throw new Error('more requests than answers');
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    };
    const clock = pausesClock();
    expect(await client(exchange, clock).preReboot(undefined)).toEqual(expected);
    expect(sent).toHaveLength(requests);
    for (const { url, request } of sent) {
      expect(url).toBe('http://fleetlock.example:8080/v1/pre-reboot');
      expect(request.method).toBe('POST');
      expect(request.headers?.['fleet-lock-protocol']).toBe('true');
      expect(JSON.parse(request.body ?? '')).toEqual({ client_params: { id: 'n1', group: 'workers' } });
      expect(request.deadlineMs).toBe(200);
    }
    // one pause between attempts, growing, none after the last
    expect(clock.pauses).toHaveLength(requests - 1);
    expect(clock.pauses).toEqual([...clock.pauses].sort((a, b) => a - b));
  });

  it('steady-state goes to its own path with the same body', async () => {
    const urls: string[] = [];
    const exchange: HttpExchange = (url) => {
      urls.push(url);
      return Promise.resolve({ status: 200, text: '' });
    };
    expect(await client(exchange, pausesClock()).steadyState(undefined)).toEqual({ granted: true });
    expect(urls).toEqual(['http://fleetlock.example:8080/v1/steady-state']);
  });

  it('the caller’s abort ends the call with its reason, not as an answer', async () => {
    const controller = new AbortController();
    const exchange: HttpExchange = (_url, request) => {
      controller.abort(new Error('shutting down'));
      return Promise.reject(request.signal?.reason as Error);
    };
    await expect(client(exchange, pausesClock()).preReboot(controller.signal)).rejects.toThrow(
      'shutting down',
    );
  });
});

describe('the client over loopback against the test FleetLock server', () => {
  let server: FleetLockServer;
  beforeEach(async () => {
    server = await startFleetLockServer(1);
  });
  afterEach(async () => {
    await server.stop();
  });

  const real = (id: string): HttpFleetLock =>
    new HttpFleetLock({
      url: server.url,
      group: 'g',
      id,
      clock: pausesClock(),
      random: () => 0.5,
      timeoutMs: 300,
    });

  it('grants the one slot, refuses a second id with failed_lock, and is idempotent for the holder', async () => {
    expect(await real('a').preReboot(undefined)).toEqual({ granted: true });
    expect(await real('a').preReboot(undefined)).toEqual({ granted: true });
    const refused = await real('b').preReboot(undefined);
    expect(refused).toMatchObject({ granted: false, kind: 'failed_lock', attempts: 1 });
    expect(server.state.holding('g')).toEqual(['a']);
    expect(await real('a').steadyState(undefined)).toEqual({ granted: true });
    expect(await real('b').preReboot(undefined)).toEqual({ granted: true });
    expect(server.state.holding('g')).toEqual(['b']);
  });

  it('a server that answers 500 is retried to the bound and grants nothing', async () => {
    server.mode = 'error-500';
    expect(await real('a').preReboot(undefined)).toMatchObject({
      granted: false,
      kind: 'internal_error',
      attempts: 3,
    });
    expect(server.requests.failed).toBe(3);
    expect(server.state.holding('g')).toEqual([]);
  });

  it('a server that hangs hits the deadline of each request, and the call ends unreachable', async () => {
    server.mode = 'hang';
    const answer = await real('a').preReboot(undefined);
    expect(answer).toEqual({
      granted: false,
      kind: 'unreachable',
      reason: `fleetlock: no answer from ${server.url}: no answer within 300 ms (3 attempts)`,
      attempts: 3,
    });
    expect(server.requests.hung).toBe(3);
  });

  it('a request without the protocol header is refused by the server', async () => {
    const response = await fetch(`${server.url}/v1/pre-reboot`, {
      method: 'POST',
      body: JSON.stringify({ client_params: { id: 'a', group: 'g' } }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ kind: 'missing_header' });
  });
});
