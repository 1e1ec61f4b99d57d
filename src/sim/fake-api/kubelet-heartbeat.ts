// The kubelets' status heartbeats: every Node's Ready condition gets a new lastHeartbeatTime at a
// fixed interval, a write of its own (new resourceVersion, a MODIFIED event), as on a real cluster
// where kubelets and the node lifecycle controller write Nodes every 10 s to 1 min. Code that
// writes Nodes must expect its resourceVersion to move between its read and its write.
import type { Clock } from '../../clock/clock.js';
import { isObject } from './json.js';
import type { StoredObject } from './resources.js';
import { kubeTime } from './registry.js';
import type { Store } from './store.js';

/** The Node with its Ready condition's heartbeat at `at`; undefined when it has no Ready condition. */
function beat(node: StoredObject, at: string): StoredObject | undefined {
  const status = isObject(node.status) ? node.status : undefined;
  const conditions = Array.isArray(status?.conditions) ? status.conditions : undefined;
  if (conditions?.some((c) => isObject(c) && c.type === 'Ready') !== true) return undefined;
  const beaten = conditions.map((c: unknown) =>
    isObject(c) && c.type === 'Ready' ? { ...c, lastHeartbeatTime: at } : c,
  );
  return { ...node, status: { ...status, conditions: beaten } };
}

/** Starts the heartbeats every `everyMs` (real time); returns the function that stops them. */
export function startKubeletHeartbeats(store: Store, clock: Clock, everyMs: number): () => void {
  const timer = setInterval(() => {
    const at = kubeTime(clock.now());
    for (const node of store.list('nodes', undefined)) {
      const next = beat(node, at);
      if (next) store.commit('nodes', 'MODIFIED', next);
    }
  }, everyMs);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}
