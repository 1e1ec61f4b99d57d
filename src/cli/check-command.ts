// `kured-ts check`: the command and its options (the agent's own flags, from the flag table).
import type { Command } from 'commander';
import { FLAGS, shownDefault, type FlagSpec } from '../config/flags.js';
import { optionValues, parseConfig, type FlagValues } from '../config/parse.js';
import type { Config } from '../config/config.js';
import {
  CONTAINER_PATH_FLAGS,
  configurationWords,
  deployedConfig,
  type DeployedConfig,
} from './deployed-config.js';
import { withDrainRules } from '../config/drain-rules.js';
import {
  addConnectionOptions,
  addFlags,
  clusterOptions,
  commandSignal,
  describeApiError,
  type CommandIo,
  readText,
  type CommandDeps,
  runCommand,
} from './shared.js';
import { parseOutput } from './output.js';
import { CHECK_OUTPUTS, runCheck } from './check.js';

/** What the judgement is given: the command line's flags (and their config), --local, the shell's env. */
interface Given {
  node: string;
  values: FlagValues;
  fallback: Config;
  local: boolean;
  env: Readonly<Record<string, string | undefined>>;
}

/** The proxy variables of the shell check runs in: its own way out to Prometheus and Alertmanager. */
const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];

/**
 * The deployed flags as check uses them: with --local (run on the node), the container's paths of
 * the sentinel and the host's root as the host sees them (its hostPath mounts), or dropped and said.
 */
function forHere(deployed: DeployedConfig, local: boolean): DeployedConfig {
  if (!local) return deployed;
  const values: Record<string, readonly string[] | undefined> = { ...deployed.values };
  const unread = [...deployed.unread];
  for (const flag of CONTAINER_PATH_FLAGS) {
    const path = values[flag]?.[0];
    if (path === undefined) continue;
    const onHost = deployed.onHost(path);
    if (onHost === undefined) unread.push(`--${flag}=${path} (a path in the container)`);
    values[flag] = onHost === undefined ? undefined : [onHost];
  }
  return { ...deployed, values, unread };
}

/**
 * The configuration to judge `node` with: the deployed agent's (its DaemonSet's flags and KURED_*
 * variables) with the command line's flags over it, or the command line's alone where no agent of the
 * chart runs on the node (or its DaemonSet cannot be read), and whose it is, in words.
 */
async function withDeployed(
  io: CommandIo,
  given: Given,
): Promise<{ config: Config; words: string; deployed: boolean }> {
  let found: DeployedConfig | undefined;
  try {
    const labels = (await io.kube.getNode(given.node, commandSignal(io.timeoutMs))).metadata?.labels ?? {};
    found = await deployedConfig(io.kube, labels, commandSignal(io.timeoutMs));
  } catch (e) {
    const why = `the deployed agent's configuration cannot be read: ${describeApiError(e, 'reading it')}`;
    return { config: given.fallback, words: configurationWords(why, given.values), deployed: false };
  }
  if (found === undefined) {
    const words = configurationWords('no kured-ts DaemonSet runs on the node', given.values);
    return { config: given.fallback, words, deployed: false };
  }
  const deployed = forHere(found, given.local);
  const proxy = Object.fromEntries(PROXY_VARIABLES.map((v) => [v, given.env[v]]));
  try {
    const parsed = parseConfig({ ...deployed.values, ...given.values }, { ...proxy, ...deployed.env });
    const read = (file: string): string => deployed.files[file] ?? readText(file);
    return {
      config: withDrainRules(parsed, read),
      words: configurationWords(deployed, given.values),
      deployed: true,
    };
  } catch (e) {
    const why = `the deployed agent's (${deployed.from}) cannot be used: ${(e as Error).message}`;
    return { config: given.fallback, words: configurationWords(why, given.values), deployed: false };
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
        const local = opts.local === true;
        const values = optionValues(opts, FLAGS);
        const judged = await withDeployed(io, { node, values, fallback: config, local, env: deps.env });
        // the lock: the command line's, else the deployed agent's own flags, else the one found
        const lockGiven = values['ds-name'] !== undefined || values['ds-namespace'] !== undefined;
        const lock =
          judged.deployed && !lockGiven ? {} : { dsNamespace: ref.dsNamespace, dsName: ref.dsName };
        const found = { ...judged.config, ...lock };
        return runCheck({ node, config: found, local, output, configuration: judged.words }, io);
      },
    }),
  );
  return cmd;
}
