// The wait for a turn (src/queue/turn-gate.ts) follows the agent's own view of its Node while the
// view follows it: it subscribes, and sends no watch of its own (issue 57: one follower of the own
// Node, not a second reflector on a watch faked from the first). When the view does not follow, or
// stops while the node waits, the wait watches the Node itself and still wakes on its turn. The view
// here is a hand-written OwnNodeView; the gate talks to the fake API server through the real client.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { storedNode } from '../../fakes/cluster-reads.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import { realDelay, waitFor } from '../../fakes/wait-for.js';
import type { Change } from '../../../src/kube/followed.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import {
  ADVICE_ANNOTATION,
  CoordinatorLease,
  coordinatorLeaseName,
} from '../../../src/queue/coordinator-lease.js';
import { NodeTurnGate, type OwnNodeView } from '../../../src/queue/turn-gate.js';
import { TURN_ANNOTATION, formatTurn } from '../../../src/queue/turn.js';
import type { FakeApiServer, RecordedRequest } from '../../../src/sim/fake-api-server.js';

const NS = 'kube-system';
/** The staleness bound of the agent's watches (WATCH_SILENCE_MS in production); half of it is less than a lease duration. */
const SILENCE_MS = 20_000;

/** The agent's view of its Node as a test steers it: following or not, changed when told. */
class SteeredView implements OwnNodeView {
  following = true;
  private readonly listeners = new Set<(change: Change<V1Node>) => void>();

  constructor(private node: V1Node) {}

  get(name: string): V1Node | undefined {
    return this.following && this.node.metadata?.name === name ? this.node : undefined;
  }

  subscribe(listener: (change: Change<V1Node>) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** The view takes in `node` (as its watch brings a change). */
  change(node: V1Node): void {
    this.node = node;
    for (const listener of [...this.listeners]) listener({ type: 'MODIFIED', object: node });
  }

  /** The view stops following (its watch refused, say): it answers nothing, and says so. */
  stop(): void {
    this.following = false;
    for (const listener of [...this.listeners]) listener({ type: 'RELISTED' });
  }
}

let server: FakeApiServer;
let clock: FakeClock;
const stops: AbortController[] = [];

beforeEach(async () => {
  server = await startClusterApiServer();
  clock = new FakeClock('2026-01-05T10:00:00Z');
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  await server.kubeInMemory().createLease(NS, {
    metadata: {
      name: coordinatorLeaseName('kured'),
      namespace: NS,
      annotations: { [ADVICE_ANNOTATION]: JSON.stringify({ by: 'c-0', seq: 1, nodes: 1 }) },
    },
    spec: { holderIdentity: 'c-0', leaseDurationSeconds: 30 },
  });
});

afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  await server.close();
});

/** n1 with the coordinator's turn on it. */
function withTurn(node: V1Node): V1Node {
  const turn = formatTurn({ since: '2026-01-05T10:00:00Z', by: 'c-0' });
  return {
    ...node,
    metadata: { ...node.metadata, annotations: { ...node.metadata?.annotations, [TURN_ANNOTATION]: turn } },
  };
}

/** n1 with a status write of its own agent (no turn). */
function withStatus(node: V1Node): V1Node {
  return {
    ...node,
    metadata: { ...node.metadata, annotations: { ...node.metadata?.annotations, status: 'x' } },
  };
}

/** The watches of n1 sent to the API server since request `from`. */
function watchesOfN1(from: number): RecordedRequest[] {
  return server.requests
    .slice(from)
    .filter(
      (r) =>
        r.query.watch === 'true' &&
        r.path === '/api/v1/nodes' &&
        r.query.fieldSelector === 'metadata.name=n1',
    );
}

/** n1's gate, asked its verdict (a wait), then waiting for its turn: whether it woke, and since which request. */
async function waiting(view: OwnNodeView): Promise<{ woke: () => boolean; from: number }> {
  const kube = server.kubeInMemory();
  const coordinator = new CoordinatorLease({
    kube,
    namespace: NS,
    name: coordinatorLeaseName('kured'),
    clock,
  });
  const log = new MemoryLogger();
  const gate = new NodeTurnGate({
    kube,
    nodeId: 'n1',
    coordinator,
    clock,
    log,
    random: () => 0.5,
    ownNode: view,
    silenceMs: SILENCE_MS,
  });
  expect((await gate.verdict()).kind).toBe('wait');
  const from = server.requests.length;
  const stop = new AbortController();
  stops.push(stop);
  let woke = false;
  void gate.waitForTurn(3_600_000, stop.signal).then(
    () => (woke = true),
    () => undefined,
  );
  return { woke: () => woke, from };
}

describe('the wait for a turn, with the agent following its own Node', () => {
  it('subscribes to the view: no watch of its own, not woken by a write that is not its turn, woken by its turn', async () => {
    const view = new SteeredView(storedNode(server, 'n1'));
    const wait = await waiting(view);
    view.change(withStatus(storedNode(server, 'n1')));
    await realDelay(50); // real time for anything the change set off
    expect(wait.woke()).toBe(false);
    view.change(withTurn(storedNode(server, 'n1')));
    await waitFor(wait.woke, 'the waiter wakes on its turn');
    expect(watchesOfN1(wait.from)).toEqual([]);
  });

  it.each<[string, 'before' | 'says so' | 'silently']>([
    ['its view does not follow the Node when it begins', 'before'],
    ['its view stops following while it waits, and says so', 'says so'],
    [
      'its view stops following while it waits without a word (its watch hangs: only its bound tells)',
      'silently',
    ],
  ])('watches the Node itself when %s, and wakes on the turn written there', async (_name, when) => {
    const view = new SteeredView(storedNode(server, 'n1'));
    if (when === 'before') view.following = false;
    const wait = await waiting(view);
    if (when !== 'before') {
      await realDelay(50);
      expect(watchesOfN1(wait.from)).toEqual([]);
      if (when === 'says so') view.stop();
      else {
        view.following = false;
        await realDelay(50);
        expect(watchesOfN1(wait.from)).toEqual([]);
        await clock.advance(SILENCE_MS / 2);
      }
    }
    await waitFor(() => watchesOfN1(wait.from).length > 0, 'the wait watches n1 itself');
    expect(wait.woke()).toBe(false);
    server.update('nodes', withTurn(storedNode(server, 'n1')));
    await waitFor(wait.woke, 'the waiter wakes on its turn');
  });
});
