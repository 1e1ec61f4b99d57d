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
  /** --image REPOSITORY[:TAG]: where kured-ts's image was pushed, written as image.repository and image.tag. */
  image?: { repository: string; tag?: string };
}

/**
 * Top-level keys only the kured-ts chart has: values with any of them are kured-ts's already (this
 * command's own output, edited), printed as they are, so that running it again changes nothing.
 */
const KURED_TS_ONLY_KEYS = [
  'coordinator',
  'admissionPolicy',
  'hooks',
  'hostSettings',
  'drainRules',
  'grafanaDashboard',
];

/** `--image` as given: REPOSITORY[:TAG] (a port in the registry's host is not a tag). */
export function parseImage(text: string): { repository: string; tag?: string } {
  const slash = text.lastIndexOf('/');
  const colon = text.lastIndexOf(':');
  const repository = colon > slash ? text.slice(0, colon) : text;
  const tag = colon > slash ? text.slice(colon + 1) : undefined;
  if (repository === '' || tag === '' || /\s|@/.test(text))
    throw new Error(
      `invalid value "${text}" for --image: expected REPOSITORY[:TAG], e.g. registry.example.com/kured-ts:0.1.0`,
    );
  return tag === undefined ? { repository } : { repository, tag };
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

/** The values map in `file` and its text, or why it cannot be had (an empty file is no values). */
async function readValues(
  file: string,
  io: MigrateIo,
): Promise<{ values: Record<string, unknown>; text: string } | string> {
  const read = io.read ?? ((f: string) => readFile(f, 'utf8'));
  let input: unknown;
  let text: string;
  try {
    text = file === '-' && io.stdin ? await io.stdin() : await read(file);
    input = load(text);
  } catch (err) {
    return errorText(err).split('\n')[0] ?? '';
  }
  if (input === undefined || input === null) return { values: {}, text };
  if (typeof input !== 'object' || Array.isArray(input)) return 'not a map of values';
  return { values: input as Record<string, unknown>, text };
}

/** How this command's output begins: a file that begins so is kured-ts values already. */
const OUTPUT_HEADER = '# kured-ts chart values, from the kured chart values in ';

/** How the notes are headed in the output, in this order. */
const HEADINGS: Record<NoteKind, string> = {
  lost: 'Lost: set in kured, with no effect in kured-ts (fix before installing)',
  refused: 'Left out by design (the note says what replaces it)',
  changed: 'Carried with a change',
  proposed: 'Proposed: not set in kured, recommended here (add it yourself)',
};

function printValues(migration: Migration, file: string, out: (line: string) => void): void {
  out(`${OUTPUT_HEADER}${file} (kured-ts migrate-values).`);
  for (const kind of ['lost', 'refused', 'changed', 'proposed'] as const) {
    const notes = migration.notes.filter((n) => n.kind === kind);
    if (notes.length === 0) continue;
    out(`# ${HEADINGS[kind]} (${notes.length}):`);
    for (const n of notes) out(`#   ${n.key}: ${n.why}`);
  }
  out(dump(migration.values, { lineWidth: -1, noRefs: true }).trimEnd());
}

/** The migration with --image's repository and tag written in, kured's image note answered by it. */
function withImage(migration: Migration, image: MigrateOptions['image']): Migration {
  if (image === undefined) return migration;
  const values = {
    ...migration.values,
    image: { ...(migration.values.image as object | undefined), ...image },
  };
  const notes = migration.notes.filter((n) => n.key !== 'image.repository' && n.key !== 'image.tag');
  const shown = `${image.repository}${image.tag === undefined ? '' : `:${image.tag}`}`;
  const note = { key: 'image', why: `kured-ts's image, from --image ${shown}`, kind: 'changed' as const };
  return { ...migration, values, notes: [...notes, note] };
}

/** Values that are kured-ts's already: printed as they are, checked against the chart's schema. */
function alreadyKuredTs(input: Record<string, unknown>, options: MigrateOptions, io: MigrateIo): number {
  const values =
    options.image === undefined
      ? input
      : { ...input, image: { ...(input.image as object | undefined), ...options.image } };
  io.out(dump(values, { lineWidth: -1, noRefs: true }).trimEnd());
  io.err(`${options.file} holds kured-ts chart values already (this command's output): printed as they are`);
  return schemaStatus(values, io);
}

/** 0 when the chart's schema takes `values`, else 1 with each refusal on stderr. */
function schemaStatus(values: Record<string, unknown>, io: MigrateIo): number {
  const schema = chartSchemaErrors(values);
  if (schema.length === 0) return EXIT_OK;
  io.err(`the output does not install: the kured-ts chart's schema refuses it (${schema.length}):`);
  for (const line of schema) io.err(`  ${line}`);
  return EXIT_FAILURE;
}

/**
 * Reads, migrates and prints the values, then checks them as `helm install` would (the chart's
 * defaults and schema). 0; 1 when the output would not install, when something the user set is
 * lost (with `strict`, also refused); 2 with one line naming the file when it cannot be read.
 */
export async function runMigrateValues(options: MigrateOptions, io: MigrateIo): Promise<number> {
  const read = await readValues(options.file, io);
  if (typeof read === 'string') {
    io.err(`cannot read kured values from ${options.file}: ${read}`);
    return EXIT_USAGE;
  }
  const input = read.values;
  const ours = read.text.startsWith(OUTPUT_HEADER) || KURED_TS_ONLY_KEYS.some((k) => Object.hasOwn(input, k));
  if (ours) return alreadyKuredTs(input, options, io);
  const migration = withImage(migrateKuredValues(input, options.lock), options.image);
  printValues(migration, options.file, io.out);
  const count = (kind: NoteKind): number => migration.notes.filter((n) => n.kind === kind).length;
  io.err(
    `migrated ${migration.carried} key(s) from ${options.file}: ${count('lost')} lost, ${count('refused')} left out by design, ${count('changed')} carried with a change${count('proposed') > 0 ? `, ${count('proposed')} proposed` : ''} (notes at the top of the output)`,
  );
  if (schemaStatus(migration.values, io) !== EXIT_OK) return EXIT_FAILURE;
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
      '--image <repository[:tag]>',
      "where you pushed kured-ts's image: written as image.repository and image.tag (kured's image is never carried)",
    )
    .option(
      '--strict',
      "also exit 1 when a value is left out by design (kured's image, a flag the chart sets)",
    )
    .action(
      async (
        file: string,
        flags: { kuredRelease?: string; kuredNamespace: string; strict?: boolean; image?: string },
      ) => {
        let image: MigrateOptions['image'];
        try {
          image = flags.image === undefined ? undefined : parseImage(flags.image);
        } catch (err) {
          deps.err(errorText(err));
          deps.exit(EXIT_USAGE);
          return;
        }
        const lock =
          flags.kuredRelease === undefined
            ? undefined
            : { dsName: kuredDaemonSetName(flags.kuredRelease), dsNamespace: flags.kuredNamespace };
        deps.exit(
          await runMigrateValues(
            { file, lock, strict: flags.strict === true, ...(image === undefined ? {} : { image }) },
            { out: deps.out, err: deps.err, stdin: deps.stdin },
          ),
        );
      },
    );
}
