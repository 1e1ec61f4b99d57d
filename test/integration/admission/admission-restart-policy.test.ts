// The agent's admission policy on Deployments (src/admission/restart-policy.ts, issue 44 item 2),
// evaluated by the fake API server's CEL engine on requests sent through the real client as the
// agent's ServiceAccount: with --single-replica restart it admits exactly `kubectl rollout restart`
// (the pod template's restartedAt annotation, as a time) and nothing else of a Deployment; without
// it, no change of a Deployment at all.
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  agentPolicyParams,
  NODE_NAME_EXTRA,
  type PolicyConfig,
} from '../../../src/admission/agent-policy.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { defaultConfig } from '../../../src/config/parse.js';
import { RolloutRestarter } from '../../../src/drain/rollout-restart.js';
import { RESTARTED_AT_ANNOTATION } from '../../../src/drain/single-replica.js';
import { policyDenial } from '../../../src/kube/errors.js';
import type { Kube, V1Deployment } from '../../../src/kube/kube.js';
import { CelAdmission, boundAgentPolicies } from '../../../src/sim/fake-api/cel-admission.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';

const SA = { namespace: 'kube-system', name: 'kured-ts' };
const USER = `system:serviceaccount:${SA.namespace}:${SA.name}`;
const TIME = '2026-11-27T23:59:00.000Z';

let server: FakeApiServer;

async function start(singleReplica: 'off' | 'restart'): Promise<void> {
  const config: PolicyConfig = {
    ...defaultConfig(),
    dsNamespace: 'kube-system',
    dsName: 'kured',
    singleReplica,
  };
  const admission = new CelAdmission(boundAgentPolicies(agentPolicyParams(config, { serviceAccount: SA })));
  server = await startFakeApiServer({ admission });
  server.create<V1Deployment>('deployments', {
    metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' }, annotations: { team: 'a' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } },
      template: {
        metadata: { labels: { app: 'web' }, annotations: { 'prometheus.io/scrape': 'true' } },
        spec: { serviceAccountName: 'web', containers: [{ name: 'web', image: 'shop/web:1' }] },
      },
    },
  });
}

afterEach(async () => {
  await server.close();
});

/** The agent of n1, with its bound token's node claim. */
const agent = (): Kube =>
  server.kubeInMemory().impersonating({ user: USER, extra: { [NODE_NAME_EXTRA]: 'n1' } });

const patch = (body: object): Promise<V1Deployment> => agent().mergePatchDeployment('shop', 'web', body);
const template = (metadata: object, spec?: object): object => ({
  spec: { template: { metadata, ...(spec === undefined ? {} : { spec }) } },
});
const restartedAt = (value: string): object =>
  template({ annotations: { [RESTARTED_AT_ANNOTATION]: value } });

/** The message of the agent policy's denial of `write` (fails the test when it was admitted). */
async function denial(write: Promise<unknown>): Promise<string> {
  const err = await write.then(
    () => new Error('admitted'),
    (e: unknown) => e,
  );
  const denied = policyDenial(err);
  expect(denied?.policy).toBe('kured-ts-agent-deployments');
  return denied?.message ?? '';
}

function deployment(): V1Deployment {
  return server.get<V1Deployment>('deployments', 'shop', 'web')!;
}

describe('with --single-replica restart the agent admission policy', () => {
  it("admits the agent's own restart (RolloutRestarter), which changes only the restartedAt annotation", async () => {
    await start('restart');
    const restarter = new RolloutRestarter({
      kube: agent(),
      nodeId: 'n1',
      clock: new SystemClock(),
      podSelector: [],
    });
    expect(await restarter.restart('shop/web', TIME)).toEqual({ restarted: true });
    expect(deployment().spec?.template.metadata?.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      [RESTARTED_AT_ANNOTATION]: TIME,
    });
  });

  it.each<[string, object, RegExp]>([
    [
      'changing the image',
      template({}, { containers: [{ name: 'web', image: 'evil/miner:1' }] }),
      /only the pod template annotation/,
    ],
    [
      'changing the service account',
      template({}, { serviceAccountName: 'admin' }),
      /only the pod template annotation/,
    ],
    ['scaling it', { spec: { replicas: 0 } }, /only the pod template annotation/],
    [
      'switching it to Recreate',
      { spec: { strategy: { type: 'Recreate', rollingUpdate: null } } },
      /only the pod template annotation/,
    ],
    [
      'changing the template labels',
      template({ labels: { app: 'web', evil: 'yes' } }),
      /only the pod template annotation/,
    ],
    [
      'adding another template annotation',
      template({ annotations: { 'sidecar.example.com/inject': 'true' } }),
      /only the pod template annotation/,
    ],
    [
      'removing another template annotation',
      template({ annotations: { 'prometheus.io/scrape': null } }),
      /only the pod template annotation/,
    ],
    [
      "changing the Deployment's own annotations",
      { metadata: { annotations: { team: 'mallory' } } },
      /only the pod template annotation/,
    ],
    ['pausing it', { spec: { paused: true } }, /only the pod template annotation/],
    [
      'writing restartedAt as something else than a time',
      restartedAt('now; rm -rf /'),
      /only as an RFC 3339 time/,
    ],
  ])('denies a patch %s', async (_what, body, message) => {
    await start('restart');
    expect(await denial(patch(body))).toMatch(message);
    expect(deployment().spec?.template.metadata?.annotations).toEqual({ 'prometheus.io/scrape': 'true' });
  });

  it('judges only the agent: an admin may change the image', async () => {
    await start('restart');
    await server
      .kubeInMemory()
      .mergePatchDeployment(
        'shop',
        'web',
        template({}, { containers: [{ name: 'web', image: 'shop/web:2' }] }),
      );
    expect(deployment().spec?.template.spec?.containers[0]?.image).toBe('shop/web:2');
  });
});

describe('without --single-replica restart the agent admission policy', () => {
  it('denies even the restart annotation', async () => {
    await start('off');
    expect(await denial(patch(restartedAt(TIME)))).toMatch(
      /changes no Deployment: --single-replica is not restart/,
    );
  });
});
