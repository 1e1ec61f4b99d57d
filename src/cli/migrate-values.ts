// `kured-ts migrate-values FILE`: kured's Helm chart values as kured-ts chart values on stdout, with
// a comment line at the top for every key not carried over and why (the output stays a values file).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { flagDefault } from '../config/flags.js';
import { dump, load } from 'js-yaml';
import { chartSchemaErrors } from '../migrate/chart-schema.js';
import {
  kuredDaemonSetName,
  migrateKuredValues,
  type KuredLock,
  type Migration,
  type NoteKind,
} from '../migrate/kured-chart-values.js';
import { errorText } from '../text/error-text.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type CommandDeps } from './shared.js';

export interface MigrateOptions {
  /** The kured values file ('-' = stdin). */
  file: string;
  /** Share kured's lock: its DaemonSet, from kured's Helm release and namespace. */
  lock?: KuredLock;
  /** Also fail (exit 1) when a value is refused by design, not only when one is lost. */
  strict?: boolean;
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

/** How the notes are headed in the output, in this order. */
const HEADINGS: Record<NoteKind, string> = {
  lost: 'Lost: set in kured, with no effect in kured-ts (fix before installing)',
  refused: 'Left out by design (the note says what replaces it)',
  changed: 'Carried with a change',
};

function printValues(migration: Migration, file: string, out: (line: string) => void): void {
  out(`# kured-ts chart values, from the kured chart values in ${file} (kured-ts migrate-values).`);
  for (const kind of ['lost', 'refused', 'changed'] as const) {
    const notes = migration.notes.filter((n) => n.kind === kind);
    if (notes.length === 0) continue;
    out(`# ${HEADINGS[kind]} (${notes.length}):`);
    for (const n of notes) out(`#   ${n.key}: ${n.why}`);
  }
  out(dump(migration.values, { lineWidth: -1, noRefs: true }).trimEnd());
}

/**
 * Reads, migrates and prints the values, then checks them as `helm install` would (the chart's
 * defaults and schema). 0; 1 when the output would not install, when something the user set is
 * lost (with `strict`, also refused); 2 with one line naming the file when it cannot be read.
 */
export async function runMigrateValues(options: MigrateOptions, io: MigrateIo): Promise<number> {
  const input = await readValues(options.file, io);
  if (typeof input === 'string') {
    io.err(`cannot read kured values from ${options.file}: ${input}`);
    return EXIT_USAGE;
  }
  const migration = migrateKuredValues(input, options.lock);
  printValues(migration, options.file, io.out);
  const count = (kind: NoteKind): number => migration.notes.filter((n) => n.kind === kind).length;
  io.err(
    `migrated ${migration.carried} key(s) from ${options.file}: ${count('lost')} lost, ${count('refused')} left out by design, ${count('changed')} carried with a change (notes at the top of the output)`,
  );
  const schema = chartSchemaErrors(migration.values);
  if (schema.length > 0) {
    io.err(`the output does not install: the kured-ts chart's schema refuses it (${schema.length}):`);
    for (const line of schema) io.err(`  ${line}`);
    return EXIT_FAILURE;
  }
  const failing = migration.notes.filter(
    (n) => n.kind === 'lost' || (options.strict === true && n.kind === 'refused'),
  );
  if (failing.length > 0) {
    io.err(
      `${options.strict === true ? 'with --strict, ' : ''}not migrated: ${failing.map((n) => n.key).join(', ')} (see the notes)`,
    );
    return EXIT_FAILURE;
  }
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
      flagDefault('ds-namespace'),
    )
    .option(
      '--strict',
      "also exit 1 when a value is left out by design (kured's image, a flag the chart sets)",
    )
    .action(
      async (file: string, flags: { kuredRelease?: string; kuredNamespace: string; strict?: boolean }) => {
        const lock =
          flags.kuredRelease === undefined
            ? undefined
            : { dsName: kuredDaemonSetName(flags.kuredRelease), dsNamespace: flags.kuredNamespace };
        deps.exit(
          await runMigrateValues(
            { file, lock, strict: flags.strict === true },
            { out: deps.out, err: deps.err, stdin: deps.stdin },
          ),
        );
      },
    );
}
