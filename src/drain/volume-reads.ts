// VolumeReads over the API server: the pods still on the node after the drain (not terminating, not
// finished: the DaemonSet pods, mirror pods and pods a drain rule skipped) and, for each of their
// PersistentVolumeClaims, the CSI volume bound to it (a GET of the claim and of its volume). A node
// whose pods left use no claim, the usual case, costs no request beyond the list of its pods, which
// the agent's own view of its pods answers. A claim or volume that is gone keeps nothing; one that
// cannot be read now fails the question, which the wait asks again at its next look (meanwhile it
// waits for every volume: fail safe).
import type { Kube, V1Pod } from '../kube/kube.js';
import { createHash } from 'node:crypto';
import { isForbidden, isNotFound } from '../kube/errors.js';
import { csiParts, csiVolumeName, type VolumeReads } from '../volumes/volumes.js';

/** Is the pod still on the node for good (not being deleted, not finished)? */
function stays(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata?.deletionTimestamp === undefined && phase !== 'Succeeded' && phase !== 'Failed';
}

/** The claims a pod mounts, as namespace/name. */
function claimsOf(pod: V1Pod): { namespace: string; name: string }[] {
  const namespace = pod.metadata?.namespace ?? 'default';
  const podName = pod.metadata?.name ?? '';
  return (pod.spec?.volumes ?? []).flatMap((v) => {
    if (v.persistentVolumeClaim !== undefined)
      return [{ namespace, name: v.persistentVolumeClaim.claimName }];
    // a generic ephemeral volume's claim is named after the pod and the volume
    return v.ephemeral === undefined ? [] : [{ namespace, name: `${podName}-${v.name}` }];
  });
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

/**
 * The name the attach-detach controller gives the VolumeAttachment of a CSI volume on a node
 * (kubernetes' csi_attacher: `csi-` and the hex SHA-256 of handle, driver and node): read by name,
 * no list of the fleet's attachments.
 */
function attachmentName(csi: { driver: string; handle: string }, node: string): string {
  return `csi-${createHash('sha256').update(`${csi.handle}${csi.driver}${node}`).digest('hex')}`;
}

export class KubeVolumeReads implements VolumeReads {
  /** 403 on VolumeAttachments: not asked again (the node's status alone judges). */
  private attachmentsForbidden = false;
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
      // a claim or volume gone (404) keeps nothing; any other failure is thrown: asked again later
      const name = await this.volumeOf(claim, signal).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (name !== undefined) names.add(name);
    }
    return names;
  }

  async detaching(names: readonly string[], signal?: AbortSignal): Promise<string[]> {
    const get = this.o.kube.getObject;
    if (get === undefined || this.attachmentsForbidden) return [];
    const still: string[] = [];
    for (const name of names) {
      const csi = csiParts(name);
      if (csi === undefined) continue;
      const ref = {
        group: 'storage.k8s.io',
        version: 'v1',
        resource: 'volumeattachments',
        name: attachmentName(csi, this.o.nodeId),
      };
      try {
        await get.call(this.o.kube, ref, signal);
        still.push(name);
      } catch (err) {
        if (isNotFound(err)) continue;
        // a chart without `get volumeattachments` (older than this agent): the status alone, said once
        if (isForbidden(err)) {
          this.attachmentsForbidden = true;
          return [];
        }
        throw err;
      }
    }
    return still;
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
