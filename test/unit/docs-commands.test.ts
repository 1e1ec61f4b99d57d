// Every command the documentation prints works as printed, checked without a cluster: each
// `kured-ts …` line (also as `npx kured-ts` or `kubectl kured-ts`, or a command name followed by its
// flags, as in `simulate --nodes 12`) names a command of the real commander program and only flags
// that command has; each `npm run NAME` a script of package.json; each `node scripts/…` a file; each
// Helm `--set KEY=…` a key of the chart's values.yaml.
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { load } from 'js-yaml';
import { buildProgram, type CliIo } from '../../src/cli/program.js';
import type { CommandDeps } from '../../src/cli/shared.js';
import { registerApprove } from '../../src/cli/approve.js';
import { registerCheck } from '../../src/cli/check-command.js';
import { registerCoordinator } from '../../src/cli/coordinator.js';
import { registerHistory } from '../../src/cli/history.js';
import { registerMigrateValues } from '../../src/cli/migrate-values.js';
import { registerPause } from '../../src/cli/pause.js';
import { registerReboot } from '../../src/cli/reboot.js';
import { registerResume } from '../../src/cli/resume.js';
import { registerSimulate } from '../../src/cli/simulate-command.js';
import { registerStatus } from '../../src/cli/status-command.js';
import { registerUnlock } from '../../src/cli/unlock.js';
import { registerCleanup } from '../../src/cli/cleanup.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { codeBlocks, codeSpans, docFiles, readRepoFile } from '../fakes/markdown.js';

const noop = (): void => undefined;
const deps: CommandDeps = { env: {}, out: noop, err: noop, exit: noop };
const io: CliIo = {
  env: {},
  stdout: noop,
  stderr: noop,
  now: () => new Date('2026-01-05T10:00:00Z'),
  version: '0.0.0',
  createLogger: () => new MemoryLogger(),
};
type Register = (program: Command, deps: CommandDeps) => unknown;
const operator = (register: Register) => (program: Command) => void register(program, deps);

/** The program as `kured-ts` builds it, every command registered at once (not loaded on use). */
const program = buildProgram(
  io,
  {
    runAgent: () => Promise.resolve(0),
    commands: {
      status: operator(registerStatus),
      history: operator(registerHistory),
      approve: operator(registerApprove),
      reboot: operator(registerReboot),
      pause: operator(registerPause),
      resume: operator(registerResume),
      unlock: operator(registerUnlock),
      cleanup: operator(registerCleanup),
      check: operator(registerCheck),
      coordinator: operator(registerCoordinator),
      'migrate-values': operator(registerMigrateValues),
      simulate: (p) => void registerSimulate(p, { ...io, isTTY: false, exit: noop }),
    },
  },
  { code: 0 },
);
const commandNames = new Set(program.commands.map((c) => c.name()));

/** The command lines a text prints: each line of its shell blocks, each inline code span. */
function printedLines(text: string): string[] {
  const blocks = codeBlocks(text)
    .filter((b) => ['', 'sh', 'bash', 'shell', 'console'].includes(b.lang))
    .flatMap((b) => b.text.replace(/\\\n\s*/g, ' ').split('\n'));
  return [...blocks, ...codeSpans(text)]
    .flatMap((line) => line.split(/\s*(?:&&|\|\||;|(?<!\\)\|(?!\|))\s*/))
    .map((line) => line.replace(/^\$\s+/, '').trim());
}

/** The flags written in a command line: `--name`, `-o`, also inside `[…]` and `--name=value`. */
function flagsOf(line: string): string[] {
  return [...line.matchAll(/(?<![\w./=-])(--?[A-Za-z][\w-]*)/g)].map((m) => m[1] ?? '');
}

function hasFlag(command: Command, flag: string): boolean {
  if (['--help', '-h'].includes(flag)) return true;
  if (command === program && ['--version', '-V'].includes(flag)) return true;
  return command.options.some((o) => o.long === flag || o.short === flag);
}

