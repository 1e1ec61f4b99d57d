// The fake API server's kubelets: every Node with a Ready condition is written on its own at an
// interval, so that the tests' guarded writes race them as they race kubelets on a real cluster.
import { afterEach, expect, it } from '@jest/globals';
import type { V1Node } from '../../../src/kube/kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { waitFor, realDelay } from '../../fakes/wait-for.js';
import { readyNode } from '../../fakes/kube-objects.js';

let server: FakeApiServer | undefined;

afterEach(async () => {
  await server?.close();
});

it("writes each Ready node's heartbeat on its own, moving its resourceVersion, and stops at close", async () => {
  server = await startFakeApiServer({ kubeletHeartbeatMs: 20 });
  const s = server;
  s.create<V1Node>('nodes', readyNode('n1'));
  const plain = s.create<V1Node>('nodes', { metadata: { name: 'no-status' } }).metadata?.resourceVersion;
  const first = s.get<V1Node>('nodes', undefined, 'n1')?.metadata?.resourceVersion;
  const ready = (): { lastHeartbeatTime?: unknown } | undefined =>
    s.get<V1Node>('nodes', undefined, 'n1')?.status?.conditions?.find((c) => c.type === 'Ready');
  await waitFor(() => ready()?.lastHeartbeatTime !== undefined, 'a heartbeat');
  expect(s.get<V1Node>('nodes', undefined, 'n1')?.metadata?.resourceVersion).not.toBe(first);
  expect(ready()).toMatchObject({ status: 'True' });
  // a Node without a Ready condition has no kubelet reporting: left alone
  expect(s.get<V1Node>('nodes', undefined, 'no-status')?.metadata?.resourceVersion).toBe(plain);
  await s.close();
  const closedAt = s.get<V1Node>('nodes', undefined, 'n1')?.metadata?.resourceVersion;
  // Five heartbeat intervals of real time: the heartbeats run on real timers by design (they race the
  // tests' writes as kubelets do), so no clock can be moved instead; a heartbeat after close would move
  // the resourceVersion and fail this.
  await realDelay(100);
  expect(s.get<V1Node>('nodes', undefined, 'n1')?.metadata?.resourceVersion).toBe(closedAt);
  server = undefined;
});
