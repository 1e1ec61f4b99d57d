// A minimal agent for developing the simulator before the real one exists. NOT what simulate ships.
import type { Config } from '../config.js';
import type { V1DaemonSet, V1Node } from '../kube/kube.js';
import { lockHolders } from './observer.js';
import type { RunnableAgent, SimAgentIo } from './simulation.js';

interface Slot {
  nodeID: string;
  metadata: { unschedulable: boolean; bootID?: string };
  created: string;
  TTL: number;
}

export function createStandInAgent(config: Config, io: SimAgentIo): RunnableAgent {
  return { run: (signal) => loop(config, io, signal) };
}

async function loop(config: Config, io: SimAgentIo, signal: AbortSignal): Promise<void> {
  await io.clock.sleep(config.periodMs * (0.5 + io.random()), signal);
  for (;;) {
    const again = await tick(config, io, signal);
    await io.clock.sleep(again ?? config.periodMs * (0.5 + io.random()), signal);
  }
}

function slots(ds: V1DaemonSet, config: Config): Slot[] {
  const raw = ds.metadata?.annotations?.[config.lockAnnotation];
  if (raw === undefined || raw === '') return [];
  const parsed = JSON.parse(raw) as { locks?: Slot[] } & Slot;
  return parsed.locks ?? (parsed.nodeID ? [parsed] : []);
}

async function status(io: SimAgentIo, config: Config, phase: string, reason = ''): Promise<void> {
  const value = JSON.stringify({ phase, reason, since: io.clock.now().toISOString(), bootID: '' });
  await io.kube.mergePatchNode(config.nodeId, {
    metadata: { annotations: { 'kured-ts.dev/status': value } },
  });
}

async function writeSlots(io: SimAgentIo, config: Config, ds: V1DaemonSet, next: Slot[]): Promise<boolean> {
  const value = JSON.stringify({ maxOwners: config.concurrency, locks: next });
  try {
    await io.kube.mergePatchDaemonSet(config.dsNamespace, config.dsName, {
      metadata: {
        resourceVersion: ds.metadata?.resourceVersion,
        annotations: { [config.lockAnnotation]: value },
      },
    });
    return true;
  } catch {
    return false;
  }
}

async function tick(config: Config, io: SimAgentIo, signal: AbortSignal): Promise<number | undefined> {
  const { kube } = io;
  const ds = await kube.getDaemonSet(config.dsNamespace, config.dsName);
  const all = slots(ds, config);
  const mine = all.find((s) => s.nodeID === config.nodeId);
  const node = await kube.getNode(config.nodeId);
  if (mine) return resume(config, io, { ds, all, mine, node });
  const verdict = await io.sentinel.rebootRequired();
  if (!verdict.required) {
    await status(io, config, 'idle');
    return undefined;
  }
  if (all.length >= config.concurrency) {
    await status(io, config, 'waiting-for-lock', `held by ${all.map((s) => s.nodeID).join(',')}`);
    await waitForChange(io, config, signal);
    return 0;
  }
  const slot: Slot = {
    nodeID: config.nodeId,
    metadata: {
      unschedulable: node.spec?.unschedulable ?? false,
      bootID: node.status?.nodeInfo?.bootID ?? '',
    },
    created: io.clock.now().toISOString(),
    TTL: 0,
  };
  if (!(await writeSlots(io, config, ds, [...all, slot]))) return 0;
  await status(io, config, 'draining');
  await kube.mergePatchNode(config.nodeId, { spec: { unschedulable: true } });
  return drainAndReboot(config, io);
}

async function waitForChange(io: SimAgentIo, config: Config, signal: AbortSignal): Promise<void> {
  const ac = new AbortController();
  const stop = (): void => {
    ac.abort();
  };
  signal.addEventListener('abort', stop, { once: true });
  await Promise.race([
    io.kube.watchDaemonSet(config.dsNamespace, config.dsName, stop, { signal: ac.signal }),
    io.clock.sleep(config.periodMs, ac.signal).catch(() => undefined),
  ]);
  stop();
}

async function drainAndReboot(config: Config, io: SimAgentIo): Promise<number | undefined> {
  for (;;) {
    const pods = await io.kube.listPods(undefined, { fieldSelector: `spec.nodeName=${config.nodeId}` });
    const left = pods.filter(
      (p) =>
        p.metadata?.ownerReferences?.[0]?.kind !== 'DaemonSet' &&
        !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    );
    if (left.length === 0) break;
    for (const p of left) {
      if (p.metadata?.deletionTimestamp) continue;
      await io.kube.evictPod(p.metadata?.namespace ?? '', p.metadata?.name ?? '').catch(() => undefined);
    }
    await io.clock.sleep(5000);
  }
  await io.clock.sleep(config.rebootDelayMs);
  await status(io, config, 'rebooting');
  await io.rebooter.reboot();
  return undefined;
}

async function resume(
  config: Config,
  io: SimAgentIo,
  s: { ds: V1DaemonSet; all: Slot[]; mine: Slot; node: V1Node },
): Promise<number | undefined> {
  if ((s.node.status?.nodeInfo?.bootID ?? '') === s.mine.metadata.bootID) return drainAndReboot(config, io);
  if (!ready(s.node)) return 10_000;
  if (!s.mine.metadata.unschedulable)
    await io.kube.mergePatchNode(config.nodeId, { spec: { unschedulable: false } });
  if (
    !(await writeSlots(
      io,
      config,
      s.ds,
      s.all.filter((x) => x !== s.mine),
    ))
  )
    return 0;
  await status(io, config, 'idle');
  return undefined;
}

function ready(node: V1Node): boolean {
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

export { lockHolders };
