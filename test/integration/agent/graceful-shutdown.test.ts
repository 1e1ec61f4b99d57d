// Graceful node shutdown, said (issue 44, item 7): the agent publishes in its status what it read on
// its host at start (kubelet's shutdownGracePeriod, logind's InhibitDelayMaxSec), through the real
// client against the fake API server, and `kured-ts check --node` shows it with what it means.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { runCheck } from '../../../src/cli/check.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { defaultConfig } from '../../../src/config/parse.js';
import type { ShutdownSettings } from '../../../src/host/shutdown.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { STATUS_ANNOTATION, parseStatus } from '../../../src/node/status.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

let server: FakeApiServer;

beforeEach(async () => {
  server = await startClusterApiServer();
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
});

afterEach(async () => {
  await server.close();
});

/** An idle agent that read `shutdown` on its host at start: one pass. */
async function publish(shutdown: ShutdownSettings | undefined): Promise<void> {
  const c = testConfig();
  const deps = createAgentDeps(c, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: false }) },
    ...(shutdown === undefined ? {} : { shutdown }),
  });
  expect((await new Agent(c, deps).tick()).kind).toBe('idle');
}

/** `kured-ts check --node n1`: its shutdown line. */
async function checkLine(): Promise<string | undefined> {
  const out: string[] = [];
  const io = {
    kube: new ClientNodeKube(server.kubeConfig()),
    out: (l: string) => out.push(l),
    clock: new SystemClock(),
  };
  await runCheck({ node: 'n1', config: defaultConfig() }, io);
  return out.find((l) => l.trimStart().startsWith('shutdown '));
}

const status = (): ReturnType<typeof parseStatus> =>
  parseStatus(server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.annotations?.[STATUS_ANNOTATION]);

describe('graceful node shutdown, said', () => {
  it('publishes what the agent read on its host in its status, and check says what it means', async () => {
    await publish({ gracePeriod: '2m0s', criticalPods: '30s', inhibitDelayMax: '2m0s' });
    expect(status()?.shutdown).toEqual({ gracePeriod: '2m0s', criticalPods: '30s', inhibitDelayMax: '2m0s' });
    expect(await checkLine()).toMatch(
      /^ {2}shutdown +ok +at the reboot the kubelet gives the pods the drain leaves 2m0s \(30s of it for critical pods\); logind waits up to 2m0s$/,
    );
  });

  it('warns in check when graceful node shutdown is off on the host', async () => {
    await publish({ gracePeriod: '0s', criticalPods: '0s', inhibitDelayMax: '5s' });
    expect(await checkLine()).toMatch(
      /WARNING +kubelet shutdownGracePeriod is 0 \(graceful node shutdown off\)/,
    );
  });

  it('says so where the host files could not be read', async () => {
    await publish({
      kubeletError: '/var/lib/kubelet/config.yaml: ENOENT',
      logindError: '/etc/systemd/logind.conf: ENOENT',
    });
    expect(status()?.shutdown?.kubeletError).toBe('/var/lib/kubelet/config.yaml: ENOENT');
    expect(await checkLine()).toMatch(
      /skipped +kubelet shutdownGracePeriod cannot be read \(\/var\/lib\/kubelet\/config.yaml: ENOENT\)/,
    );
  });

  it('says so when the node agent published nothing', async () => {
    await publish(undefined);
    expect(status()?.shutdown).toBeUndefined();
    expect(await checkLine()).toMatch(/skipped +not published by the agent of this node/);
  });
});
