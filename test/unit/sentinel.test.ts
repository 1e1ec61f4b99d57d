import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandSentinel } from '../../src/sentinel/command.js';
import { FileSentinel } from '../../src/sentinel/file.js';
import { createSentinel } from '../../src/sentinel/index.js';
import type { SpawnFn } from '../../src/reboot/host-exec.js';

/** A spawn that records its argv and ends the way the test says. */
function fakeSpawn(end: { code?: number; error?: NodeJS.ErrnoException }): {
  spawn: SpawnFn;
  calls: string[][];
} {
  const calls: string[][] = [];
  const spawn: SpawnFn = (command, args) => {
    calls.push([command, ...args]);
    const child = new EventEmitter() as unknown as ChildProcess;
    Object.assign(child, { stderr: new EventEmitter(), kill: () => true });
    setImmediate(() => {
      if (end.error) child.emit('error', end.error);
      else child.emit('close', end.code ?? 0, null);
    });
    return child;
  };
  return { spawn, calls };
}

describe('CommandSentinel', () => {
  it.each([
    ['exit 0 means a reboot is required', { code: 0 }, { required: true }],
    ['exit 1 means no reboot is required', { code: 1 }, { required: false }],
  ])('%s', async (_name, end, want) => {
    const { spawn } = fakeSpawn(end);
    const sentinel = new CommandSentinel({ argv: ['needs-restarting', '-r'], mode: 'direct', spawn });
    expect(await sentinel.rebootRequired()).toEqual(want);
  });

  it.each([
    ['another exit code is an error, never a reboot', { code: 2 }, /exit 2/],
    [
      'a missing command is an error, never a reboot',
      { error: Object.assign(new Error('spawn needs-restarting ENOENT'), { code: 'ENOENT' }) },
      /ENOENT/,
    ],
  ])('%s', async (_name, end, pattern) => {
    const { spawn } = fakeSpawn(end);
    const sentinel = new CommandSentinel({ argv: ['needs-restarting', '-r'], mode: 'direct', spawn });
    const verdict = await sentinel.rebootRequired();
    expect(verdict.required).toBe(false);
    expect(verdict.error).toMatch(pattern);
  });

  it('runs the command inside PID 1 mount namespace with nsenter', async () => {
    const { spawn, calls } = fakeSpawn({ code: 1 });
    await new CommandSentinel({ argv: ['needs-restarting', '-r'], mode: 'nsenter', spawn }).rebootRequired();
    expect(calls).toEqual([['/usr/bin/nsenter', '-m/proc/1/ns/mnt', '--', 'needs-restarting', '-r']]);
  });

  it.each([
    ['a real exit 0 is required', ['sh', '-c', 'exit 0'], true, undefined],
    ['a real exit 1 is not required', ['sh', '-c', 'exit 1'], false, undefined],
    [
      'a real exit 3 is an error with stderr',
      ['sh', '-c', 'echo broken >&2; exit 3'],
      false,
      /exit 3: broken/,
    ],
    ['a real missing binary is an error', ['/nonexistent/needs-restarting'], false, /ENOENT/],
  ])('%s', async (_name, argv, required, error) => {
    const verdict = await new CommandSentinel({ argv, mode: 'direct' }).rebootRequired();
    expect(verdict.required).toBe(required);
    if (error) expect(verdict.error).toMatch(error);
    else expect(verdict.error).toBeUndefined();
  });

  it('a command that hangs is killed after its timeout and reported as an error', async () => {
    const verdict = await new CommandSentinel({
      argv: ['sleep', '10'],
      mode: 'direct',
      timeoutMs: 100,
    }).rebootRequired();
    expect(verdict).toEqual({ required: false, error: expect.stringMatching(/timed out/) as unknown });
  });
});

describe('FileSentinel', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sentinel-'));
    await writeFile(join(dir, 'reboot-required'), '');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('says required while the file exists', async () => {
    expect(await new FileSentinel(join(dir, 'reboot-required')).rebootRequired()).toEqual({ required: true });
  });

  it('says not required when the file is absent', async () => {
    expect(await new FileSentinel(join(dir, 'absent')).rebootRequired()).toEqual({ required: false });
  });

  it('the registry picks the command sentinel when a command is configured', async () => {
    const sentinel = createSentinel({
      rebootSentinel: join(dir, 'reboot-required'),
      rebootSentinelCommand: ['sh', '-c', 'exit 1'],
      hostExec: 'direct',
    });
    expect(await sentinel.rebootRequired()).toEqual({ required: false });
  });
});
