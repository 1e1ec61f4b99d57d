// `kured-ts migrate-values FILE`: kured's Helm chart values as kured-ts chart values on stdout, with
// a comment line at the top for every key not carried over and why (the output stays a values file).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { dump, load } from 'js-yaml';
import { kuredDaemonSetName, migrateKuredValues, type KuredLock } from '../migrate/kured-chart-values.js';
import { errorText } from '../text/error-text.js';
import { EXIT_OK, EXIT_USAGE, type CommandDeps } from './shared.js';

export interface MigrateOptions {
  /** The kured values file ('-' = stdin). */
  file: string;
  /** Share kured's lock: its DaemonSet, from kured's Helm release and namespace. */
  lock?: KuredLock;
}

/** What the command reads and writes. */
export interface MigrateIo {
  out: (line: string) => void;
  err: (line: string) => void;
  /** Reads a file; default fs/promises readFile (utf8). */
  read?: (file: string) => Promise<string>;
  /** Reads standard input, for the file '-'. */
  stdin?: () => Promise<string>;
}

/** The values map in `file`, or why it cannot be had (an empty file is no values). */
async function readValues(file: string, io: MigrateIo): Promise<object | string> {
  const read = io.read ?? ((f: string) => readFile(f, 'utf8'));
  let input: unknown;
  try {
    input = load(file === '-' && io.stdin ? await io.stdin() : await read(file));
  } catch (err) {
    return errorText(err).split('\n')[0] ?? '';
  }
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) return 'not a map of values';
  return input;
}

/** Reads and migrates; 0, or 2 with one line naming the file when it cannot be read or parsed. */
export async function runMigrateValues(options: MigrateOptions, io: MigrateIo): Promise<number> {
  const input = await readValues(options.file, io);
  if (typeof input === 'string') {
    io.err(`cannot read kured values from ${options.file}: ${input}`);
    return EXIT_USAGE;
  }
  const migration = migrateKuredValues(input, options.lock);
  io.out(
    `# kured-ts chart values, from the kured chart values in ${options.file} (kured-ts migrate-values).`,
  );
  if (migration.notes.length > 0) {
    io.out(`# Not carried over, or carried with a change (${migration.notes.length}):`);
    for (const n of migration.notes) io.out(`#   ${n.key}: ${n.why}`);
  }
  io.out(dump(migration.values, { lineWidth: -1, noRefs: true }).trimEnd());
  io.err(
    `migrated ${migration.carried} key(s) from ${options.file}; ${migration.notes.length} note(s) at the top of the output`,
  );
  return EXIT_OK;
}

/** Adds `migrate-values` to the program. */
export function registerMigrateValues(program: Command, deps: CommandDeps): Command {
  return program
    .command('migrate-values')
    .description('print kured-ts chart values for a kured chart values file, and what cannot be carried over')
    .argument('<file>', "kured's Helm values file (- for stdin)")
    .option(
      '--kured-release <name>',
      "kured's Helm release: kured-ts then shares kured's lock during the switch",
    )
    .option(
      '--kured-namespace <namespace>',
      "namespace of kured's release (with --kured-release)",
      'kube-system',
    )
    .action(async (file: string, flags: { kuredRelease?: string; kuredNamespace: string }) => {
      const lock =
        flags.kuredRelease === undefined
          ? undefined
          : { dsName: kuredDaemonSetName(flags.kuredRelease), dsNamespace: flags.kuredNamespace };
      deps.exit(await runMigrateValues({ file, lock }, { out: deps.out, err: deps.err, stdin: deps.stdin }));
    });
}
