// The adapter contract: what src/kube, src/node and src/lock promise of the API server, asserted on
// outcomes only (what the server stores), so that the same cases run against the fake API server
// (test/integration/kube/contract-fake.test.ts) and a real kube-apiserver (test/real-api/).
import { createHash } from 'node:crypto';
import { KubeVolumeReads } from '../../src/drain/volume-reads.js';
import { csiVolumeName } from '../../src/volumes/volumes.js';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { SystemClock } from '../../src/clock/clock.js';
import type {
  Kube,
  V1DaemonSet,
  V1Deployment,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
} from '../../src/kube/kube.js';
import { RolloutRestarter } from '../../src/drain/rollout-restart.js';
import { RESTARTED_AT_ANNOTATION } from '../../src/drain/single-replica.js';
import { DaemonSetLock } from '../../src/lock/daemonset-lock.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { CYCLE_LABEL } from '../../src/node/cycle.js';
import { KubeDrainer } from '../../src/drain/kube-drainer.js';
import { PdbBlocker } from '../../src/blockers/pdb.js';
import { KubeEventRecorder } from '../../src/events/kube-event-recorder.js';
import { KubeNodeOps } from '../../src/node/kube-node-ops.js';
import { STATUS_ANNOTATION } from '../../src/node/status.js';
import { failure } from '../fakes/api-failure.js';
import { waitFor } from '../fakes/wait-for.js';
import type { TestCluster } from './cluster.js';

const NODE = 'contract-n1';
const TAINT = 'weave.works/kured-node-reboot';
const LOCK = 'weave.works/kured-node-lock';
const NS = 'kube-system';
const DS = 'kured';

function nodeObject(name: string): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: { taints: [{ key: 'user/dedicated', value: 'db', effect: 'NoSchedule' }] },
  };
}

function daemonSet(): V1DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: DS, namespace: NS, annotations: { 'owner/other': 'keep-me' } },
    spec: {
      selector: { matchLabels: { app: DS } },
      template: {
        metadata: { labels: { app: DS } },
        spec: { containers: [{ name: DS, image: 'kured-ts' }] },
      },
    },
  };
}

function pod(name: string, labels: Record<string, string>): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'c', image: 'busybox' }],
    },
  };
}

