// ReadOnlyKube: what `kured-ts check` runs the agent's code on. Reads go through, writes never.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { CoreV1Event, V1Node } from '../../../src/kube/kube.js';
import { ReadOnlyKube } from '../../../src/kube/read-only-kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { kuredDaemonSet } from '../../fakes/kube-objects.js';

let api: FakeApiServer;

beforeEach(async () => {
  api = await startFakeApiServer();
  api.create<V1Node>('nodes', { metadata: { name: 'n1' } });
  api.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
  await api.close();
});

describe('ReadOnlyKube', () => {
  it('refuses every write and records it, while reads go through', async () => {
    const kube = new ReadOnlyKube(api.kubeInMemory());
    expect((await kube.getNode('n1')).metadata?.name).toBe('n1');
    expect((await kube.getDaemonSet('kube-system', 'kured')).metadata?.name).toBe('kured');
    await expect(kube.mergePatchNode('n1', { spec: { unschedulable: true } })).rejects.toThrow('dry run');
    await expect(kube.jsonPatchNode('n1', [])).rejects.toThrow('dry run');
    await expect(kube.mergePatchDaemonSet('kube-system', 'kured', {})).rejects.toThrow('dry run');
    await expect(kube.evictPod('default', 'p', { gracePeriodSeconds: 0 })).rejects.toThrow('dry run');
    await expect(kube.createEvent('default', { reason: 'Rebooting' } as CoreV1Event)).rejects.toThrow(
      'dry run',
    );
    await expect(kube.mergePatchEvent('default', 'e', {})).rejects.toThrow('dry run');
    expect(kube.refused).toHaveLength(6);
    expect(api.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});
