// `kured-ts check`: the command and its options (the agent's own flags, from the flag table).
import type { Command } from 'commander';
import { FLAGS } from '../config/flags.js';
import { optionValues, parseConfig } from '../config/parse.js';
import { withDrainRules } from '../config/drain-rules.js';
import {
  addConnectionOptions,
  addFlags,
  clusterOptions,
  readText,
  type CommandDeps,
  runCommand,
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
  ).action((opts: Record<string, unknown>) =>
    runCommand(deps, {
      what: `check node ${String(opts.node)}`,
      options: () => ({
        output: parseOutput(String(opts.output), CHECK_OUTPUTS),
        config: withDrainRules(parseConfig(optionValues(opts, FLAGS), deps.env), readText),
        // no --ds-name, no KURED_DS_NAME: the lock the chart's agents use, found as status and pause find it
        cluster: clusterOptions(opts, deps.env),
      }),
      cluster: (options) => options.cluster,
      run: ({ output, config }, io, ref) => {
        const found = { ...config, dsNamespace: ref.dsNamespace, dsName: ref.dsName };
        return runCheck({ node: String(opts.node), config: found, local: opts.local === true, output }, io);
      },
    }),
  );
  return cmd;
}
