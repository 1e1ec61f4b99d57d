// runCommand: the one way an operator command runs (usage → connection → DaemonSet → command → exit).
import { describe, expect, it } from '@jest/globals';
import { UsageError } from '../../src/config/config.js';
import {
  CommandUsageError,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  runCommand,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
} from '../../src/cli/shared.js';
import type { Kube } from '../../src/kube/kube.js';
import { KubeApiError } from '../../src/kube/http.js';

/** A command's world: what it printed, the exit status, how often it connected. */
function world(): { deps: CommandDeps; errs: string[]; exits: number[]; connects: () => number } {
  const errs: string[] = [];
  const exits: number[] = [];
  let connects = 0;
  const kube = {
    // discovery lists the chart's DaemonSets: none here, so the named (default) one is used
    listDaemonSets: () => Promise.resolve([]),
  } as unknown as Kube;
  const deps: CommandDeps = {
    env: {},
    out: () => undefined,
    err: (line) => errs.push(line),
    exit: (code) => exits.push(code),
    connect: () => {
      connects++;
      return kube;
    },
  };
  return { deps, errs, exits, connects: () => connects };
}

const TARGET = { kubeconfig: '/k', context: '' };
const CLUSTER = { ...TARGET, dsNamespace: 'kube-system', dsName: 'kured' };

describe('runCommand', () => {
  it.each([
    ['a bad flag value', new UsageError('--reason', '', 'must not be empty')],
    ['flags that exclude each other', new CommandUsageError('error: give either node names or --all')],
  ])('makes %s one line and exit 2, and connects to nothing', async (_name, error) => {
    const w = world();
    let ran = false;
    await runCommand(w.deps, {
      what: 'do it',
      options: () => {
        throw error;
      },
      target: () => TARGET,
      run: () => {
        ran = true;
        return Promise.resolve(EXIT_OK);
      },
    });
    expect({ errs: w.errs, exits: w.exits, connects: w.connects(), ran }).toEqual({
      errs: [error.message],
      exits: [EXIT_USAGE],
      connects: 0,
      ran: false,
    });
  });

  it('makes an API error the command lets through one line naming what it did, exit 1', async () => {
    const w = world();
    await runCommand(w.deps, {
      what: 'pause the fleet',
      options: () => ({}),
      target: () => TARGET,
      run: () => Promise.reject(new KubeApiError(403, '{"message":"forbidden"}', 'PATCH /x')),
    });
    expect(w.exits).toEqual([EXIT_FAILURE]);
    expect(w.errs).toHaveLength(1);
    expect(w.errs[0]).toMatch(/^not allowed to pause the fleet: /);
  });

  it("ends with the command's own status, given the DaemonSet it addresses", async () => {
    const w = world();
    const seen: DaemonSetRef[] = [];
    await runCommand(w.deps, {
      what: 'read',
      options: () => CLUSTER,
      cluster: (options) => options,
      run: (_options, _io: CommandIo, ref) => {
        seen.push(ref);
        return Promise.resolve(3);
      },
    });
    expect({ exits: w.exits, errs: w.errs, seen }).toEqual({
      exits: [3],
      errs: [],
      seen: [{ dsNamespace: 'kube-system', dsName: 'kured' }],
    });
  });
});
