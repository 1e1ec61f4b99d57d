import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { CommandRebooter } from '../../src/reboot/command.js';
import { hostArgv, type SpawnFn } from '../../src/reboot/host-exec.js';
import { SignalRebooter } from '../../src/reboot/signal.js';
import { createRebooter } from '../../src/reboot/index.js';

function fakeSpawn(code: number): { spawn: SpawnFn; calls: string[][] } {
  const calls: string[][] = [];
  const spawn: SpawnFn = (command, args) => {
    calls.push([command, ...args]);
    const child = new EventEmitter() as unknown as ChildProcess;
    Object.assign(child, { stderr: new EventEmitter(), kill: () => true });
    setImmediate(() => child.emit('close', code, null));
    return child;
  };
  return { spawn, calls };
}

describe('host exec', () => {
  it.each([
    [
      'nsenter prefixes the command',
      'nsenter' as const,
      ['/usr/bin/nsenter', '-m/proc/1/ns/mnt', '--', '/bin/systemctl', 'reboot'],
    ],
    ['direct runs it as given', 'direct' as const, ['/bin/systemctl', 'reboot']],
  ])('%s', (_name, mode, want) => {
    expect(hostArgv(['/bin/systemctl', 'reboot'], mode)).toEqual(want);
  });
});

describe('CommandRebooter', () => {
  it('runs the reboot command through nsenter', async () => {
    const { spawn, calls } = fakeSpawn(0);
    await new CommandRebooter({ argv: ['/bin/systemctl', 'reboot'], mode: 'nsenter', spawn }).reboot();
    expect(calls).toEqual([['/usr/bin/nsenter', '-m/proc/1/ns/mnt', '--', '/bin/systemctl', 'reboot']]);
  });

  it('throws when the command exits non-zero', async () => {
    const { spawn } = fakeSpawn(5);
    await expect(
      new CommandRebooter({ argv: ['/bin/systemctl', 'reboot'], mode: 'direct', spawn }).reboot(),
    ).rejects.toThrow(/exit 5/);
  });

  it.each([
    ['a real command that succeeds resolves', ['sh', '-c', 'exit 0'], undefined],
    ['a real command that fails rejects', ['sh', '-c', 'exit 1'], /exit 1/],
    ['a missing binary rejects', ['/nonexistent/reboot'], /ENOENT/],
  ])('%s', async (_name, argv, error) => {
    const p = new CommandRebooter({ argv, mode: 'direct' }).reboot();
    if (error) await expect(p).rejects.toThrow(error);
    else await expect(p).resolves.toBeUndefined();
  });
});

describe('SignalRebooter', () => {
  it('sends the configured signal to PID 1', async () => {
    const sent: [number, number][] = [];
    await new SignalRebooter(39, (pid, sig) => sent.push([pid, sig])).reboot();
    expect(sent).toEqual([[1, 39]]);
  });

  it('rejects when the signal is refused', async () => {
    const refuse = (): void => {
      throw Object.assign(new Error('kill EPERM'), { code: 'EPERM' });
    };
    await expect(new SignalRebooter(39, refuse).reboot()).rejects.toThrow(/EPERM/);
  });

  it('the registry picks the signal rebooter for method signal', () => {
    const rebooter = createRebooter({
      rebootMethod: 'signal',
      rebootCommand: ['/bin/systemctl', 'reboot'],
      rebootSignal: 39,
      hostExec: 'nsenter',
    });
    expect(rebooter).toBeInstanceOf(SignalRebooter);
  });
});
