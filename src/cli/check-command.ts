// `kured-ts check`: the command and its options (the agent's own flags, from the flag table).
import type { Command } from 'commander';
import type { Config } from '../config/config.js';
import { FLAGS } from '../config/flags.js';
import { optionValues, parseConfigWithWarnings } from '../config/parse.js';
import { errorText } from '../text/error-text.js';
import {
  addConnectionOptions,
  addFlags,
  commandIo,
  EXIT_USAGE,
  clusterOptions,
  resolveDaemonSet,
  usage,
  type CommandDeps,
} from './shared.js';
import { parseOutput } from './output.js';
import { CHECK_OUTPUTS, runCheck } from './check.js';

/** Adds `check` to the program. */
export function registerCheck(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('check')
    .description('dry run: the decision the agent on NODE would take now, and why (changes nothing)')
    .requiredOption('--node <name>', 'the node to check')
    .option('--local', 'also evaluate the reboot sentinel (run on the node itself)')
    .option('-o, --output <format>', 'text, json or yaml', 'text');
  addConnectionOptions(cmd);
  addFlags(
    cmd,
    FLAGS.filter((f) => f.name !== 'node-id' && f.name !== 'kubeconfig'),
  ).action(async (opts: Record<string, unknown>) => {
    const output = usage(deps, () => parseOutput(String(opts.output), CHECK_OUTPUTS));
    if (output === undefined) return;
    let config: Config;
    try {
      config = parseConfigWithWarnings(optionValues(opts, FLAGS), deps.env).config;
    } catch (e: unknown) {
      deps.err(errorText(e));
      deps.exit(EXIT_USAGE);
      return;
    }
    // no --ds-name, no KURED_DS_NAME: the lock the chart's agents use, found as status and pause find it
    const cluster = clusterOptions(opts, deps.env);
    const io = commandIo(deps, cluster);
    if (!io) return;
    const ref = await resolveDaemonSet(deps, io, cluster);
    if (!ref) return;
    const found = { ...config, dsNamespace: ref.dsNamespace, dsName: ref.dsName };
    deps.exit(
      await runCheck({ node: String(opts.node), config: found, local: opts.local === true, output }, io),
    );
  });
  return cmd;
}
