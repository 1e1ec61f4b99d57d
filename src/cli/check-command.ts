// `kured-ts check`: the command and its options (the agent's own flags, from the flag table).
import type { Command } from 'commander';
import { FLAGS, shownDefault, type FlagSpec } from '../config/flags.js';
import { optionValues, parseConfig, type FlagValues } from '../config/parse.js';
import type { Config } from '../config/config.js';
import { configurationWords, deployedConfig, type DeployedConfig } from './deployed-config.js';
import { withDrainRules } from '../config/drain-rules.js';
import {
  addConnectionOptions,
  addFlags,
  clusterOptions,
  commandSignal,
  type CommandIo,
  readText,
  type CommandDeps,
  runCommand,
} from './shared.js';
import { parseOutput } from './output.js';
import { CHECK_OUTPUTS, runCheck } from './check.js';

/**
 * The configuration to judge `node` with: the deployed agent's (its DaemonSet's flags and KURED_*
 * variables) with the command line's flags over it, or the command line's alone where no agent of the
 * chart runs on the node (or its DaemonSet cannot be read), and whose it is, in words.
 */
async function withDeployed(
  io: CommandIo,
  node: string,
  given: FlagValues,
  fallback: Config,
): Promise<{ config: Config; words: string }> {
  let deployed: DeployedConfig | undefined;
  try {
    const labels = (await io.kube.getNode(node, commandSignal(io.timeoutMs))).metadata?.labels ?? {};
    deployed = await deployedConfig(io.kube, labels, commandSignal(io.timeoutMs));
  } catch {
    deployed = undefined; // the node or the DaemonSets cannot be read: check says so itself
  }
  if (deployed === undefined) return { config: fallback, words: configurationWords(undefined, given) };
  const files = deployed.files;
  try {
    const parsed = parseConfig({ ...deployed.values, ...given }, deployed.env);
    const read = (file: string): string => files[file] ?? readText(file);
    return { config: withDrainRules(parsed, read), words: configurationWords(deployed, given) };
  } catch (e) {
    const why = `the deployed agent's (${deployed.from}) cannot be read: ${(e as Error).message}`;
    return { config: fallback, words: `${configurationWords(undefined, given)}; ${why}` };
  }
}

/** What check's help shows as each flag's default: the deployed agent's value comes first. */
function checkDefaults(flags: readonly FlagSpec[]): Record<string, string> {
  const lock = "the lock of the chart's agents, found by their label; else";
  return Object.fromEntries(
    flags.map((f) => {
      const where = f.name === 'ds-name' || f.name === 'ds-namespace' ? lock : "the deployed agent's; else";
      return [f.name, `${where} ${shownDefault(f)}`];
    }),
  );
}

/** Adds `check` to the program. */
export function registerCheck(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('check')
    .description(
      "dry run: the decision the agent on NODE would take now, and why (changes nothing); judged with the flags and KURED_* variables of the chart's DaemonSet that runs on NODE, those given here over them",
    )
    .requiredOption('--node <name>', 'the node to check')
    .option('--local', 'also evaluate the reboot sentinel (run on the node itself)')
    .option('-o, --output <format>', 'text, json or yaml', 'text');
  addConnectionOptions(cmd);
  const flags = FLAGS.filter((f) => f.name !== 'node-id' && f.name !== 'kubeconfig');
  addFlags(cmd, flags, checkDefaults(flags)).action((opts: Record<string, unknown>) =>
    runCommand(deps, {
      what: `check node ${String(opts.node)}`,
      options: () => ({
        output: parseOutput(String(opts.output), CHECK_OUTPUTS),
        // the command line alone, checked before any API call (a bad value: one line, exit 2)
        config: withDrainRules(parseConfig(optionValues(opts, FLAGS), deps.env), readText),
        // no --ds-name, no KURED_DS_NAME: the lock the chart's agents use, found as status and pause find it
        cluster: clusterOptions(opts, deps.env),
      }),
      cluster: (options) => options.cluster,
      run: async ({ output, config }, io, ref) => {
        const node = String(opts.node);
        const judged = await withDeployed(io, node, optionValues(opts, FLAGS), config);
        const found = { ...judged.config, dsNamespace: ref.dsNamespace, dsName: ref.dsName };
        const local = opts.local === true;
        return runCheck({ node, config: found, local, output, configuration: judged.words }, io);
      },
    }),
  );
  return cmd;
}