/** Defines the contract's cases over the cluster `open` gives for each test. */
export function adapterContract(open: () => Promise<TestCluster>): void {
  let cluster: TestCluster;
  let kube: Kube;

  beforeEach(async () => {
    cluster = await open();
    kube = cluster.kube();
    await cluster.create('nodes', nodeObject(NODE));
    await cluster.patchStatus('nodes', undefined, NODE, {
      nodeInfo: { bootID: 'boot-1', kernelVersion: '6.1', osImage: 'Debian' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    });
  });

  afterEach(async () => {
    await cluster.close();
  });

  const node = async (): Promise<V1Node> => (await cluster.get<V1Node>('nodes', undefined, NODE))!;
  const ops = (k: Kube = kube): KubeNodeOps =>
    new KubeNodeOps({ kube: k, nodeId: NODE, clock: new SystemClock(), log: new MemoryLogger() });

  describe('node operations', () => {
    it('reads bootID, conditions and taints as the kubelet and others wrote them', async () => {
      const state = await ops().get();
      expect(state).toMatchObject({
        name: NODE,
        unschedulable: false,
        bootID: 'boot-1',
        conditions: [{ type: 'Ready', status: 'True' }],
      });
      // kube-apiserver adds node.kubernetes.io/not-ready to every Node created through the API
      expect(state.taints).toEqual([
        { key: 'user/dedicated', value: 'db', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      ]);
    });

    it('cordons and uncordons through spec.unschedulable only, and the server names us its manager', async () => {
      const taints = (await node()).spec?.taints;
      await ops().write({ unschedulable: true });
      const cordoned = await ops().get();
      expect(cordoned.unschedulable).toBe(true);
      expect(cordoned.unschedulableOwners).toEqual(['kured-ts']);
      await ops().write({ unschedulable: false });
      expect((await node()).spec?.unschedulable).toBeFalsy();
      expect((await node()).spec?.taints).toEqual(taints);
    });

    it("names the admin as the cordon's manager when kubectl cordons the node", async () => {
      expect(await cluster.patch('nodes', undefined, NODE, { spec: { unschedulable: true } })).toBe(200);
      const state = await ops().get();
      expect(state.unschedulable).toBe(true);
      expect(state.unschedulableOwners).not.toContain('kured-ts');
      expect(state.unschedulableOwners.length).toBeGreaterThan(0);
    });

    it('takes kubectl cordon (a strategic merge patch) as the admin cordon it is, owned by kubectl', async () => {
      expect(
        await cluster.patch('nodes', undefined, NODE, { as: 'kubectl', spec: { unschedulable: true } }),
      ).toBe(200);
      const state = await ops().get();
      expect(state.unschedulable).toBe(true);
      expect(state.unschedulableOwners).toEqual(['kubectl']);
    });

    it('sees a strategic merge patch replace the taint list whole (Kubernetes declares it atomic)', async () => {
      const taint = { key: 'user/only', effect: 'NoSchedule' };
      expect(
        await cluster.patch('nodes', undefined, NODE, { as: 'kubectl', spec: { taints: [taint] } }),
      ).toBe(200);
      expect((await node()).spec?.taints).toEqual([taint]);
    });

    it('sees a strategic merge patch of status conditions merge them by type, keeping Ready', async () => {
      await cluster.patchStatus('nodes', undefined, NODE, {
        as: 'strategic',
        conditions: [
          { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'ok' },
        ],
      });
      const state = await ops().get();
      // the patch's elements first, then the ones only the server had, as kube-apiserver orders them
      expect(state.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
        'DiskPressure=False',
        'Ready=True',
      ]);
    });

    it('keeps a taint another actor adds between its read and its write', async () => {
      const before = (await node()).spec?.taints ?? [];
      let raced = false;
      const racing = new Proxy(kube, {
        get(target, prop, receiver): unknown {
          const value: unknown = Reflect.get(target, prop, receiver);
          if (prop !== 'getNode' || typeof value !== 'function') return value;
          return async (...args: unknown[]): Promise<unknown> => {
            const read: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (!raced) {
              raced = true;
              await cluster.patch('nodes', undefined, NODE, {
                spec: { taints: [...before, { key: 'user/late', effect: 'NoExecute' }] },
              });
            }
            return read;
          };
        },
      });
      await ops(racing).addTaint(TAINT);
      expect(raced).toBe(true);
      const keys = before.map((t) => t.key);
      expect((await node()).spec?.taints?.map((t) => `${t.key}:${t.effect}`)).toEqual([
        ...before.map((t) => `${t.key}:${t.effect}`),
        'user/late:NoExecute',
        `${TAINT}:PreferNoSchedule`,
      ]);
      await ops().removeTaint(TAINT);
      expect((await node()).spec?.taints?.map((t) => t.key)).toEqual([...keys, 'user/late']);
    });

    it('writes only while the node is still as read: a stale resourceVersion writes nothing', async () => {
      const read = await ops().get();
      await cluster.patch('nodes', undefined, NODE, { metadata: { labels: { other: 'x' } } });
      await expect(ops().write({ unschedulable: true }, read.resourceVersion)).resolves.toBeUndefined();
      expect((await node()).spec?.unschedulable).toBeFalsy();
      const fresh = await ops().get();
      await ops().write({ unschedulable: true, labels: { [CYCLE_LABEL]: 'true' } }, fresh.resourceVersion);
      expect((await node()).metadata?.labels).toMatchObject({ other: 'x', [CYCLE_LABEL]: 'true' });
    });

    it('writes its status annotation and leaves the annotations of others', async () => {
      await cluster.patch('nodes', undefined, NODE, { metadata: { annotations: { 'team/owner': 'db' } } });
      const status = {
        phase: 'pending' as const,
        reason: 'reboot required',
        since: '2026-01-05T10:00:00Z',
        bootID: 'boot-1',
      };
      await ops().setStatus(status);
      const annotations = (await node()).metadata?.annotations ?? {};
      expect(JSON.parse(annotations[STATUS_ANNOTATION] ?? '{}')).toEqual(status);
      expect(annotations['team/owner']).toBe('db');
    });
  });

  describe("paged lists (the coordinator's view of the fleet)", () => {
    it('lists the nodes page by page from one snapshot: writes between pages do not show until the next list', async () => {
      const selector = 'contract-page=yes';
      const names = ['contract-p1', 'contract-p2', 'contract-p3', 'contract-p4', 'contract-p5'];
      for (const name of names) {
        await cluster.create('nodes', {
          ...nodeObject(name),
          metadata: { name, labels: { 'contract-page': 'yes' } },
        });
      }
      const first = await kube.listNodesPage({ labelSelector: selector, limit: 2 });
      expect(first.items.map((n) => n.metadata?.name)).toEqual(['contract-p1', 'contract-p2']);
      expect(first.continue).toBeDefined();
      // a node added, one changed and one deleted after the first page
      await cluster.create('nodes', {
        ...nodeObject('contract-p0'),
        metadata: { name: 'contract-p0', labels: { 'contract-page': 'yes' } },
      });
      expect(
        await cluster.patch('nodes', undefined, 'contract-p4', {
          metadata: { annotations: { late: 'yes' } },
        }),
      ).toBe(200);
      await cluster.forceDelete('nodes', undefined, 'contract-p5');
      const rest: V1Node[] = [];
      let token = first.continue;
      while (token !== undefined) {
        const page = await kube.listNodesPage({ labelSelector: selector, limit: 2, continue: token });
        expect(page.resourceVersion).toBe(first.resourceVersion);
        rest.push(...page.items);
        token = page.continue;
      }
      expect(rest.map((n) => n.metadata?.name)).toEqual(['contract-p3', 'contract-p4', 'contract-p5']);
      expect(
        rest.find((n) => n.metadata?.name === 'contract-p4')?.metadata?.annotations?.late,
      ).toBeUndefined();
      const now = await kube.listNodesPage({ labelSelector: selector });
      expect(now.items.map((n) => n.metadata?.name)).toEqual([
        'contract-p0',
        'contract-p1',
        'contract-p2',
        'contract-p3',
        'contract-p4',
      ]);
      expect(now.continue).toBeUndefined();
      for (const name of ['contract-p0', ...names]) await cluster.forceDelete('nodes', undefined, name);
    });
  });

  describe('the lock on the DaemonSet', () => {
    beforeEach(async () => {
      await cluster.create('daemonsets', daemonSet());
      for (const n of ['contract-n2', 'contract-n3', 'contract-n4'])
        await cluster.create('nodes', nodeObject(n));
    });

    const lock = (nodeId: string, concurrency = 1): DaemonSetLock =>
      new DaemonSetLock({
        kube: cluster.kube(),
        namespace: NS,
        name: DS,
        annotation: LOCK,
        nodeId,
        concurrency: { count: concurrency },
        ttlMs: 0,
        clock: new SystemClock(),
        log: new MemoryLogger(),
      });
    const holders = async (): Promise<string[]> => {
      const text = (await cluster.get<V1DaemonSet>('daemonsets', NS, DS))?.metadata?.annotations?.[LOCK];
      return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
    };

    it('gives a slot to exactly --concurrency of four nodes asking at once', async () => {
      const nodes = [NODE, 'contract-n2', 'contract-n3', 'contract-n4'];
      const results = await Promise.all(nodes.map((n) => lock(n, 2).acquire({ unschedulable: false })));
      expect(results.filter((r) => r.acquired)).toHaveLength(2);
      expect((await holders()).sort()).toEqual(nodes.filter((_, i) => results[i]?.acquired === true).sort());
      const ds = await cluster.get<V1DaemonSet>('daemonsets', NS, DS);
      expect(ds?.metadata?.annotations?.['owner/other']).toBe('keep-me');
    });

    it('hands the slot on when its holder releases it, and a waiter sees the change by watch', async () => {
      expect((await lock(NODE).acquire({ unschedulable: false })).acquired).toBe(true);
      const waiter = lock('contract-n2');
      expect((await waiter.acquire({ unschedulable: false })).acquired).toBe(false);
      let woke = false;
      const waiting = waiter.waitForChange(60_000).then(() => (woke = true));
      await lock(NODE).release();
      await waiting;
      expect(woke).toBe(true);
      expect((await waiter.acquire({ unschedulable: false })).acquired).toBe(true);
      expect(await holders()).toEqual(['contract-n2']);
    });
  });

  describe('the volumes after the drain (issue 54)', () => {
    const DRIVER = 'driver.longhorn.io';
    const volume = csiVolumeName(DRIVER, 'pv-data');
    /** The name the attach-detach controller gives it: csi-<sha256 of handle, driver and node>. */
    const attachmentName = `csi-${createHash('sha256').update(`pv-data${DRIVER}${NODE}`).digest('hex')}`;
    /** The attach-detach controller's record of pv-data attached to the node. */
    const attachment = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: attachmentName },
      spec: { attacher: DRIVER, nodeName: NODE, source: { persistentVolumeName: 'pv-data' } },
    };

    it('reads the volumes attached to the node and in use on it as the controller and the kubelet write them, and their detach', async () => {
      await cluster.create('volumeattachments', attachment);
      await cluster.patchStatus('nodes', undefined, NODE, {
        volumesAttached: [{ name: volume, devicePath: '' }],
        volumesInUse: [volume],
      });
      expect((await ops().get()).volumes).toEqual({ attached: [volume], inUse: [volume] });
      const reads = new KubeVolumeReads({ kube, nodeId: NODE });
      expect(await reads.detaching([volume])).toEqual([volume]);
      // the kubelet unmounts, then the controller detaches and deletes its record
      await cluster.patchStatus('nodes', undefined, NODE, { volumesInUse: [] });
      expect((await ops().get()).volumes).toEqual({ attached: [volume], inUse: [] });
      await cluster.patchStatus('nodes', undefined, NODE, { volumesAttached: [] });
      expect((await ops().get()).volumes).toEqual({ attached: [], inUse: [] });
      // gone from the status before the CSI detach ends: still detaching while its record stands
      expect(await reads.detaching([volume])).toEqual([volume]);
      await cluster.forceDelete('volumeattachments', undefined, attachmentName);
      expect(await reads.detaching([volume])).toEqual([]);
    });

    it('names the CSI volume of a claim that a pod left on the node mounts, from its claim and bound volume', async () => {
      await cluster.create('persistentvolumes', {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv-data' },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          csi: { driver: DRIVER, volumeHandle: 'pv-data' },
        },
      });
      await cluster.create('persistentvolumeclaims', {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: 'default' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          volumeName: 'pv-data',
          storageClassName: '',
        },
      });
      const left = pod('storage-agent', { app: 'storage' });
      await cluster.create('pods', {
        ...left,
        metadata: {
          ...left.metadata,
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'DaemonSet',
              name: 'storage',
              uid: '00000000-0000-0000-0000-000000000001',
            },
          ],
        },
        spec: { ...left.spec, volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] },
      });
      expect([...(await new KubeVolumeReads({ kube, nodeId: NODE }).kept())]).toEqual([volume]);
    });
  });

  describe('drain and eviction', () => {
    const drainer = (timeoutMs = 0): KubeDrainer =>
      new KubeDrainer({
        kube,
        nodeId: NODE,
        clock: new SystemClock(),
        log: new MemoryLogger(),
        timeoutMs,
        gracePeriodSeconds: -1,
        podSelector: [],
        skipWaitForDeleteTimeoutSeconds: 0,
        evictionRetryDelayMs: 200,
        pollMs: 50,
      });
    /** A pod of the node, Running and Ready as its kubelet reports it. */
    const runningPod = async (name: string, labels: Record<string, string>): Promise<void> => {
      await cluster.create('pods', pod(name, labels));
      await cluster.patchStatus('pods', 'default', name, {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True' }],
      });
    };
    const pods = async (): Promise<string[]> =>
      (await cluster.list<V1Pod>('pods', 'default'))
        .filter((p) => p.spec?.nodeName === NODE)
        .map((p) => p.metadata?.name ?? '');

    const podNow = (name: string): Promise<V1Pod | undefined> => cluster.get<V1Pod>('pods', 'default', name);
    const budget = (name: string, app: string, minAvailable: number): V1PodDisruptionBudget => ({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: 'default' },
      spec: { minAvailable, selector: { matchLabels: { app } } },
    });

    it('evicts the pods of the node and waits until the kubelet has removed them', async () => {
      await runningPod('web-1', { app: 'web' });
      await runningPod('web-2', { app: 'web' });
      cluster.startKubelet();
      const result = await drainer().drain();
      expect(result).toMatchObject({ ok: true });
      expect(await pods()).toEqual([]);
    });

    it('is refused by a PodDisruptionBudget that allows no disruption, and goes on once the budget allows one', async () => {
      await runningPod('db-1', { app: 'db' });
      await cluster.create('poddisruptionbudgets', budget('db', 'db', 1));
      await cluster.syncBudget('default', 'db');
      cluster.startKubelet();
      const refused = await drainer(1_500).drain();
      expect(refused.ok).toBe(false);
      expect(refused.requests.refused).toBeGreaterThan(0);
      expect(await pods()).toEqual(['db-1']);
      // the owner lowers the budget; the disruption controller catches up
      expect(
        await cluster.patch('poddisruptionbudgets', 'default', 'db', { spec: { minAvailable: 0 } }),
      ).toBe(200);
      await cluster.syncBudget('default', 'db');
      const drained = await drainer().drain();
      expect(drained.ok).toBe(true);
      expect(await pods()).toEqual([]);
    });

    it.each([
      ['an eviction', false],
      ['a dry-run eviction (the PDB pre-flight)', true],
    ])(
      "answers %s that names another UID than the pod's with 409 Conflict, and evicts nothing",
      async (_name, dryRun) => {
        await runningPod('web-1', { app: 'web' });
        const uid = (await podNow('web-1'))?.metadata?.uid ?? '';
        const other = '0d2c4c2e-0000-4000-8000-000000000000';
        const options = { uid: other };
        const status = await failure(
          dryRun
            ? kube.dryRunEviction('default', 'web-1', options)
            : kube.evictPod('default', 'web-1', options),
        );
        expect(status).toMatchObject({
          code: 409,
          reason: 'Conflict',
          message:
            `Operation cannot be fulfilled on Pod "web-1": the UID in the precondition (${other}) does not ` +
            `match the UID in record (${uid}). The object might have been deleted and then recreated`,
          details: { name: 'web-1', kind: 'Pod' },
        });
        const after = await podNow('web-1');
        expect([after?.metadata?.uid, after?.metadata?.deletionTimestamp]).toEqual([uid, undefined]);
      },
    );

    it('evicts the pod whose UID the eviction names', async () => {
      await runningPod('web-1', { app: 'web' });
      const uid = (await podNow('web-1'))?.metadata?.uid ?? '';
      await kube.dryRunEviction('default', 'web-1', { uid });
      expect((await podNow('web-1'))?.metadata?.deletionTimestamp).toBeUndefined();
      await kube.evictPod('default', 'web-1', { uid });
      expect((await podNow('web-1'))?.metadata?.deletionTimestamp).toEqual(expect.any(String));
    });

    it("answers a budget's refusal (429) before a UID that does not match: the budget is judged first", async () => {
      await runningPod('db-1', { app: 'db' });
      await cluster.create('poddisruptionbudgets', budget('db', 'db', 1));
      await cluster.syncBudget('default', 'db');
      const options = { uid: '0d2c4c2e-0000-4000-8000-000000000000' };
      expect(await failure(kube.dryRunEviction('default', 'db-1', options))).toMatchObject({ code: 429 });
      expect(await failure(kube.evictPod('default', 'db-1', options))).toMatchObject({ code: 429 });
    });

    it('does not evict a same-name pod recreated after the drain listed it: the pod it meant is gone', async () => {
      await runningPod('db-0', { app: 'db' });
      await cluster.create('poddisruptionbudgets', budget('db', 'db', 1));
      await cluster.syncBudget('default', 'db');
      cluster.startKubelet();
      let refused = 0;
      const draining = drainer().drain(undefined, {
        onEviction: (outcome) => {
          if (outcome === 'refused') refused++;
        },
      });
      await waitFor(() => refused > 0, 'the budget refused the first eviction');
      // a StatefulSet's controller replaces the pod under its name meanwhile, and its budget allows
      await cluster.forceDelete('pods', 'default', 'db-0');
      await runningPod('db-0', { app: 'db' });
      const recreated = (await podNow('db-0'))?.metadata?.uid;
      expect(
        await cluster.patch('poddisruptionbudgets', 'default', 'db', { spec: { minAvailable: 0 } }),
      ).toBe(200);
      await cluster.syncBudget('default', 'db');
      const drained = await draining;
      expect(drained).toMatchObject({ ok: true, pending: [] });
      expect(drained.requests.evicted).toBe(0);
      const after = await podNow('db-0');
      expect([after?.metadata?.uid, after?.metadata?.deletionTimestamp]).toEqual([recreated, undefined]);
    });

    it('judges a dry-run eviction as it would the eviction and evicts nothing: the PDB pre-flight', async () => {
      await runningPod('db-1', { app: 'db' });
      await runningPod('web-1', { app: 'web' });
      await cluster.create('poddisruptionbudgets', budget('db', 'db', 1));
      await cluster.create('poddisruptionbudgets', budget('web', 'web', 0));
      await cluster.syncBudget('default', 'db');
      await cluster.syncBudget('default', 'web');
      const preflight = new PdbBlocker({
        kube,
        nodeId: NODE,
        drainPodSelector: [],
        drainGracePeriodSeconds: -1,
      });
      expect(await preflight.check()).toEqual({
        blocked: true,
        reason: 'PodDisruptionBudget default/db allows no disruption of pod default/db-1',
      });
      expect(await pods()).toEqual(['db-1', 'web-1']);
      // web-1 alone: its budget allows one disruption, and the dry run leaves it where it is
      await kube.dryRunEviction('default', 'web-1', {});
      expect(await pods()).toEqual(['db-1', 'web-1']);
      // a second budget over db-1: the Eviction API refuses to evict it at all
      await cluster.create('poddisruptionbudgets', budget('db-too', 'db', 0));
      await cluster.syncBudget('default', 'db-too');
      expect((await preflight.check()).blocked).toBe(true);
      expect(await pods()).toEqual(['db-1', 'web-1']);
    });
  });

  describe('the rollout restart (--single-replica restart)', () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'solo', namespace: 'default' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'solo' } },
        template: {
          metadata: { labels: { app: 'solo' }, annotations: { 'owner/other': 'keep-me' } },
          spec: { containers: [{ name: 'c', image: 'busybox' }] },
        },
      },
    };

    it('sets the restartedAt annotation of the pod template, keeps the others and moves the generation', async () => {
      const created = await cluster.create<V1Deployment>('deployments', deployment);
      const restarter = new RolloutRestarter({
        kube,
        nodeId: NODE,
        clock: new SystemClock(),
        podSelector: [],
      });
      expect(await restarter.restart('default/solo', '2026-11-28T00:30:00.000Z')).toEqual({
        restarted: true,
      });
      const after = await kube.getDeployment('default', 'solo');
      expect(after.spec?.template.metadata?.annotations).toEqual({
        'owner/other': 'keep-me',
        [RESTARTED_AT_ANNOTATION]: '2026-11-28T00:30:00.000Z',
      });
      expect(after.metadata?.generation).toBe((created.metadata?.generation ?? 0) + 1);
    });

    it('writes nothing when the Deployment changed since the resourceVersion the patch names (409)', async () => {
      const created = await cluster.create<V1Deployment>('deployments', deployment);
      await kube.mergePatchDeployment('default', 'solo', { metadata: { labels: { team: 'a' } } });
      const stale = {
        metadata: { resourceVersion: created.metadata?.resourceVersion },
        spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: 'x' } } } },
      };
      expect((await failure(kube.mergePatchDeployment('default', 'solo', stale))).code).toBe(409);
      const after = await kube.getDeployment('default', 'solo');
      expect(after.spec?.template.metadata?.annotations?.[RESTARTED_AT_ANNOTATION]).toBeUndefined();
    });
  });

  describe('Events', () => {
    it('records an Event on the node that kubectl finds by involvedObject', async () => {
      const recorder = new KubeEventRecorder({
        kube,
        nodeId: NODE,
        clock: new SystemClock(),
        log: new MemoryLogger(),
        periodMs: 60_000,
      });
      await recorder.record('RebootRequired', 'reboot required by /var/run/reboot-required');
      await recorder.record('RebootRequired', 'reboot required by /var/run/reboot-required');
      const events = (
        await cluster.list<{
          involvedObject?: { kind?: string; name?: string };
          reason?: string;
          count?: number;
        }>('events', 'default')
      ).filter((e) => e.involvedObject?.name === NODE);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        involvedObject: { kind: 'Node', name: NODE },
        reason: 'RebootRequired',
      });
    });
  });

  describe('who the client is', () => {
    it('is told by a SelfSubjectReview (kured-ts reboot records the admin so)', async () => {
      const self = await cluster.kube().reviewSelf(AbortSignal.timeout(10_000));
      expect(self.username).not.toBe('');
      expect(self.groups).toContain('system:authenticated');
    });
  });
}
