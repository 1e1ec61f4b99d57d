// `kured-ts window`: is a maintenance window open at an instant, and when does it next open or close.
import { Option, type Command } from 'commander';
import { UsageError, type Config } from '../config/config.js';
import { FLAGS } from '../config/flags.js';
import { optionValues, parseWindowConfig } from '../config/parse.js';
import { shortDuration } from '../text/duration.js';
import { createWindow } from '../window/index.js';
import { HORIZON_MS } from '../window/scan.js';
import { ZoneClock } from '../window/zone.js';
import { addFlags, EXIT_HELD_BACK, EXIT_OK, type CliIo } from './shared.js';

/** Parses `--at`: an ISO-8601 instant with an explicit zone, so that it cannot be misread. */
export function parseInstant(text: string): Date {
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
  const at = new Date(text);
  if (!iso.test(text) || Number.isNaN(at.getTime())) {
    throw new UsageError('--at', text, 'expected an ISO-8601 instant with a zone, e.g. 2026-11-23T09:30:00Z');
  }
  return at;
}

/** The lines `kured-ts window` prints. Pure. */
export function describeWindow(windowConfig: Config['window'], at: Date): string[] {
  const window = createWindow(windowConfig);
  const { inside, change } = window.next(at);
  const verb = inside ? 'closes' : 'opens';
  const lines = [inside ? 'inside' : 'outside', `window: ${window.describe()}`];
  if (change === undefined) {
    lines.push(`${verb}: not within ${HORIZON_MS / 86_400_000} days`);
  } else {
    const local = new ZoneClock(windowConfig.timeZone).local(change).text;
    lines.push(
      `${verb}: ${local} ${windowConfig.timeZone} (${change.toISOString()}), in ${shortDuration(change.getTime() - at.getTime())}`,
    );
  }
  return lines;
}

/** Prints the window at the instant; 0 inside, EXIT_HELD_BACK (3) outside, as `check`. */
function windowAction(command: Command, io: CliIo): number {
  const windowFlags = FLAGS.filter((f) => f.window === true);
  const config = parseWindowConfig(optionValues(command.opts(), windowFlags), io.env);
  const atText = command.getOptionValue('at') as string | undefined;
  const at = atText === undefined ? io.now() : parseInstant(atText);
  const lines = describeWindow(config, at);
  io.stdout(lines.join('\n') + '\n');
  return lines[0] === 'inside' ? EXIT_OK : EXIT_HELD_BACK;
}

/** Adds `window` to the program. */
export function addWindowCommand(program: Command, io: CliIo, exit: (code: number) => void): void {
  const command = program
    .command('window')
    .description('is a maintenance window open now (or --at), and when does it next open or close')
    .addOption(new Option('--at <instant>', 'ISO-8601 instant to evaluate (default: now)'));
  addFlags(
    command,
    FLAGS.filter((f) => f.window === true),
  ).action((_opts, cmd: Command) => {
    exit(windowAction(cmd, io));
  });
}
