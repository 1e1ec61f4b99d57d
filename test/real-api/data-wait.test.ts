// Issue 54 on a real kube-apiserver: the wait after the drain for the node's volumes and for the
// storage system's word (--node-check), with the agent in-process over the real client. The test
// plays the attach-detach controller and the kubelet (the node's volumesAttached and volumesInUse,
// the VolumeAttachment) and Longhorn (its Volume CRD installed, a Volume naming the node); the
// rebooter records what was attached at the moment of the reboot.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { Agent } from '../../src/agent/agent.js';
import { createAgentDeps } from '../../src/agent/create-agent.js';
import { SystemClock } from '../../src/clock/clock.js';
import type { Config } from '../../src/config/config.js';
import { nodeCheck } from '../../src/config/wave-values.js';
import type { V1Node } from '../../src/kube/kube.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { QUARANTINE_ANNOTATION, parseQuarantine } from '../../src/node/quarantine.js';
import { csiVolumeName } from '../../src/volumes/volumes.js';
import { TestCluster } from '../contract/cluster.js';
import { testConfig } from '../fakes/config.js';
import { RecordingMetrics } from '../fakes/fake-cluster.js';

const NODE = 'data-n1';
const NS = 'kube-system';
const DS = 'kured-data';
const DRIVER = 'driver.longhorn.io';
const VOLUME = csiVolumeName(DRIVER, 'pv-data');
const ATTACHMENT = `csi-${createHash('sha256').update(`pv-data${DRIVER}${NODE}`).digest('hex')}`;

let cluster: TestCluster;
/** What the node's status said was attached at each reboot. */
let attachedAtReboot: string[][];

beforeEach(async () => {
  cluster = TestCluster.real();
  attachedAtReboot = [];
  await cluster.create('daemonsets', {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: DS, namespace: NS },
    spec: {
      selector: { matchLabels: { app: DS } },
      template: { metadata: { labels: { app: DS } }, spec: { containers: [{ name: DS, image: 'x' }] } },
    },
  });
  await cluster.create('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
  await cluster.patchStatus('nodes', undefined, NODE, {
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    nodeInfo: nodeInfo('boot-1'),
    volumesAttached: [{ name: VOLUME, devicePath: '' }],
    volumesInUse: [VOLUME],
  });
  await cluster.create('volumeattachments', {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'VolumeAttachment',
    metadata: { name: ATTACHMENT },
    spec: { attacher: DRIVER, nodeName: NODE, source: { persistentVolumeName: 'pv-data' } },
  });
});

afterEach(async () => {
  await cluster.close();
});

/** Polls an asynchronous condition (a read of the real server) until it holds; fails naming `what`. */
async function until(condition: () => Promise<boolean | undefined>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await condition()) !== true) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function nodeInfo(bootID: string): Record<string, string> {
  const info = { machineID: 'm', systemUUID: 's', bootID, kernelVersion: '6', osImage: 'd' };
  return {
    ...info,
    containerRuntimeVersion: 'c',
    kubeletVersion: 'v1.32.0',
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: 'amd64',
  };
}

async function node(): Promise<V1Node> {
  return (await cluster.get<V1Node>('nodes', undefined, NODE))!;
}

/** The node's agent over the real client; its reboot records what was attached and changes the bootID. */
function agent(overrides: Partial<Config>): Agent {
  const config = testConfig({
    nodeId: NODE,
    dsNamespace: NS,
    dsName: DS,
    periodMs: 60_000,
    blockOnPdb: false,
    drainTimeoutMs: 5_000,
    rebootDelayMs: 0,
    ...overrides,
  });
  const deps = createAgentDeps(config, {
    kube: cluster.kube(),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    metrics: new RecordingMetrics(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: true }) },
    rebooter: {
      reboot: async () => {
        attachedAtReboot.push(((await node()).status?.volumesAttached ?? []).map((v) => v.name));
        await cluster.patchStatus('nodes', undefined, NODE, { nodeInfo: nodeInfo('boot-2') });
      },
    },
  });
  return new Agent(config, deps);
}

it('waits until the controller has detached the volume (status and VolumeAttachment), then reboots with nothing attached', async () => {
  const tick = agent({ volumeDetachTimeoutMs: 60_000 }).tick();
  await until(
    async () =>
      (await node()).metadata?.annotations?.['kured-ts.dev/status']?.includes('waiting-for-volumes'),
    'the agent waits for its volume',
    20_000,
  );
  // the kubelet unmounts; the controller drops the volume from the status, runs the CSI detach
  // (its record still there for a while), then deletes the record
  await cluster.patchStatus('nodes', undefined, NODE, { volumesInUse: [] });
  await cluster.patchStatus('nodes', undefined, NODE, { volumesAttached: [] });
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect(attachedAtReboot).toEqual([]);
  await cluster.forceDelete('volumeattachments', undefined, ATTACHMENT);
  expect((await tick).kind).toBe('rebooting');
  expect(attachedAtReboot).toEqual([[]]);
}, 90_000);

it('a volume that never detaches ends the cycle at the timeout, quarantined naming it, with no reboot', async () => {
  const outcome = await agent({ volumeDetachTimeoutMs: 5_000 }).tick();
  expect(outcome).toMatchObject({ kind: 'quarantined', reason: expect.stringContaining(VOLUME) });
  expect(attachedAtReboot).toEqual([]);
  const n = await node();
  expect(n.spec?.unschedulable).not.toBe(true);
  expect(parseQuarantine(n.metadata?.annotations?.[QUARANTINE_ANNOTATION])).toMatchObject({
    kind: 'volume-detach-timeout',
    volumes: [VOLUME],
  });
}, 90_000);

it("a node check over Longhorn's Volumes (its CRD installed) holds the reboot while one names the node", async () => {
  await cluster.patchStatus('nodes', undefined, NODE, { volumesAttached: [], volumesInUse: [] });
  await cluster.forceDelete('volumeattachments', undefined, ATTACHMENT);
  await cluster.apply({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'volumes.longhorn.io' },
    spec: {
      group: 'longhorn.io',
      names: { kind: 'Volume', plural: 'volumes', singular: 'volume', listKind: 'VolumeList' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1beta2',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  } as never);
  await cluster.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'longhorn-system' } });
  const volumes = '/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes';
  await until(
    async () => (await cluster.request({ method: 'GET', path: volumes })).status === 200,
    'the CRD is served',
    20_000,
  );
  const created = await cluster.request({
    method: 'POST',
    path: volumes,
    body: {
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      metadata: { name: 'pvc-data' },
      status: { currentNodeID: NODE },
    },
  });
  expect(created.status).toBe(201);
  const check = `longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name)`;
  const tick = agent({ volumeDetachTimeoutMs: 60_000, nodeChecks: [nodeCheck(check)] }).tick();
  await until(
    async () => (await node()).metadata?.annotations?.['kured-ts.dev/status']?.includes('node check'),
    'the agent waits for its node check',
    20_000,
  );
  expect(attachedAtReboot).toEqual([]);
  const detached = await cluster.request({
    method: 'PATCH',
    path: `${volumes}/pvc-data`,
    body: { status: { currentNodeID: '' } },
    contentType: 'application/merge-patch+json',
  });
  expect(detached.status).toBe(200);
  expect((await tick).kind).toBe('rebooting');
  await cluster.request({ method: 'DELETE', path: `${volumes}/pvc-data` });
}, 90_000);
