// What an agent reads and writes of its wave beyond its own Node, on the lock's DaemonSet: the id of
// the last wave started (WAVE_ANNOTATION, so that nodes recording their need at the same moment join
// one wave), the halt (a fleet pause written by kured-ts once the failure budget is spent), and the
// failures an operator's `kured-ts resume` acknowledged. The agent's admission policy lets it write
// exactly these: a wave id, and a halt where no pause stands (docs/security.md).
//
// Costs: a node joining a wave reads the DaemonSet (one GET) and, when the DaemonSet names a wave,
// whether anyone still waits in it (one list of rows, `limit=1`); the node that starts a wave writes
// its id (one guarded patch). A node that failed reads its wave's failed nodes (a few rows).
import { isConflict, isInvalid } from '../kube/errors.js';
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { nodesOfDaemonSet } from '../capacity/budget.js';
import { unacknowledged } from '../capacity/wave-gate.js';
import {
  FLEET_PAUSE_ANNOTATION,
  formatFleetPause,
  isWaveHalt,
  parseFleetPause,
  type FleetPause,
} from '../pause/fleet-pause.js';
import {
  WAVE_ANNOTATION,
  WAVE_ID,
  WAVE_LABEL,
  WAVE_RESUMED_ANNOTATION,
  WAVE_STATE_LABEL,
  parseWaveResume,
} from '../node/wave.js';

/** The DaemonSet as the wave reads it. */
export interface WaveSighting {
  /** The last wave started (undefined: none, or not an id). */
  wave?: string;
  resourceVersion: string;
  /** The halt of a wave (a pause by kured-ts), when one stands. */
  halt?: FleetPause;
  /** Any fleet pause stands (an operator's, or a halt). */
  paused: boolean;
  /** The failed nodes `kured-ts resume` acknowledged, of the wave it names. */
  resumed?: { wave: string; nodes: string[] };
  /** The nodes the DaemonSet runs on (--max-failures N%), when its controller has counted them. */
  nodes?: number;
}

/** The DaemonSet-side of a wave, for the agent (src/agent/decision/wave.ts). */
export interface WaveStore {
  sight(signal?: AbortSignal): Promise<WaveSighting>;
  /** Does any node still wait in `wave` (its need recorded, or failed and wanting it still)? */
  open(wave: string, signal?: AbortSignal): Promise<boolean>;
  /** Names `wave` the last started, if the DaemonSet is still at `resourceVersion`; false when not. */
  start(wave: string, resourceVersion: string, signal?: AbortSignal): Promise<boolean>;
  /** The failed nodes of `wave`, those acknowledged by `kured-ts resume` left out. */
  failed(wave: string, signal?: AbortSignal): Promise<string[]>;
  /** Writes `halt` where no pause stands (guarded); false when one stands or the write lost a race. */
  halt(halt: FleetPause, signal?: AbortSignal): Promise<boolean>;
}

/** What the lock's DaemonSet says of the wave; what is not of its form says nothing (a pause still pauses). */
function sightingOf(ds: V1DaemonSet): WaveSighting {
  const annotations = ds.metadata?.annotations ?? {};
  const wave = annotations[WAVE_ANNOTATION];
  const pause = parseFleetPause(annotations[FLEET_PAUSE_ANNOTATION]);
  const resumed = parseWaveResume(annotations[WAVE_RESUMED_ANNOTATION]);
  const sighting: WaveSighting = {
    resourceVersion: ds.metadata?.resourceVersion ?? '',
    paused: pause !== undefined,
  };
  const nodes = nodesOfDaemonSet(ds);
  if (nodes !== undefined) sighting.nodes = nodes;
  if (wave !== undefined && WAVE_ID.test(wave)) sighting.wave = wave;
  if (isWaveHalt(pause)) sighting.halt = pause;
  if (resumed !== undefined) sighting.resumed = { wave: resumed.wave, nodes: resumed.nodes };
  return sighting;
}

export class KubeWaveStore implements WaveStore {
  constructor(private readonly o: { kube: Kube; namespace: string; name: string }) {}

  async sight(signal?: AbortSignal): Promise<WaveSighting> {
    return sightingOf(await this.o.kube.getDaemonSet(this.o.namespace, this.o.name, signal));
  }

  async open(wave: string, signal?: AbortSignal): Promise<boolean> {
    const labelSelector = `${WAVE_LABEL}=${wave},${WAVE_STATE_LABEL} in (waiting,failed)`;
    const page = await this.o.kube.listNodesPage({ labelSelector, limit: 1 }, signal);
    return page.items.length > 0;
  }

  async start(wave: string, resourceVersion: string, signal?: AbortSignal): Promise<boolean> {
    return this.guarded({ metadata: { resourceVersion, annotations: { [WAVE_ANNOTATION]: wave } } }, signal);
  }

  async failed(wave: string, signal?: AbortSignal): Promise<string[]> {
    const labelSelector = `${WAVE_LABEL}=${wave},${WAVE_STATE_LABEL}=failed`;
    const [rows, seen] = await Promise.all([
      this.o.kube.listNodeRows({ labelSelector }, signal),
      this.sight(signal),
    ]);
    return unacknowledged(
      rows.map((r) => r.name),
      wave,
      seen.resumed,
    ).sort();
  }

  async halt(halt: FleetPause, signal?: AbortSignal): Promise<boolean> {
    const seen = await this.sight(signal);
    if (seen.paused) return false;
    const annotations = { [FLEET_PAUSE_ANNOTATION]: formatFleetPause(halt) };
    return this.guarded({ metadata: { resourceVersion: seen.resourceVersion, annotations } }, signal);
  }

  /** One merge patch guarded by resourceVersion: false when the DaemonSet changed meanwhile. */
  private async guarded(patch: object, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.o.kube.mergePatchDaemonSet(this.o.namespace, this.o.name, patch, signal);
      return true;
    } catch (err) {
      if (isConflict(err) || isInvalid(err)) return false;
      throw err;
    }
  }
}
