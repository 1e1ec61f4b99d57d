// The entry point: the only place that reads process.env and decides the process's exit status.
import { createLogger } from './log/logger.js';
import { runCli, type CliIo } from './program.js';
import packageJson from '../package.json' with { type: 'json' };

const io: CliIo = {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  now: () => new Date(),
  version: packageJson.version,
  createLogger: (format) => createLogger(format),
};

const code = await runCli(process.argv.slice(2), io);
// Let buffered output reach the pipes before leaving.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
