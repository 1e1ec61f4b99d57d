// Events on our Node as core/v1 Events (what `kubectl describe node` shows), deduplicated.
import type { Clock } from '../clock/clock.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { CoreV1Event, Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { EventReason, EventRecorder } from './events.js';

export interface KubeEventRecorderOptions {
  kube: Kube;
  /** This node (--node-id). */
  nodeId: string;
  /** The Node's uid when known; looked up once (best effort) otherwise. */
  nodeUid?: string;
  clock: Clock;
  log: Logger;
  /** The same reason and message is written at most once per this many ms (--period). */
  periodMs: number;
  /** Where Events of cluster-scoped objects go, as kubectl and client-go put them. Default 'default'. */
  namespace?: string;
}

const COMPONENT = 'kured-ts';

export class KubeEventRecorder implements EventRecorder {
  /** When each reason+message was last written (ms). */
  private readonly written = new Map<string, number>();
  private uid: string | undefined;
  private seq = 0;

  constructor(private readonly o: KubeEventRecorderOptions) {
    this.uid = o.nodeUid;
  }

  async record(reason: EventReason, message: string, type: 'Normal' | 'Warning' = 'Normal'): Promise<void> {
    const now = this.o.clock.now();
    this.forgetOlderThan(now.getTime() - this.o.periodMs);
    const key = `${reason}\n${message}`;
    if (this.written.has(key)) return;
    // Remembered before the write: concurrent identical records make one Event, not several.
    this.written.set(key, now.getTime());
    try {
      await this.write(reason, message, type, now);
    } catch (err) {
      this.written.delete(key);
      this.o.log.warn('cannot record event', { node: this.o.nodeId, reason, error: statusMessage(err) });
    }
  }

  /** Drops what was written before `cutoff`, so that the next identical Event is written again. */
  private forgetOlderThan(cutoff: number): void {
    for (const [key, at] of this.written) if (at <= cutoff) this.written.delete(key);
  }

  private async write(reason: EventReason, message: string, type: string, now: Date): Promise<void> {
    const namespace = this.o.namespace ?? 'default';
    const uid = await this.nodeUid();
    // client-go names Events <object>.<UnixNano in hex>; a counter keeps two in one ms apart.
    const name = `${this.o.nodeId}.${(BigInt(now.getTime()) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    const event: CoreV1Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: 'v1',
        kind: 'Node',
        name: this.o.nodeId,
        ...(uid === undefined ? {} : { uid }),
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now.toISOString(),
      lastTimestamp: now.toISOString(),
      source: { component: COMPONENT, host: this.o.nodeId },
      reportingComponent: COMPONENT,
      reportingInstance: this.o.nodeId,
    };
    await this.o.kube.createEvent(namespace, event);
  }

  private async nodeUid(): Promise<string | undefined> {
    if (this.uid !== undefined) return this.uid;
    try {
      this.uid = (await this.o.kube.getNode(this.o.nodeId)).metadata?.uid;
    } catch (err) {
      if (!isNotFound(err))
        this.o.log.debug('cannot read node uid for events', { error: statusMessage(err) });
    }
    return this.uid;
  }
}
