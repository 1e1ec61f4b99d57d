// The PDB pre-flight asks the Eviction API about exactly the eviction the drain will send (issue 47):
// for every configuration the flag table allows of the flags that reach an eviction, the agent's own
// pre-flight (its registry's pdb blocker) and its own drain (createAgentDeps, as the agent is wired)
// each evict the same pod through the real client against the fake API server, and the Eviction
// bodies the server receives are the same but for dryRun. A dry run that differs is judged by
// another rule than the drain: an admission policy that admits only the configured grace period
// refused every pre-flight with a grace period set, and no node rebooted.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { FLAGS } from '../../../src/config/flags.js';
import { parseConfig } from '../../../src/config/parse.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1Node, V1Pod } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import type { Admission, AdmissionAttributes } from '../../../src/sim/fake-api/admission.js';
import type { JsonObject } from '../../../src/sim/fake-api/json.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';

const NODE = 'n1';

let server: FakeApiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Keeps the body of every Eviction the server is asked for, in order (admitting them all). */
class EvictionRecorder implements Admission {
  readonly bodies: JsonObject[] = [];

  review(attributes: AdmissionAttributes): void {
    if (attributes.subResource === 'eviction' && attributes.object !== null)
      this.bodies.push(structuredClone(attributes.object));
  }
}

/** The body without its dry run (an empty deleteOptions left out), and whether it was one. */
function withoutDryRun(body: JsonObject): { dryRun: boolean; body: JsonObject } {
  const options = (body.deleteOptions ?? {}) as JsonObject;
  const { dryRun, ...rest } = options;
  const others = { ...body };
  delete others.deleteOptions;
  return {
    dryRun: Array.isArray(dryRun) && dryRun.includes('All'),
    body: Object.keys(rest).length === 0 ? others : { ...others, deleteOptions: rest },
  };
}

/** What the flag table allows for a flag: its choices, or `values` each of which it must accept. */
function allowed(flag: string, values?: readonly string[]): string[] {
  const spec = FLAGS.find((f) => f.name === flag);
  if (spec === undefined) throw new Error(`no flag --${flag}`);
  return [...(values ?? spec.choices ?? [])];
}

/** --drain-grace-period: the pod's own (-1, the default), none at all (0), and a few seconds to a day. */
const GRACE_PERIODS = allowed('drain-grace-period', ['-1', '0', '1', '5', '30', '86400']);
const FALLBACKS = allowed('drain-fallback');
const CONFIGURATIONS = GRACE_PERIODS.flatMap((grace) => FALLBACKS.map((fallback) => ({ grace, fallback })));

/** The eviction bodies the agent of this configuration sends for pod web-1: pre-flight, then drain. */
async function evictionsOf(flags: Record<string, string>): Promise<{ bodies: JsonObject[]; uid: string }> {
  const recorder = new EvictionRecorder();
  server = await startFakeApiServer({ admission: recorder });
  server.create<V1Node>('nodes', { metadata: { name: NODE } });
  const pod = server.create<V1Pod>('pods', {
    metadata: { name: 'web-1', namespace: 'default', labels: { app: 'web' } },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'nginx' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  });
  const values = Object.fromEntries(Object.entries({ 'node-id': NODE, ...flags }).map(([k, v]) => [k, [v]]));
  const config = parseConfig(values, {});
  const deps = createAgentDeps(config, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
  });
  const preflight = deps.blockers.find((b) => b.name === 'pdb');
  expect(preflight).toBeDefined();
  expect(await preflight?.check()).toEqual({ blocked: false });
  expect((await deps.drainer.drain()).ok).toBe(true);
  return { bodies: recorder.bodies, uid: pod.metadata?.uid ?? '' };
}

describe("the PDB pre-flight's dry run and the drain's eviction", () => {
  it('covers the range the flag table allows: a grace period below -1 is refused', () => {
    expect(() => parseConfig({ 'drain-grace-period': ['-2'] }, {})).toThrow(/drain-grace-period/);
    expect(FALLBACKS).toEqual(['none', 'delete']);
  });

  it.each(CONFIGURATIONS)(
    'are the same Eviction but for dryRun with --drain-grace-period=$grace --drain-fallback=$fallback',
    async ({ grace, fallback }) => {
      const { bodies, uid } = await evictionsOf({ 'drain-grace-period': grace, 'drain-fallback': fallback });
      const [dry, real, ...more] = bodies;
      expect(more).toEqual([]);
      const preflight = withoutDryRun(dry ?? {});
      const drain = withoutDryRun(real ?? {});
      expect({ preflight: preflight.dryRun, drain: drain.dryRun }).toEqual({ preflight: true, drain: false });
      expect(preflight.body).toEqual(drain.body);
      // and both carry what the configuration says (the grace period, or none for the pod's own), and
      // the UID of the pod as listed (issue 44: never another pod that took its name meanwhile)
      const options = drain.body.deleteOptions as JsonObject | undefined;
      expect(options?.gracePeriodSeconds).toEqual(grace === '-1' ? undefined : Number(grace));
      expect(options?.preconditions).toEqual({ uid });
    },
  );
});
