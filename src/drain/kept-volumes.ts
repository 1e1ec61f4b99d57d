// KeptVolumes over the API server: the pods still on the node after the drain (not terminating, not
// finished: the DaemonSet pods, mirror pods and pods a drain rule skipped) and, for each of their
// PersistentVolumeClaims, the CSI volume bound to it (a GET of the claim and of its volume). A node
// whose pods left use no claim, the usual case, costs no request beyond the list of its pods, which
// the agent's own view of its pods answers. A claim or volume that cannot be read is not kept: the
// reboot waits for it like any other, and names it if it never detaches (fail safe).
import type { Kube, V1Pod } from '../kube/kube.js';
import { csiVolumeName, type KeptVolumes } from '../volumes/volumes.js';

/** Is the pod still on the node for good (not being deleted, not finished)? */
function stays(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata?.deletionTimestamp === undefined && phase !== 'Succeeded' && phase !== 'Failed';
}

/** The claims a pod mounts, as namespace/name. */
function claimsOf(pod: V1Pod): { namespace: string; name: string }[] {
  const namespace = pod.metadata?.namespace ?? 'default';
  return (pod.spec?.volumes ?? []).flatMap((v) =>
    v.persistentVolumeClaim === undefined ? [] : [{ namespace, name: v.persistentVolumeClaim.claimName }],
  );
}

/** A string at `path` in an unknown JSON object; undefined when it is not one. */
function stringAt(value: unknown, path: readonly string[]): string | undefined {
  let at: unknown = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return typeof at === 'string' && at !== '' ? at : undefined;
}

export class KubeKeptVolumes implements KeptVolumes {
  constructor(
    private readonly o: {
      kube: Pick<Kube, 'listPods' | 'getObject'>;
      nodeId: string;
    },
  ) {}

  /**
   * `left` says which pods the drain leaves: by default, after the drain, those still there for good;
   * `kured-ts check`, before it, passes the drain's own plan.
   */
  async kept(signal?: AbortSignal, left: (pod: V1Pod) => boolean = stays): Promise<Set<string>> {
    const pods = await this.o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${this.o.nodeId}` },
      signal,
    );
    const names = new Set<string>();
    for (const claim of pods.filter(left).flatMap(claimsOf)) {
      const name = await this.volumeOf(claim, signal).catch(() => undefined);
      if (name !== undefined) names.add(name);
    }
    return names;
  }

  /** The unique name of the CSI volume bound to `claim`; undefined when it has none or is not CSI. */
  private async volumeOf(
    claim: { namespace: string; name: string },
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const get = this.o.kube.getObject;
    if (get === undefined) return undefined;
    const pvc = await get.call(
      this.o.kube,
      { group: '', version: 'v1', resource: 'persistentvolumeclaims', ...claim },
      signal,
    );
    const volume = stringAt(pvc, ['spec', 'volumeName']);
    if (volume === undefined) return undefined;
    const pv = await get.call(
      this.o.kube,
      { group: '', version: 'v1', resource: 'persistentvolumes', name: volume },
      signal,
    );
    const driver = stringAt(pv, ['spec', 'csi', 'driver']);
    const handle = stringAt(pv, ['spec', 'csi', 'volumeHandle']);
    return driver === undefined || handle === undefined ? undefined : csiVolumeName(driver, handle);
  }
}
