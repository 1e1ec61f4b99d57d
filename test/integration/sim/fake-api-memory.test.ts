// The fake API server's in-memory wire (FakeApiServer.kubeInMemory, src/sim/fake-api/memory-exchange.ts)
// where it must answer as a socket would and the adapter contract does not go: a request the server
// never answers, a watch gone silent, the server closing under open exchanges, and when a watcher
// hears of a write; each case also over loopback HTTP, to show it is the socket's behaviour. The
// contract itself runs in memory in contract-memory.test.ts.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ClientNodeKube, type ConnectOptions } from '../../../src/kube/client.js';
import type { V1Node, WatchEvent } from '../../../src/kube/kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { readyNode } from '../../fakes/kube-objects.js';
import { waitFor } from '../../fakes/wait-for.js';

type Wire = (server: FakeApiServer, options: Pick<ConnectOptions, 'deadlineMs'>) => ClientNodeKube;
const inMemory: Wire = (s, options) => s.kubeInMemory(options);
const overHttp: Wire = (s, options) => new ClientNodeKube(s.kubeConfig(), options);

describe.each([
  ['in memory', inMemory],
  ['over HTTP', overHttp],
])('the fake API server, %s', (_wire, connect) => {
  let server: FakeApiServer;
  let kube: ClientNodeKube;

  beforeEach(async () => {
    server = await startFakeApiServer();
    kube = connect(server, { deadlineMs: 300 });
    server.create('nodes', readyNode('n1'));
  });

  afterEach(async () => {
    kube.close();
    await server.close();
  });

  it('records a request it never answers (hang), as over HTTP, and the client gives up at its deadline', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: '/nodes/n1' }, 500, 1, { mode: 'hang' });
    const call = kube.getNode('n1');
    await expect(call).rejects.toThrow('GET /api/v1/nodes/n1: no complete answer within 300 ms');
    await expect(call).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(server.requests.map((r) => [r.method, r.path, r.bytes])).toEqual([
      ['GET', '/api/v1/nodes/n1', undefined],
    ]);
    expect((await kube.getNode('n1')).metadata?.name).toBe('n1');
  });

  it('answers a silent watch with headers and nothing else, until the client stops it', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 200, 1, { mode: 'silent' });
    const silent: WatchEvent<V1Node>[] = [];
    const heard: WatchEvent<V1Node>[] = [];
    const controller = new AbortController();
    const options = { signal: controller.signal, timeoutSeconds: 60, resourceVersion: '1' };
    const quiet = kube.watchNodes((e) => silent.push(e), options);
    await waitFor(
      () => server.requests.some((r) => r.query.watch === 'true' && r.status === 200),
      'answered',
    );
    const other = kube.watchNodes((e) => heard.push(e), options);
    await waitFor(() => server.requests.filter((r) => r.query.watch === 'true').length === 2, 'watching');
    await kube.mergePatchNode('n1', { spec: { unschedulable: true } });
    await waitFor(() => heard.some((e) => e.type === 'MODIFIED'), 'the other watch heard the write');
    expect(silent).toEqual([]);
    controller.abort();
    await expect(quiet).resolves.toBeUndefined();
    await expect(other).resolves.toBeUndefined();
  });

  it('ends open watches cleanly, drops a hung request when it closes, and refuses its retry as a closed port', async () => {
    const closing = await startFakeApiServer();
    closing.create('nodes', readyNode('n1'));
    const client = connect(closing, { deadlineMs: 30_000 });
    closing.injectFailure({ method: 'GET', pathIncludes: '/nodes/n1' }, 500, 1, { mode: 'hang' });
    const hung = client.getNode('n1');
    const watch = client.watchNodes(() => undefined, {
      signal: new AbortController().signal,
      timeoutSeconds: 60,
    });
    await waitFor(() => closing.requests.length === 2, 'both requests arrived');
    // the drop is about the server: the read is sent again and finds the port closed
    const dropped = expect(hung).rejects.toThrow(/ECONNREFUSED/);
    await closing.close();
    await expect(watch).resolves.toBeUndefined();
    await dropped;
  });

  it('tells a watcher of a write in a later macrotask, never inside the write, as a socket does', async () => {
    const heard: string[] = [];
    const controller = new AbortController();
    const options = { signal: controller.signal, timeoutSeconds: 60, resourceVersion: '1' };
    const watch = kube.watchNodes((e) => heard.push(e.type), options);
    await waitFor(() => server.requests.some((r) => r.query.watch === 'true'), 'watching');
    const atTheWrite: string[][] = [];
    const stop = server.onWrite(() => atTheWrite.push([...heard]));
    await kube.mergePatchNode('n1', { metadata: { labels: { a: 'b' } } });
    stop();
    await waitFor(() => heard.includes('MODIFIED'), 'the watcher heard the write');
    expect(atTheWrite).toEqual([[]]);
    controller.abort();
    await watch;
  });
});
