// `kured-ts cleanup [--dry-run] [--end-cycles] [--force]`: after `helm uninstall kured-ts`, takes
// what kured-ts wrote off the nodes (src/node/cleanup.ts) and its annotations off the lock's
// DaemonSet (the fleet pause, a wave's resume record), leaving kured's lock and taint to kured.
//
// It refuses while the chart's agents still run (they would write it all again), and leaves a node
// in a reboot cycle whole unless told to end the cycles. Every node is one merge patch guarded by its
// resourceVersion: a node changed in between is read and judged again (bounded), never half-cleaned.
// Each API call has its own deadline, so a fleet of thousands is not cut short by one.
import type { Command } from 'commander';
import { isConflict, isNotFound } from '../kube/errors.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { retry } from '../kube/retry.js';
import { cleanupPatch, ourKeys, planNodeCleanup, removing, type NodeCleanup } from '../node/cleanup.js';
import { toNodeState } from '../node/kube-node-ops.js';
import { CHART_SELECTOR } from './discover.js';
import {
  addClusterOptions,
  clusterOptions,
  commandSignal,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  runCommand,
  type ClusterFlags,
  type ClusterOptions,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
} from './shared.js';

export interface CleanupOptions extends DaemonSetRef {
  /** Say what would be removed; write nothing. */
  dryRun: boolean;
  /** Clean nodes in a reboot cycle too (uncordoning those whose cordon the cycle says was ours). */
  endCycles: boolean;
  /** Clean although the chart's agents still run. */
  force: boolean;
}

/** Nodes per list page: a fleet of thousands is read in bounded pieces. */
const PAGE = 500;
/** A node changed between our read and our write: read and judge it again, at most this often. */
const WRITE_ATTEMPTS = 5;

interface Tally {
  cleaned: number;
  untouched: number;
  inCycle: string[];
  /** Nodes whose cycle --end-cycles ended: the lock may still hold their slots. */
  endedCycles: string[];
  failed: string[];
}

/** The coordinator's pods carry the chart's name with this suffix (charts/kured-ts/templates/_helpers.tpl). */
const COORDINATOR_SELECTOR = `${CHART_SELECTOR}-coordinator`;

/**
 * What of kured-ts still runs, as "DaemonSet ns/name" and "pod ns/name": the chart's DaemonSets, and
 * its agents' and coordinator's pods (`helm uninstall` returns while they still terminate, and
 * either could write again meanwhile).
 */
