// A Kube that reads through and refuses every write: what `kured-ts check` runs the agent's own code
// on, so that a mistake there cannot touch the cluster.

import { ForwardingKube } from './forwarding-kube.js';
import type {
  CoreV1Event,
  EvictionOptions,
  JsonPatchOp,
  V1DaemonSet,
  V1Deployment,
  V1Lease,
  V1Node,
} from './kube.js';

/** A write `check` refused: it must never change the cluster. */
class DryRunWrite extends Error {
  override readonly name = 'DryRunWrite';
}

/**
 * Kube that reads through and refuses every write (and records what was attempted). A dry-run
 * eviction writes nothing and passes: the PDB pre-flight asks the server with it.
 */
export class ReadOnlyKube extends ForwardingKube {
  /** The writes refused, as "VERB what". */
  readonly refused: string[] = [];

  private refuse(what: string): Promise<never> {
    this.refused.push(what);
    return Promise.reject(new DryRunWrite(`dry run: refused to ${what}`));
  }

  override jsonPatchNode(name: string, ops: JsonPatchOp[]): Promise<V1Node> {
    return this.refuse(`json-patch node ${name}: ${JSON.stringify(ops)}`);
  }
  override mergePatchNode(name: string, patch: object): Promise<V1Node> {
    return this.refuse(`merge-patch node ${name}: ${JSON.stringify(patch)}`);
  }
  override evictPod(namespace: string, name: string, options: EvictionOptions): Promise<void> {
    const grace = options.gracePeriodSeconds === undefined ? '' : ` (grace ${options.gracePeriodSeconds}s)`;
    return this.refuse(`evict pod ${namespace}/${name}${grace}`);
  }
  override deletePod(namespace: string, name: string): Promise<void> {
    return this.refuse(`delete pod ${namespace}/${name}`);
  }
  override mergePatchDaemonSet(namespace: string, name: string, patch: object): Promise<V1DaemonSet> {
    return this.refuse(`merge-patch daemonset ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
  override mergePatchDeployment(namespace: string, name: string, patch: object): Promise<V1Deployment> {
    return this.refuse(`merge-patch deployment ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
  override createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.refuse(`create lease ${namespace}/${lease.metadata?.name ?? ''}`);
  }
  override replaceLease(namespace: string, name: string): Promise<V1Lease> {
    return this.refuse(`replace lease ${namespace}/${name}`);
  }
  override createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.refuse(`create event ${event.reason ?? ''} in ${namespace}`);
  }
  override mergePatchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.refuse(`merge-patch event ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
  override createObject(ref: { resource: string; namespace?: string }): Promise<unknown> {
    return this.refuse(`create ${ref.resource} in ${ref.namespace ?? 'the cluster'}`);
  }
}
