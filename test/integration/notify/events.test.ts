// KubeEventRecorder through the real client-node against the fake API server.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { KubeEventRecorder } from '../../../src/events/kube-event-recorder.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';

const HOUR = 3_600_000;

let server: FakeApiServer;
let clock: FakeClock;
let log: MemoryLogger;
let recorder: KubeEventRecorder;

beforeEach(async () => {
  server = await startClusterApiServer();
  server.create<V1Node>('nodes', { metadata: { name: 'n1' } });
  clock = new FakeClock('2026-01-05T10:00:00Z');
  log = new MemoryLogger();
  recorder = new KubeEventRecorder({
    kube: server.kubeInMemory(),
    nodeId: 'n1',
    clock,
    log,
    periodMs: HOUR,
  });
});

afterEach(async () => {
  await server.close();
});

function events(): CoreV1Event[] {
  return server.list<CoreV1Event>('events', 'default');
}

describe('KubeEventRecorder', () => {
  it('records a core/v1 Event on the Node, reported by kured-ts', async () => {
    await recorder.record('RebootBlocked', 'alert HighErrorRate firing', 'Warning');
    const [event, ...rest] = events();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      metadata: { namespace: 'default' },
      involvedObject: {
        kind: 'Node',
        name: 'n1',
        uid: server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.uid,
      },
      reason: 'RebootBlocked',
      message: 'alert HighErrorRate firing',
      type: 'Warning',
      count: 1,
      source: { component: 'kured-ts', host: 'n1' },
      reportingComponent: 'kured-ts',
      reportingInstance: 'n1',
    });
    expect(event!.firstTimestamp).toBe('2026-01-05T10:00:00.000Z');
    expect(event!.metadata.name).toMatch(/^n1\.[0-9a-f]+$/);
  });

  it('writes the same reason and message at most once per period', async () => {
    await recorder.record('RebootBlocked', 'alert A firing');
    await Promise.all([
      recorder.record('RebootBlocked', 'alert A firing'),
      recorder.record('RebootBlocked', 'alert A firing'),
    ]);
    await clock.advance(HOUR - 1);
    await recorder.record('RebootBlocked', 'alert A firing');
    expect(events()).toHaveLength(1);
    await recorder.record('RebootBlocked', 'alert B firing');
    await recorder.record('Draining', 'alert A firing');
    expect(events()).toHaveLength(3);
    await clock.advance(1);
    await recorder.record('RebootBlocked', 'alert A firing');
    expect(
      events().filter((e) => e.message === 'alert A firing' && e.reason === 'RebootBlocked'),
    ).toHaveLength(2);
  });

  it('logs a failed write instead of throwing, and writes the Event on the next try', async () => {
    server.injectFailure({ method: 'POST', pathIncludes: '/events' }, 500, 1);
    await expect(recorder.record('Rebooting', 'rebooting n1')).resolves.toBeUndefined();
    expect(events()).toHaveLength(0);
    expect(log.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'cannot record event',
        fields: expect.objectContaining({ reason: 'Rebooting' }),
      }),
    );
    await recorder.record('Rebooting', 'rebooting n1');
    expect(events()).toHaveLength(1);
  });

  it('records without a uid when the Node cannot be read', async () => {
    server.delete('nodes', undefined, 'n1');
    await recorder.record('RebootRequired', 'reboot required');
    expect(events()[0]!.involvedObject.uid).toBeUndefined();
  });
});