/** What is wrong with a kured-ts command line (`args`: what follows `kured-ts`), if anything. */
function kuredTsProblems(args: string): string[] {
  const [word = ''] = args.split(' ');
  const named = !word.startsWith('-') && word !== '' && word !== '/';
  if (named && !commandNames.has(word)) return [`no command ${word}`];
  const command = named ? program.commands.find((c) => c.name() === word) : program;
  if (command === undefined) return [`no command ${word}`];
  return flagsOf(args)
    .filter((flag) => !hasFlag(command, flag))
    .map((flag) => `${command === program ? 'the agent' : word} has no flag ${flag}`);
}

function chartValueProblems(line: string): string[] {
  const values = load(readRepoFile('charts/kured-ts/values.yaml')) as Record<string, unknown>;
  const keys = [...line.matchAll(/--set\s+'?([\w.]+)=/g)].map((m) => m[1] ?? '');
  const missing = (key: string): boolean => {
    let node: unknown = values;
    for (const part of key.split('.')) {
      if (typeof node !== 'object' || node === null || !(part in node)) return true;
      node = (node as Record<string, unknown>)[part];
    }
    return false;
  };
  return keys.filter(missing).map((key) => `no chart value ${key}`);
}

/** The problems of one printed line; undefined when it is no command these tests know. */
function problems(line: string): string[] | undefined {
  const kuredTs = /^(?:npx |kubectl )?kured-ts(?: (.*))?$/.exec(line);
  if (kuredTs !== null) return kuredTsProblems(kuredTs[1] ?? '');
  const bare = /^([a-z-]+) (-.*)$/.exec(line);
  if (bare !== null && commandNames.has(bare[1] ?? '')) return kuredTsProblems(line);
  const npmRun = /^npm run ([\w:-]+)/.exec(line);
  if (npmRun !== null) {
    const scripts = (JSON.parse(readRepoFile('package.json')) as { scripts: Record<string, string> }).scripts;
    return npmRun[1] !== undefined && npmRun[1] in scripts ? [] : [`no npm script ${npmRun[1] ?? ''}`];
  }
  const node = /^node (scripts\/\S+)/.exec(line);
  if (node?.[1] !== undefined)
    return existsSync(new URL(`../../${node[1]}`, import.meta.url)) ? [] : [`no file ${node[1]}`];
  if (/^helm (install|upgrade|template) /.test(line)) return chartValueProblems(line);
  return undefined;
}

const printed = docFiles().flatMap((file) =>
  [...new Set(printedLines(readRepoFile(file)))]
    .filter((line) => problems(line) !== undefined)
    .map((line) => [file, line] as const),
);

describe('the commands the documentation prints', () => {
  it('finds them (the quick start, the Helm install, the commands table)', () => {
    const readme = printed.filter(([file]) => file === 'README.md').map(([, line]) => line);
    expect(readme).toEqual(
      expect.arrayContaining([
        'npx kured-ts simulate',
        'npx kured-ts simulate --nodes 50 --concurrency 3 --pdb max-unavailable=1',
        'kured-ts check --node NAME [-o text\\|json\\|yaml]',
      ]),
    );
    expect(readme.some((line) => line.startsWith('helm install kured-ts ./charts/kured-ts'))).toBe(true);
  });

  it.each(printed)('%s: %s', (_file, line) => {
    expect(problems(line)).toEqual([]);
  });

  it('catches a command or a flag that does not exist', () => {
    expect(problems('kured-ts status --watcher')).toEqual(['status has no flag --watcher']);
    expect(problems('kured-ts restart NODE')).toEqual(['no command restart']);
    expect(problems('kured-ts --reboot-days mon --bogus')).toEqual(['the agent has no flag --bogus']);
    expect(problems('npm run no-such-script')).toEqual(['no npm script no-such-script']);
    expect(problems('helm install x ./charts/kured-ts --set configuration.nope=1')).toEqual([
      'no chart value configuration.nope',
    ]);
  });
});
