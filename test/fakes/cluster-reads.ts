// What the tests read back from the fake API server, as a user would with kubectl: the nodes the lock
// names, and a node's kured-ts status.
import type { V1DaemonSet, V1Node } from '../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import type { FakeApiServer } from '../../src/sim/fake-api-server.js';

const LOCK = 'weave.works/kured-node-lock';

/** The nodes the lock DaemonSet (kube-system/kured by default) names now. */
export function lockHolders(server: FakeApiServer, namespace = 'kube-system', name = 'kured'): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', namespace, name)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** Node `name` as stored. */
export function storedNode(server: FakeApiServer, name: string): V1Node {
  const node = server.get<V1Node>('nodes', undefined, name);
  if (node === undefined) throw new Error(`no node ${name}`);
  return node;
}

/** Node `name`'s status annotation, read. */
export function nodeStatus(server: FakeApiServer, name: string): ReturnType<typeof parseStatus> {
  return parseStatus(storedNode(server, name).metadata?.annotations?.[STATUS_ANNOTATION]);
}
