// The --node-check recipes of docs/storage.md, read from the page itself: each parses as the flag
// does, compiles, and judges sample objects of its storage system as the page says it does.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { InlineCel } from '../../src/cel/inline-cel.js';
import { nodeCheck } from '../../src/config/wave-values.js';

const page = readFileSync(new URL('../../docs/storage.md', import.meta.url), 'utf8');

/** Every check in the page's yaml blocks, as written. */
function recipes(): string[] {
  const blocks = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  return blocks.flatMap((block) => {
    const text = block.trimStart().startsWith('-')
      ? `nodeCheck:\n${block.replace(/^ {4,6}/gm, '  ')}`
      : block;
    const doc = load(text) as { configuration?: { nodeCheck?: string[] }; nodeCheck?: string[] };
    return doc.configuration?.nodeCheck ?? doc.nodeCheck ?? [];
  });
}

const node = { metadata: { name: 'n1' } };

/** Sample objects of each resource: one that holds the node back, one that does not. */
const samples: Record<string, { blocks: unknown[]; passes: unknown[] }> = {
  volumes: {
    blocks: [{ status: { currentNodeID: 'n1', robustness: 'degraded' } }],
    passes: [{ status: { currentNodeID: 'n2', robustness: 'healthy' } }],
  },
  replicas: {
    blocks: [{ spec: { nodeID: 'n1', volumeName: 'v1', failedAt: '' }, status: { currentState: 'running' } }],
    passes: [
      { spec: { nodeID: 'n1', volumeName: 'v1', failedAt: '' }, status: { currentState: 'running' } },
      { spec: { nodeID: 'n2', volumeName: 'v1' }, status: { currentState: 'running' } },
      // a detached volume: its replicas are all stopped, none runs elsewhere, and it holds no node
      { spec: { nodeID: 'n1', volumeName: 'v2' }, status: { currentState: 'stopped' } },
      { spec: { nodeID: 'n2', volumeName: 'v2' }, status: { currentState: 'stopped' } },
    ],
  },
  cephclusters: {
    blocks: [{ status: { ceph: { health: 'HEALTH_WARN' } } }],
    passes: [{ status: { ceph: { health: 'HEALTH_OK' } } }],
  },
  diskpools: {
    blocks: [{ spec: { node: 'n2' }, status: { cr_state: 'Creating' } }],
    passes: [{ spec: { node: 'n2' }, status: { cr_state: 'Online' } }],
  },
  storagenodes: {
    blocks: [{ metadata: { name: 'n2' }, status: { phase: 'Offline' } }],
    passes: [{ metadata: { name: 'n2' }, status: { phase: 'Online' } }],
  },
};

describe('the node-check recipes of docs/storage.md', () => {
  const all = recipes();
  it('the page has the recipes it names', () => {
    expect(all.length).toBeGreaterThanOrEqual(6);
  });
  it.each(all.map((r) => [r]))(
    '%s: holds the node back on the sample that should, not on the other',
    async (text) => {
      const check = nodeCheck(text);
      const sample = samples[check.resource];
      expect(sample).toBeDefined();
      const cel = new InlineCel();
      expect(await cel.evaluate(check.expression, { self: { items: sample!.blocks }, node })).toEqual({
        value: false,
      });
      expect(await cel.evaluate(check.expression, { self: { items: sample!.passes }, node })).toEqual({
        value: true,
      });
    },
  );
});
