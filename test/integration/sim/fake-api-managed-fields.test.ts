// The fake API server keeps metadata.managedFields as kube-apiserver does for non-apply writes, so
// that "who owns this cordon" has a real answer in tests (src/sim/fake-api/managed-fields.ts).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { V1Node } from '../../../src/kube/kube.js';
import { unschedulableOwners } from '../../../src/node/kube-node-ops.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { storedNode } from '../../fakes/cluster-reads.js';

let server: FakeApiServer;

beforeEach(async () => {
  server = await startFakeApiServer();
  server.create<V1Node>('nodes', { metadata: { name: 'n1', labels: { zone: 'a' } }, spec: {} });
});

afterEach(async () => {
  await server.close();
});

function node(): V1Node {
  return storedNode(server, 'n1');
}

/** A merge patch by a named field manager, over HTTP. */
async function patchAs(manager: string, body: object): Promise<void> {
  const res = await fetch(`${server.url}/api/v1/nodes/n1?fieldManager=${manager}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

function managers(): Record<string, unknown> {
  return Object.fromEntries(
    (node().metadata?.managedFields ?? []).map((e): [string, unknown] => [e.manager ?? '', e.fieldsV1]),
  );
}

describe('managedFields', () => {
  it('gives a write the fields it changed, in FieldsV1, with its time', async () => {
    await server.kubeInMemory().mergePatchNode('n1', { spec: { unschedulable: true } });
    const ours = node().metadata?.managedFields?.find((e) => e.manager === 'kured-ts');
    expect(ours).toMatchObject({ operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1' });
    expect(ours?.fieldsV1).toEqual({ 'f:spec': { 'f:unschedulable': {} } });
    expect(typeof ours?.time).toBe('string');
    expect(unschedulableOwners(node())).toEqual(['kured-ts']);
  });

  it('moves a field to the last manager that changed it, and to nobody when it is removed', async () => {
    await patchAs('kured-ts', { spec: { unschedulable: true } });
    await patchAs('kubectl-uncordon', { spec: { unschedulable: null } });
    expect(unschedulableOwners(node())).toEqual([]);
    await patchAs('kubectl-cordon', { spec: { unschedulable: true } });
    expect(unschedulableOwners(node())).toEqual(['kubectl-cordon']);
    expect(managers()['kured-ts']).toBeUndefined(); // it owned nothing else: dropped
  });

  it('changes no owner when a write sets a field to the value it already has', async () => {
    await patchAs('kured-ts', { spec: { unschedulable: true } });
    await patchAs('kubectl-cordon', { spec: { unschedulable: true } });
    expect(unschedulableOwners(node())).toEqual(['kured-ts']);
  });

  it('owns map keys one by one: labels of two managers stay apart', async () => {
    await patchAs('kured-ts', { metadata: { labels: { 'kured-ts.dev/rebooting': 'true' } } });
    await patchAs('admin', { metadata: { labels: { team: 'x' } } });
    expect(managers()['kured-ts']).toEqual({
      'f:metadata': { 'f:labels': { 'f:kured-ts.dev/rebooting': {} } },
    });
    expect(managers().admin).toEqual({ 'f:metadata': { 'f:labels': { 'f:team': {} } } });
  });
});
