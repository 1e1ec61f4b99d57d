// The agent's silences through its cycle (--alertmanager-url, --silence-matcher), over a FakeCluster
// and a hand-written Alertmanager: silenced before the drain, renewed while the host is down and after,
// ended --silence-tail after the uncordon; a node that never comes back lets its silence run out; an
// Alertmanager that is down holds nothing back.
import { describe, expect, it } from '@jest/globals';
import { Agent, type Outcome } from '../../src/agent/agent.js';
import type { AgentDeps } from '../../src/agent/agent-config.js';
import { parseMatcherSet } from '../../src/silence/matchers.js';
import { SilenceKeeper } from '../../src/silence/silence-keeper.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { FakeAlertmanager } from '../fakes/fake-alertmanager.js';
import { AGENT_DEFAULTS, FakeCluster, settle } from '../fakes/fake-cluster.js';

const MINUTE = 60_000;

/** An agent of `cluster` with silences in `am`; `silencedAtDrain` says whether one was live when its drain began. */
function agentOn(cluster: FakeCluster, am: FakeAlertmanager, seen: { silencedAtDrain?: boolean }): Agent {
  const deps = cluster.deps();
  const drainer: AgentDeps['drainer'] = {
    drain: (signal, options) => {
      seen.silencedAtDrain = am.live().length > 0;
      return deps.drainer.drain(signal, options);
    },
  };
  const silences = new SilenceKeeper({
    api: am,
    node: cluster.node.name,
    sets: [parseMatcherSet('{node="{{.node}}"}')],
    durationMs: 15 * MINUTE,
    tailMs: 5 * MINUTE,
    clock: cluster.clock,
    log: new MemoryLogger(),
    failed: () => undefined,
  });
  return new Agent({ ...AGENT_DEFAULTS }, { ...deps, drainer, silences });
}

async function tick(agent: Agent, cluster: FakeCluster): Promise<Outcome> {
  return settle(cluster.clock, agent.tick());
}

describe('agent: the cycle silenced in Alertmanager', () => {
  it('silences the node before the drain, keeps it while rebooting, and ends it --silence-tail after the uncordon', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const am = new FakeAlertmanager(cluster.clock);
    const seen: { silencedAtDrain?: boolean } = {};
    await tick(agentOn(cluster, am, seen), cluster); // drain and reboot request
    expect(seen.silencedAtDrain).toBe(true);
    expect(am.live()).toHaveLength(1);
    expect(am.live()[0]?.matchers).toEqual([{ name: 'node', value: 'n1', isRegex: false, isEqual: true }]);
    // the host is down 10 minutes; the new agent renews the same silence (no second one)
    await cluster.clock.advance(10 * MINUTE);
    const after = agentOn(cluster, am, seen);
    expect((await tick(after, cluster)).kind).toBe('completed');
    expect(am.silences.size).toBe(1);
    const [silence] = am.live();
    expect(Date.parse(silence?.endsAt ?? '') - cluster.clock.now().getTime()).toBe(5 * MINUTE);
    await cluster.clock.advance(5 * MINUTE + 1);
    expect(am.live()).toEqual([]);
  });

  it('lets the silence of a node that does not come back run out, so that its failure pages', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const am = new FakeAlertmanager(cluster.clock);
    await tick(agentOn(cluster, am, {}), cluster);
    expect(am.live()).toHaveLength(1);
    await cluster.clock.advance(15 * MINUTE + 1); // no agent runs on the dead host
    expect(am.live()).toEqual([]);
  });

  it('reboots as without silences when Alertmanager is down', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const am = new FakeAlertmanager(cluster.clock);
    am.down = true;
    await tick(agentOn(cluster, am, {}), cluster);
    expect(cluster.reboots).toHaveLength(1);
  });
});
