// The checks' CEL (src/cel/): the static part of its budget, and the outcomes of an evaluation on the
// calling thread (the worker thread's deadline and heap cap: test/integration/blockers/cel-worker.test.ts).
import { describe, expect, it } from '@jest/globals';
import { overCostLimit } from '../../src/cel/cel.js';
import { InlineCel } from '../../src/cel/inline-cel.js';

describe('the static limits of the CEL budget', () => {
  it.each([
    ['self.status.readyReplicas == self.spec.replicas', 100, undefined],
    ['self.items.all(i, i.ready)', 100, undefined],
    ['self.a.all(x, x.b.exists(y, y.c))', 100, undefined],
    ['self.a.all(x, x.b.exists(y, y.c.all(z, z)))', 100, 'comprehensions nested 3 deep'],
    ['true', 5 << 20, 'input larger than'],
    ['x'.repeat(1025), 10, 'longer than 1024'],
  ] as const)('%s over %i bytes: %s', (expression, bytes, why) => {
    expect(overCostLimit(expression, bytes)).toEqual(
      why === undefined ? undefined : expect.stringContaining(why),
    );
  });
});

describe('an evaluation on the calling thread', () => {
  const node = { metadata: { name: 'n1' } };
  const items = { items: [{ status: { currentNodeID: 'n2' } }, { status: { currentNodeID: 'n1' } }] };
  it.each([
    [
      'gives the bool of an expression over self and node',
      '!self.items.exists(v, v.status.currentNodeID == node.metadata.name)',
      { self: items, node },
      { value: false },
    ],
    [
      'gives true when no item names the node',
      'self.items.all(v, v.status.currentNodeID != "n3")',
      { self: items, node },
      { value: true },
    ],
    ['whole numbers are ints, as in kube-apiserver', 'self.n + 1 == 3', { self: { n: 2 } }, { value: true }],
    [
      'fails closed on a missing field',
      'self.nothing.here == 1',
      { self: {} },
      { error: expect.stringContaining('error') },
    ],
    [
      'fails closed on a result that is not a bool',
      'self.n',
      { self: { n: 2 } },
      { error: 'not a bool: bigint' },
    ],
    [
      'fails closed on an expression that does not compile',
      'self.(',
      { self: {} },
      { error: expect.stringContaining('does not compile') },
    ],
    [
      'fails closed past the static limits, before evaluating',
      'true',
      { self: { s: 'x'.repeat(5 << 20) } },
      { error: expect.stringContaining('over the cost limit: input larger than') },
    ],
  ] as const)('%s', async (_name, expression, bindings, want) => {
    expect(await new InlineCel().evaluate(expression, bindings)).toEqual(want);
  });
});
