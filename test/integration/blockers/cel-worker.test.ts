// The checks' CEL in a worker thread (src/cel/worker-cel.ts, the script bundled as dist/cel-worker.js
// by the suite's build): a pathological expression fails closed at its deadline or its heap cap, and
// the agent's event loop (its /healthz, metrics, lock renewals) is not held meanwhile.
import { describe, expect, it } from '@jest/globals';
import { WorkerCel } from '../../../src/cel/worker-cel.js';

const items = Array.from({ length: 3_000 }, (_, n) => ({ n, name: `volume-${n}` }));
const quadratic = 'self.items.all(a, self.items.all(b, a.n != b.n || a.name == b.name))';

/** The longest the event loop was late on a 10 ms timer while `work` ran. */
async function loopLateness<T>(work: () => Promise<T>): Promise<{ result: T; lateMs: number }> {
  let lateMs = 0;
  let last = performance.now();
  // eslint-disable-next-line no-restricted-syntax -- real time: the worker thread's deadline is real time
  const timer = setInterval(() => {
    const now = performance.now();
    lateMs = Math.max(lateMs, now - last - 10);
    last = now;
  }, 10);
  try {
    return { result: await work(), lateMs };
  } finally {
    clearInterval(timer);
  }
}

describe('CEL in a worker thread', () => {
  it('gives the bool of an expression over self and node', async () => {
    const cel = new WorkerCel();
    const bindings = { self: { items: items.slice(0, 3) }, node: { metadata: { name: 'volume-2' } } };
    expect(await cel.evaluate('self.items.exists(v, v.name == node.metadata.name)', bindings)).toEqual({
      value: true,
    });
  });

  it('a quadratic expression over 3,000 items fails closed at its deadline, the event loop running meanwhile', async () => {
    const cel = new WorkerCel({ deadlineMs: 500 });
    const { result, lateMs } = await loopLateness(() => cel.evaluate(quadratic, { self: { items } }));
    expect(result).toEqual({ error: 'over the cost limit: still evaluating after 500 ms' });
    expect(lateMs).toBeLessThan(250);
  });

  it('an expression that allocates past the heap cap fails closed', async () => {
    const cel = new WorkerCel({ deadlineMs: 60_000, heapMb: 16 });
    const result = await cel.evaluate('size(self.items.map(a, self.items.map(b, b.name))) > 0', {
      self: { items },
    });
    expect(result).toEqual({ error: 'over the cost limit: more than 16 MB of memory' });
  });

  it('fails closed, naming it, when the worker script is missing', async () => {
    const cel = new WorkerCel({ script: new URL('file:///nonexistent/cel-worker.js') });
    expect(await cel.evaluate('true', {})).toEqual({
      error: expect.stringContaining('the CEL worker failed'),
    });
  });

  it('an abort ends the evaluation and its thread at once', async () => {
    const cel = new WorkerCel({ deadlineMs: 60_000 });
    const controller = new AbortController();
    const started = performance.now();
    // eslint-disable-next-line no-restricted-syntax -- real time: the worker thread's deadline is real time
    setTimeout(() => {
      controller.abort(new Error('shutting down'));
    }, 300);
    await expect(cel.evaluate(quadratic, { self: { items } }, controller.signal)).rejects.toThrow(
      'shutting down',
    );
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
