// The commander program in-process: exit codes, the agent hand-off, pluggable commands.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { Command } from 'commander';
import type { Config } from '../../src/config/config.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { runCli, type CliIo, type ProgramOptions } from '../../src/cli/program.js';
import { describeWindow, parseInstant } from '../../src/cli/window.js';
import { parseWindowConfig } from '../../src/config/parse.js';

class FakeIo implements CliIo {
  out = '';
  err = '';
  readonly log = new MemoryLogger();
  version = '9.9.9';
  constructor(readonly env: Record<string, string> = {}) {}
  stdout(text: string): void {
    this.out += text;
  }
  stderr(text: string): void {
    this.err += text;
  }
  now(): Date {
    return new Date('2026-11-23T12:00:00Z');
  }
  createLogger(): MemoryLogger {
    return this.log;
  }
}

/** An agent that says it could not start (exit 1). */
const failingAgent = (): Promise<number> => Promise.resolve(1);

async function run(
  argv: string[],
  io = new FakeIo(),
  options: Partial<ProgramOptions> = {},
): Promise<[number, FakeIo]> {
  return [await runCli(argv, io, { runAgent: failingAgent, commands: {}, ...options }), io];
}

describe('the program', () => {
  it('hands a valid configuration to the agent and returns its exit status', async () => {
    let seen: Config | undefined;
    const runAgent = (config: Config): Promise<number> => {
      seen = config;
      return Promise.resolve(0);
    };
    const [code] = await run(['--period', '10m'], new FakeIo({ KURED_NODE_ID: 'n7', KURED_PERIOD: '1m' }), {
      runAgent,
    });
    expect(code).toBe(0);
    expect(seen).toMatchObject({ nodeId: 'n7', periodMs: 600_000 });
  });

  it('runs the same agent through the explicit agent command', async () => {
    let calls = 0;
    const runAgent = (): Promise<number> => Promise.resolve(++calls && 3);
    const [code] = await run(['agent', '--node-id', 'n1'], new FakeIo(), { runAgent });
    expect([code, calls]).toEqual([3, 1]);
  });

  it('never starts the agent on bad input', async () => {
    let calls = 0;
    const runAgent = (): Promise<number> => Promise.resolve(++calls);
    const [code, io] = await run(['--node-id', 'n1', '--concurrency', 'two'], new FakeIo(), { runAgent });
    expect([code, calls, io.err]).toEqual([
      2,
      0,
      'error: invalid value "two" for --concurrency: expected an integer\n',
    ]);
    expect(io.log.entries).toEqual([]);
  });

  it.each([
    ['a rules file that does not exist', null, /cannot read the file/],
    [
      'a rule with a mode it does not know',
      '- namespace: rook-ceph\n  drain: skp\n',
      /entry 1: "drain" must be one of evict, skip, wait-completed/,
    ],
  ])(
    'never starts the agent with a bad --drain-rules file (%s): one line naming the file, exit 2',
    async (_what, text, reason) => {
      const dir = mkdtempSync(join(tmpdir(), 'drain-rules-'));
      const file = join(dir, 'rules.yaml');
      if (text !== null) writeFileSync(file, text);
      let calls = 0;
      const runAgent = (): Promise<number> => Promise.resolve(++calls);
      const [code, io] = await run(['--node-id', 'n1', '--drain-rules', file], new FakeIo(), { runAgent });
      rmSync(dir, { recursive: true, force: true });
      expect([code, calls]).toEqual([2, 0]);
      expect(io.err).toMatch(new RegExp(`^error: invalid value "${file}" for --drain-rules: `));
      expect(io.err).toMatch(reason);
      expect(io.err.trim().split('\n')).toHaveLength(1);
    },
  );

  it('hands the rules of a good --drain-rules file (from KURED_DRAIN_RULES) to the agent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'drain-rules-'));
    const file = join(dir, 'rules.yaml');
    writeFileSync(file, '- namespace: rook-ceph\n  selector: app=osd\n  order: 10\n');
    let seen: Config | undefined;
    const runAgent = (config: Config): Promise<number> => {
      seen = config;
      return Promise.resolve(0);
    };
    const [code] = await run(['--node-id', 'n1'], new FakeIo({ KURED_DRAIN_RULES: file }), { runAgent });
    rmSync(dir, { recursive: true, force: true });
    expect(code).toBe(0);
    expect(seen?.drainRules.map((r) => [r.entry, r.namespace, r.order])).toEqual([[1, 'rook-ceph', 10]]);
  });

  it('logs deprecation warnings before the agent runs (the agent logs its configuration once connected)', async () => {
    const [code, io] = await run(['--node-id', 'n1', '--slack-username', 'bot']);
    expect(code).toBe(1);
    expect(io.err).toBe('');
    expect(io.log.entries.map((e) => [e.level, e.message])).toEqual([['warn', 'configuration warning']]);
    expect(io.log.entries[0]?.fields).toEqual({
      warning: '--slack-username is deprecated: ignored, as by kured with notify URLs',
    });
  });

  it('runs the commands it is given, and calls any other word a mistyped command (exit 2)', async () => {
    const status = (program: Command): void => {
      program.command('status').action(() => undefined);
    };
    const [without, io] = await run(['status']);
    const [withIt] = await run(['status'], new FakeIo(), { commands: { status } });
    expect([without, withIt]).toEqual([2, 0]);
    expect(io.err).toBe("error: unknown command 'status'\n");
  });

  it('prints help for a subcommand through `help <command>`', async () => {
    const [code, io] = await run(['help', 'window']);
    expect(code).toBe(0);
    expect(io.out).toMatch(/^Usage: kured-ts window/);
  });

  it('answers window with the injected clock when --at is absent', async () => {
    const [code, io] = await run(['window', '--reboot-days', 'sat']);
    expect(code).toBe(3); // outside, as check
    expect(io.out.split('\n').slice(0, 3)).toEqual([
      'outside',
      'window: sat 00:00-23:59:59 UTC',
      'opens: 2026-11-28 00:00:00 UTC (2026-11-28T00:00:00.000Z), in 4d12h',
    ]);
  });
});