async function stillRunning(kube: Kube, io: CommandIo): Promise<string[]> {
  const name = (o: { metadata?: { namespace?: string; name?: string } }): string =>
    `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
  const sets = await kube.listDaemonSets(
    undefined,
    { labelSelector: CHART_SELECTOR },
    commandSignal(io.timeoutMs),
  );
  const running: string[] = sets.map((ds) => `DaemonSet ${name(ds)}`);
  for (const selector of [CHART_SELECTOR, COORDINATOR_SELECTOR]) {
    const pods = await kube.listPods(undefined, { labelSelector: selector }, commandSignal(io.timeoutMs));
    running.push(...pods.map((p) => `pod ${name(p)}`));
  }
  return running;
}

function describe(plan: Extract<NodeCleanup, { kind: 'clean' }>, dryRun: boolean): string {
  const parts: string[] = [];
  if (plan.labels.length > 0) parts.push(`labels ${plan.labels.join(', ')}`);
  if (plan.annotations.length > 0) parts.push(`annotations ${plan.annotations.join(', ')}`);
  const uncordon = plan.uncordon ? `; ${dryRun ? 'would uncordon' : 'uncordoned'} (the cycle's cordon)` : '';
  const left = plan.leftCordoned === undefined ? '' : `; left cordoned: ${plan.leftCordoned}`;
  return `${plan.node}: ${dryRun ? 'would remove' : 'removed'} ${parts.join('; ')}${uncordon}${left}`;
}

/** Judges and writes one node; a conflict reads it again. */
async function cleanNode(first: V1Node, options: CleanupOptions, io: CommandIo, tally: Tally): Promise<void> {
  let node = first;
  const name = node.metadata?.name ?? '';
  await retry(
    async (attempt) => {
      if (attempt > 1) node = await io.kube.getNode(name, commandSignal(io.timeoutMs));
      const plan = planNodeCleanup(toNodeState(node), options.endCycles);
      if (plan.kind === 'nothing') {
        if (attempt === 1) tally.untouched++;
        else {
          // our write answered with an error had landed, or another writer cleaned it
          tally.cleaned++;
          io.out(`${name}: clean when read again after the write's answer was lost or refused`);
        }
        return;
      }
      if (plan.kind === 'in-cycle') {
        tally.inCycle.push(name);
        (io.err ?? io.out)(
          `${name}: left whole: ${plan.reason}; reinstall kured-ts to let its agent finish the cycle, or end it with --end-cycles`,
        );
        return;
      }
      if (!options.dryRun) {
        const patch = cleanupPatch(plan, node.metadata?.resourceVersion ?? '');
        await io.kube.mergePatchNode(name, patch, commandSignal(io.timeoutMs));
      }
      tally.cleaned++;
      if (plan.endsCycle) tally.endedCycles.push(name);
      io.out(describe(plan, options.dryRun));
    },
    {
      attempts: WRITE_ATTEMPTS,
      baseMs: 100,
      maxMs: 2_000,
      retryOn: isConflict,
      clock: io.clock,
    },
  ).catch((e: unknown) => {
    if (isNotFound(e)) return; // deleted meanwhile: nothing of ours is left on it
    tally.failed.push(name);
    (io.err ?? io.out)(describeApiError(e, `clean node ${name}`));
  });
}

/** Removes our annotations from the lock's DaemonSet (kured's lock annotation stays). */
async function cleanLockDaemonSet(options: CleanupOptions, io: CommandIo): Promise<boolean> {
  const ref = `${options.dsNamespace}/${options.dsName}`;
  try {
    const ds = await io.kube.getDaemonSet(options.dsNamespace, options.dsName, commandSignal(io.timeoutMs));
    const keys = ourKeys(ds.metadata?.annotations ?? {});
    if (keys.length === 0) return true;
    if (!options.dryRun) {
      const guard = { resourceVersion: ds.metadata?.resourceVersion };
      await io.kube.mergePatchDaemonSet(
        options.dsNamespace,
        options.dsName,
        { metadata: { ...guard, annotations: removing(keys) } },
        commandSignal(io.timeoutMs),
      );
    }
    io.out(`DaemonSet ${ref}: ${options.dryRun ? 'would remove' : 'removed'} annotations ${keys.join(', ')}`);
    return true;
  } catch (e: unknown) {
    if (isNotFound(e)) {
      io.out(`DaemonSet ${ref}: not found (name the lock's DaemonSet with --ds-namespace and --ds-name)`);
      return true;
    }
    (io.err ?? io.out)(describeApiError(e, `clean DaemonSet ${ref}`));
    return false;
  }
}

function summary(tally: Tally, dryRun: boolean): string {
  const verb = dryRun ? 'would be cleaned' : 'cleaned';
  const parts = [`${tally.cleaned} node(s) ${verb}`, `${tally.untouched} carried nothing of kured-ts's`];
  if (tally.inCycle.length > 0) parts.push(`${tally.inCycle.length} in a reboot cycle left whole`);
  if (tally.failed.length > 0)
    parts.push(`${tally.failed.length} could not be written (${tally.failed.join(', ')})`);
  const lock =
    tally.endedCycles.length === 0
      ? ''
      : `; the lock may still hold the slots of the cycles ended (${tally.endedCycles.join(', ')}): \`kured-ts unlock --stale\` frees them`;
  return parts.join(', ') + lock;
}

/** Every node, a page at a time, each judged and written on its own. */
async function cleanNodes(options: CleanupOptions, io: CommandIo): Promise<Tally> {
  const tally: Tally = { cleaned: 0, untouched: 0, inCycle: [], endedCycles: [], failed: [] };
  let token: string | undefined;
  do {
    const page = await io.kube.listNodesPage(
      { limit: PAGE, ...(token === undefined ? {} : { continue: token }) },
      commandSignal(io.timeoutMs),
    );
    for (const node of page.items) await cleanNode(node, options, io, tally);
    token = page.continue;
  } while (token !== undefined);
  return tally;
}

/**
 * Cleans every node and the lock's DaemonSet; exit 0 when all is clean (or would be), 1 when the
 * agents still run, a node in a cycle was left whole, or a write failed.
 */
export async function runCleanup(options: CleanupOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const running = options.force ? [] : await stillRunning(io.kube, io);
  if (running.length > 0) {
    const shown =
      running.slice(0, 3).join(', ') + (running.length > 3 ? ` and ${running.length - 3} more` : '');
    err(
      `kured-ts still runs (${shown}) and would write it all again: ` +
        '`helm uninstall --wait` the release first (--force cleans anyway); nothing was written',
    );
    return EXIT_FAILURE;
  }
  const tally = await cleanNodes(options, io);
  const lockClean = await cleanLockDaemonSet(options, io);
  io.out(summary(tally, options.dryRun));
  const ok = lockClean && tally.inCycle.length === 0 && tally.failed.length === 0;
  return ok ? EXIT_OK : EXIT_FAILURE;
}

interface CleanupFlags extends ClusterFlags {
  dryRun?: boolean;
  endCycles?: boolean;
  force?: boolean;
}

/** Adds `cleanup` to the program. */
export function registerCleanup(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('cleanup')
    .description(
      "after `helm uninstall kured-ts`: take kured-ts's labels and annotations (and the autoscaler marks it added) off every node, and its annotations off the lock's DaemonSet",
    )
    .option('--dry-run', 'say what would be removed; write nothing')
    .option(
      '--end-cycles',
      "also clean nodes in a reboot cycle, uncordoning those whose cordon the cycle says was kured-ts's (a quarantined node stays cordoned)",
    )
    .option('--force', "clean although kured-ts's agents still run (they write their marks again)");
  addClusterOptions(cmd).action((flags: CleanupFlags) =>
    runCommand(deps, {
      what: 'clean up after kured-ts',
      options: () => clusterOptions({ ...flags }, deps.env),
      target: (options) => options,
      run: (options: ClusterOptions, io: CommandIo) =>
        runCleanup(
          {
            dsNamespace: options.dsNamespace,
            dsName: options.dsName,
            dryRun: flags.dryRun === true,
            endCycles: flags.endCycles === true,
            force: flags.force === true,
          },
          io,
        ),
    }),
  );
  return cmd;
}
