// The operator commands as a user types them after `kured-ts`, without a process: the given
// register<Name> functions on a fresh commander program per run, with the test's CommandDeps.
import { Command } from 'commander';
import type { CommandDeps } from '../../src/cli/shared.js';

type Register = (program: Command, deps: CommandDeps) => unknown;

/** A runner of command lines; each resolves to the exit status the command gave (undefined: none). */
export function commandLine(
  registers: readonly Register[],
  deps: Omit<CommandDeps, 'exit'>,
): (args: readonly string[]) => Promise<number | undefined> {
  return async (args) => {
    let code: number | undefined;
    const program = new Command().exitOverride();
    for (const register of registers) {
      register(program, {
        ...deps,
        exit: (c) => {
          code = c;
        },
      });
    }
    await program.parseAsync([...args], { from: 'user' });
    return code;
  };
}
