// PauseBlocker: the operator's brake. Fleet-wide pause on the DaemonSet, per-node opt-out on the Node.
import type { Kube } from '../kube/kube.js';
import { NODE_PAUSE_ANNOTATION, type NodeOps } from '../node/node.js';
import type { Blocker, Verdict } from './blocker.js';

/** The fleet pause annotation on our DaemonSet (written by `kured-ts pause`, DESIGN §4). */
export const FLEET_PAUSE_ANNOTATION = 'kured-ts.dev/paused';

export interface PauseBlockerOptions {
  kube: Kube;
  node: NodeOps;
  /** --ds-namespace / --ds-name */
  dsNamespace: string;
  dsName: string;
}

/** "paused by alice since 2026-01-05T10:00:00Z: kernel regression" from the annotation's JSON. */
function describePause(raw: string): string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    // Unreadable is still a pause: someone meant to stop the fleet.
    return `fleet paused (${FLEET_PAUSE_ANNOTATION} is not JSON: ${raw.slice(0, 80)})`;
  }
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (k: string): string => (typeof v[k] === 'string' ? v[k] : '');
  const by = text('by') === '' ? '' : ` by ${text('by')}`;
  const since = text('since') === '' ? '' : ` since ${text('since')}`;
  const reason = text('reason') === '' ? '' : `: ${text('reason')}`;
  return `fleet paused${by}${since}${reason}`;
}

export class PauseBlocker implements Blocker {
  readonly name = 'pause';

  constructor(private readonly options: PauseBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, node, dsNamespace, dsName } = this.options;
    const ds = await kube.getDaemonSet(dsNamespace, dsName, signal);
    const fleet = ds.metadata?.annotations?.[FLEET_PAUSE_ANNOTATION];
    if (fleet !== undefined) return { blocked: true, reason: describePause(fleet) };
    const state = await node.get(signal);
    if (state.annotations[NODE_PAUSE_ANNOTATION] === 'true') {
      return { blocked: true, reason: `node opted out (${NODE_PAUSE_ANNOTATION}=true)` };
    }
    return { blocked: false };
  }
}
