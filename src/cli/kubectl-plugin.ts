// The entry point of the kubectl plugin (dist/kubectl-kured_ts.js, installed as the bin
// `kubectl-kured_ts`, so that `kubectl kured-ts status` works): the operator commands only; the agent
// runs in the DaemonSet.
import { main } from './main.js';

const code = await main('kubectl-plugin');
// Let buffered output reach the pipes before leaving.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
