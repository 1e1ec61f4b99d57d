// The entry point of `kured-ts` (dist/cli.js): the agent and the operator commands. It alone, with
// the kubectl plugin's entry, decides the process's exit status.
import { main } from './main.js';

const code = await main('kured-ts');
// Let buffered output reach the pipes before leaving.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