describe('window helpers', () => {
  it.each([
    '2026-11-23T09:30:00Z',
    '2026-11-23T09:30Z',
    '2026-11-23T01:30:00-08:00',
    '2026-11-23T09:30:00.250+0000',
  ])('accept the instant %p', (text) => {
    expect(parseInstant(text).getTime()).toBe(Date.parse(text));
  });

  it.each(['2026-11-23', '2026-11-23T09:30:00', 'tomorrow', '2026-13-45T99:00:00Z'])(
    'refuse the ambiguous or invalid instant %p',
    (text) => {
      expect(() => parseInstant(text)).toThrow(/--at/);
    },
  );

  it('say when a closed window opens, in the window zone and in UTC', () => {
    const config = parseWindowConfig(
      { 'time-zone': ['America/Los_Angeles'], 'start-time': ['9am'], 'end-time': ['5pm'] },
      {},
    );
    expect(describeWindow(config, new Date('2026-11-23T16:59:30Z'))).toEqual([
      'outside',
      'window: every day 09:00-17:00 America/Los_Angeles',
      'opens: 2026-11-23 09:00:00 America/Los_Angeles (2026-11-23T17:00:00.000Z), in 30s',
    ]);
  });
});

describe('a first look at kured-ts', () => {
  it('lists the commands before the agent flags in the root help', async () => {
    const [code, io] = await run(['--help']);
    expect(code).toBe(0);
    const commands = io.out.indexOf('\nCommands:\n');
    const options = io.out.indexOf('\nOptions:\n');
    expect(commands).toBeGreaterThan(0);
    expect(options).toBeGreaterThan(commands);
    expect(io.out).toContain('--node-id');
  });

  it('points a bare kured-ts to --help, in the one line of its usage error', async () => {
    const [code, io] = await run([]);
    expect(code).toBe(2);
    expect(io.err.trim().split('\n')).toHaveLength(1);
    expect(io.err).toContain('`kured-ts --help` lists the commands');
  });
});
