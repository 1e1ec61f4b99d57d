// The CLI: its parsing tables run in this process through the very program `node dist/cli.js` runs
// (src/cli/main.ts, given a host of the test's instead of the process); the rest, and one row of each
// kind, as a real process of the bundle (built before the tests, by npm test or jest's global setup).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dump, load } from 'js-yaml';
import { main, type Host } from '../../../src/cli/main.js';
import { FLAGS, shownDefault } from '../../../src/config/flags.js';
import { startFakeApiServer } from '../../../src/sim/fake-api-server.js';
import { writeKubeconfig } from '../../fakes/kubeconfig-file.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The test's environment without any KURED_* variable, in UTC, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('KURED_')));
  return { ...clean, TZ: 'UTC', ...env };
}

/** Runs the CLI with only the given KURED_* variables (none leak in from the test's environment). */
function cli(args: string[], env: Record<string, string> = {}): Run {
  const result = spawnSync(process.execPath, ['dist/cli.js', ...args], {
    cwd: ROOT,
    env: childEnv(env),
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The program of `node dist/cli.js ...args` in this process: main() of src/cli/main.ts, with the
 * arguments, the environment (as cli() gives the child), the output and standard input given here.
 * What a process adds around it, src/cli/cli.ts, is only process.exit(status).
 */
async function cliInProcess(args: string[], env: Record<string, string> = {}, input = ''): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const host: Host = {
    argv: args,
    env: childEnv(env),
    stdout: { write: (text) => (stdout += text), isTTY: false },
    stderr: { write: (text) => (stderr += text) },
    stdin: [Buffer.from(input)],
    onSignals: () => undefined,
    exit: (code) => {
      throw new Error(`the program ended the process with ${code}`);
    },
  };
  const status = await main('kured-ts', host);
  return { status, stdout, stderr };
}

/** A table row: its name, the arguments and environment to run with, then what to expect. */
type Case = readonly [name: string, args: string[], env: Record<string, string>, ...expected: unknown[]];

/** Runs `kured-ts ...prefix ...args` in this process for every case; results by index. */
async function runAll(cases: readonly Case[], prefix: string[] = []): Promise<Run[]> {
  const results: Run[] = [];
  for (const c of cases) results.push(await cliInProcess([...prefix, ...c[1]], c[2]));
  return results;
}

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

describe('kured-ts --help', () => {
  let help: Run;
  beforeAll(() => {
    help = cli(['--help']);
  });

  it('exits 0', () => {
    expect(help.status).toBe(0);
  });

  it.each(FLAGS.map((f) => [f.name, shownDefault(f), f.env]))(
    'lists --%s with its default %s and %s',
    (name, def, env) => {
      const flat = help.stdout.replace(/\s+/g, ' ');
      const line = new RegExp(`--${name} \\S+ [^\\n]*?\\(default: ${escape(def)}; env ${env}`);
      expect(flat).toMatch(line);
    },
  );

  it('lists the subcommands', () => {
    for (const command of ['agent', 'window', 'status', 'pause', 'resume', 'check', 'simulate']) {
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, ' ');
}

describe('kured-ts --version', () => {
  it('prints the package version', () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
    const run = cli(['--version']);
    expect([run.status, run.stdout.trim()]).toEqual([0, pkg.version]);
  });
});

describe('kured-ts window', () => {
  // 2026-11-23 is a Monday.
  const cases: [string, string[], Record<string, string>, string, string][] = [
    [
      'mon-fri 9am-5pm on a Monday noon',
      [
        '--start-time',
        '9am',
        '--end-time',
        '5pm',
        '--reboot-days',
        'mon-fri',
        '--at',
        '2026-11-23T12:00:00Z',
      ],
      {},
      'inside',
      'closes: 2026-11-23 17:00:01 UTC',
    ],
    [
      'mon-fri 9am-5pm on a Saturday',
      [
        '--start-time',
        '9am',
        '--end-time',
        '5pm',
        '--reboot-days',
        'mon-fri',
        '--at',
        '2026-11-21T12:00:00Z',
      ],
      {},
      'outside',
      'opens: 2026-11-23 09:00:00 UTC (2026-11-23T09:00:00.000Z), in 1d21h',
    ],
    [
      'a window wrapping midnight after midnight',
      ['--start-time', '22:00', '--end-time', '06:00', '--at', '2026-11-24T02:00:00Z'],
      {},
      'inside',
      'closes: 2026-11-24 06:00:01 UTC',
    ],
    [
      'a window wrapping midnight at noon',
      ['--start-time', '22:00', '--end-time', '06:00', '--at', '2026-11-24T12:00:00Z'],
      {},
      'outside',
      'opens: 2026-11-24 22:00:00 UTC',
    ],
    [
      'Los Angeles 9am-5pm at 08:00 PST',
      [
        '--time-zone',
        'America/Los_Angeles',
        '--start-time',
        '9am',
        '--end-time',
        '5pm',
        '--at',
        '2026-11-23T16:00:00Z',
      ],
      {},
      'outside',
      'opens: 2026-11-23 09:00:00 America/Los_Angeles (2026-11-23T17:00:00.000Z)',
    ],
    [
      'Los Angeles across spring-forward',
      [
        '--time-zone',
        'America/Los_Angeles',
        '--start-time',
        '9am',
        '--end-time',
        '5pm',
        '--at',
        '2026-03-08T02:00:00Z',
      ],
      {},
      'outside',
      '(2026-03-08T16:00:00.000Z)',
    ],
    [
      'times kured rejects: 9:30AM to 5:00pm',
      ['--start-time', '9:30AM', '--end-time', '5:00pm', '--at', '2026-11-23T17:00:00Z'],
      {},
      'inside',
      'window: every day 09:30-17:00 UTC',
    ],
    [
      'days from the environment',
      ['--at', '2026-11-23T12:00:00Z'],
      { KURED_REBOOT_DAYS: 'sat-sun' },
      'outside',
      'window: sun,sat 00:00-23:59:59 UTC',
    ],
    [
      'a cron schedule',
      ['--reboot-schedule', '* 2 * * sat', '--at', '2026-11-28T02:30:00Z'],
      {},
      'inside',
      'closes: 2026-11-28 03:00:00 UTC',
    ],
  ];
  let runs: Run[] = [];
  beforeAll(async () => {
    runs = await runAll(cases, ['window']);
  }, 60_000);

  it.each(cases.map((c, i) => [...c, i] as const))('answers for %s', (...[, , , state, detail, i]) => {
    const run = runs[i]!;
    // 0 inside, 3 outside, as check
    expect(run.status).toBe(state === 'inside' ? 0 : 3);
    expect(lines(run.stdout)[0]).toBe(state);
    expect(run.stdout).toContain(detail);
    expect(lines(run.stdout)[1]).toMatch(/^window: /);
  });

  it('uses the current time without --at', () => {
    const run = cli(['window']);
    expect([run.status, lines(run.stdout)[0]]).toEqual([0, 'inside']);
  });
});

describe('bad input: exit status 2 and one line naming the flag', () => {
  const agent = ['--node-id', 'n1'];
  const cases: [string, string[], Record<string, string>, string][] = [
    ['an hour past 23', [...agent, '--end-time', '25:00'], {}, '--end-time'],
    ['24:00', [...agent, '--start-time', '24:00'], {}, '--start-time'],
    ['a one-digit minute', [...agent, '--start-time', '7:5'], {}, '--start-time'],
    ['a duration in days', [...agent, '--period', '1d'], {}, '--period'],
    ['a negative duration', [...agent, '--lock-ttl', '-1s'], {}, '--lock-ttl'],
    ['zero concurrency', [...agent, '--concurrency', '0'], {}, '--concurrency'],
    ['a port out of range', [...agent, '--metrics-port', '99999'], {}, '--metrics-port'],
    ['an unknown reboot method', [...agent, '--reboot-method', 'kexec'], {}, '--reboot-method'],
    ['an unknown log format', [...agent, '--log-format', 'xml'], {}, '--log-format'],
    ['an unknown time zone', [...agent, '--time-zone', 'Mars/Base'], {}, '--time-zone'],
    ['an unknown day', [...agent, '--reboot-days', 'mon,funday'], {}, '--reboot-days'],
    ['a label without =', [...agent, '--pre-reboot-node-labels', 'nolabel'], {}, '--pre-reboot-node-labels'],
    ['a bad pod selector', [...agent, '--blocking-pod-selector', 'bad key=1'], {}, '--blocking-pod-selector'],
    ['a bad regexp', [...agent, '--alert-filter-regexp', '(unclosed'], {}, '--alert-filter-regexp'],
    ['a bad cron expression', [...agent, '--reboot-schedule', '61 * * * *'], {}, '--reboot-schedule'],
    [
      'a malformed Slack hook',
      [...agent, '--slack-hook-url', 'https://hooks.slack.com/services/T/B'],
      {},
      '--slack-hook-url',
    ],
    ['an unsupported notify URL scheme', [...agent, '--notify-url', 'smtp://x'], {}, '--notify-url'],
    [
      'a Slack bot token as notify URL',
      [...agent, '--notify-url', 'slack://xoxb:123-abc@alerts'],
      {},
      '--notify-url',
    ],
    ['a bad notify URL from the environment', agent, { KURED_NOTIFY_URL: 'smtp://x' }, 'KURED_NOTIFY_URL'],
    ['an unterminated quote', [...agent, '--reboot-command', 'sh -c "oops'], {}, '--reboot-command'],
    ['a bad boolean', [...agent, '--force-reboot=maybe'], {}, '--force-reboot'],
    ['a bad URL', [...agent, '--prometheus-url', 'not a url'], {}, '--prometheus-url'],
    [
      'a FleetLock URL that is no URL',
      [...agent, '--fleetlock-url', 'fleetlock:8080'],
      {},
      '--fleetlock-url',
    ],
    [
      'a FleetLock URL of another scheme',
      [...agent, '--fleetlock-url', 'ftp://fleetlock'],
      {},
      '--fleetlock-url',
    ],
    [
      'a bad FleetLock URL from the environment',
      agent,
      { KURED_FLEETLOCK_URL: 'nope' },
      'KURED_FLEETLOCK_URL',
    ],
    ['an empty FleetLock group', [...agent, '--fleetlock-group', ' '], {}, '--fleetlock-group'],
    [
      'a bad enum of a new flag',
      [...agent, '--on-post-reboot-timeout', 'ignore'],
      {},
      '--on-post-reboot-timeout',
    ],
    ['a bad time from the environment', agent, { KURED_END_TIME: '25:00' }, 'KURED_END_TIME'],
    [
      'a bad selector from the environment',
      agent,
      { KURED_BLOCKING_POD_SELECTOR: 'a=b=c' },
      '--blocking-pod-selector',
    ],
    ['a missing node id', [], {}, '--node-id'],
    ['an unknown flag', [...agent, '--perod', '1h'], {}, '--perod'],
    ['a missing value', [...agent, '--period'], {}, '--period'],
    ['a bad --at for window', ['window', '--at', 'yesterday'], {}, '--at'],
    ['a bad time for window', ['window', '--start-time', '25:00'], {}, '--start-time'],
    ['an empty day list: a window that never opens', [...agent, '--reboot-days', ''], {}, '--reboot-days'],
    [
      'a start time equal to the end time: a window that never opens',
      [...agent, '--start-time', '9am', '--end-time', '9am'],
      {},
      '--end-time',
    ],
    ['the same for window', ['window', '--start-time', '9:00', '--end-time', '9:00'], {}, '--end-time'],
    ['a timeline that is not SVG or HTML', ['simulate', '--timeline', 'wave.png'], {}, '--timeline'],
    ['an unknown output format of status', ['status', '-o', 'xml'], {}, '-o/--output'],
    [
      'a flag of the agent given to agent',
      ['agent', '--node-id', 'n1', '--drain-grace-period', '-2'],
      {},
      '--drain-grace-period',
    ],
  ];

  let runs: Run[] = [];
  beforeAll(async () => {
    runs = await runAll(cases);
  }, 60_000);

  it.each(cases.map((c, i) => [...c, i] as const))('%s', (...[, , , named, i]) => {
    const run = runs[i]!;
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(named);
  });

  it('names the value too', async () => {
    expect((await cliInProcess(['--node-id', 'n1', '--end-time', '25:00'])).stderr).toBe(
      'error: invalid value "25:00" for --end-time: hour must be 0-23\n',
    );
  });

  it('rejects an unknown command', async () => {
    const run = await cliInProcess(['frobnicate']);
    expect([run.status, run.stderr]).toEqual([2, "error: unknown command 'frobnicate'\n"]);
  });

  it('is the same from the bundle as a process: exit status 2, nothing on stdout, the one line', () => {
    const run = cli(['--node-id', 'n1', '--end-time', '25:00']);
    expect([run.status, run.stdout, run.stderr]).toEqual([
      2,
      '',
      'error: invalid value "25:00" for --end-time: hour must be 0-23\n',
    ]);
    const command = cli(['simulate', '--nodes', '1e3']);
    expect([command.status, command.stdout, lines(command.stderr).length]).toEqual([2, '', 1]);
    expect(command.stderr).toMatch(/--nodes.*'1e3' is invalid\. expected an integer/);
  });
});

describe('the agent flags an operator command shares, parsed as the agent parses them', () => {
  it.each([
    ['status --lock-ttl', ['status', '--lock-ttl', 'soon'], {}, 'invalid value "soon" for --lock-ttl: '],
    [
      'status, KURED_LOCK_TTL',
      ['status'],
      { KURED_LOCK_TTL: '-1s' },
      'invalid value "-1s" for --lock-ttl (from KURED_LOCK_TTL): must not be negative',
    ],
    [
      'unlock --lock-annotation',
      ['unlock', '--stale', '--lock-annotation', 'not a key!'],
      {},
      'invalid value "not a key!" for --lock-annotation',
    ],
  ])(
    '%s: a bad value is a usage error naming the flag (and the variable)',
    async (_name, args, env, message) => {
      const run = await cliInProcess(args, { KUBECONFIG: '/nonexistent', ...env });
      expect(run.status).toBe(2);
      expect(run.stderr.split('\n')[0]).toContain(message);
    },
  );
});

describe('migrate-values', () => {
  const file = 'test/fixtures/kured-chart/chart-6.x-production.yaml';

  it('prints kured-ts values that parse as YAML, the notes as comments on top, and exits 1 naming what was lost', () => {
    const run = cli(['migrate-values', file, '--kured-release', 'kured', '--kured-namespace', 'ops']);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^# kured-ts chart values, from the kured chart values in /);
    expect(run.stdout).toMatch(
      /^# Lost: .*\(1\):\n# {3}extraArgs.debug: --debug: kured-ts has no such flag$/m,
    );
    expect(run.stdout).toMatch(/^# {3}podSecurityPolicy.create: /m);
    const values = load(run.stdout) as { configuration: Record<string, unknown> };
    expect(values.configuration).toMatchObject({ startTime: '22:00', dsName: 'kured', dsNamespace: 'ops' });
    expect(lines(run.stderr)).toEqual([
      expect.stringMatching(
        /^migrated \d+ key\(s\) from .*: 1 lost, \d+ left out by design, \d+ carried with a change/,
      ),
      'not migrated: extraArgs.debug (see the notes)',
    ]);
  });

  it.each([
    ['exits 0 when all is carried or replaced by design', [], 0, ''],
    [
      "exits 1 with --strict when something is left out by design (here kured's image)",
      ['--strict'],
      1,
      'with --strict, not migrated: image.repository (see the notes)',
    ],
  ])('%s', async (_name, flags, status, last) => {
    const run = await cliInProcess([
      'migrate-values',
      'test/fixtures/kured-chart/chart-5.x-defaults.yaml',
      ...flags,
    ]);
    expect(run.status).toBe(status);
    expect(lines(run.stderr).slice(1).join('')).toBe(last);
  });

  it.each([
    ['tolerations: x\n', "at '/tolerations': must be array"],
    ['maxUnavailable: abc\n', "at '/maxUnavailable': must be integer"],
    ['hostNetwork: "yes"\n', "at '/hostNetwork': must be boolean"],
  ])(
    'checks its output against the chart as helm install would: %j exits 1 naming the place',
    async (input, error) => {
      const run = await cliInProcess(['migrate-values', '-'], {}, input);
      expect(run.status).toBe(1);
      expect(lines(run.stderr)[1]).toBe(
        "the output does not install: the kured-ts chart's schema refuses it (1):",
      );
      expect(lines(run.stderr)[2]).toContain(error);
    },
  );

  it("ends: --image writes kured-ts's image, and a second run over its own output changes nothing", async () => {
    const first = await cliInProcess([
      'migrate-values',
      'test/fixtures/kured-chart/chart-5.x-defaults.yaml',
      '--image',
      'registry.example.com:5000/ops/kured-ts:0.1.0',
      '--strict',
    ]);
    expect(first.status).toBe(0);
    const values = load(first.stdout) as { image: { repository: string; tag: string } };
    expect(values.image).toMatchObject({
      repository: 'registry.example.com:5000/ops/kured-ts',
      tag: '0.1.0',
    });
    expect(first.stdout).toMatch(
      /^# {3}image: kured-ts's image, from --image registry.example.com:5000\/ops\/kured-ts:0.1.0$/m,
    );
    // the user edits the output and runs the command again on it: kept as it is
    const header = first.stdout.split('\n').filter((l) => l.startsWith('#'));
    const changed = load(first.stdout) as { configuration: Record<string, unknown> };
    changed.configuration.startTime = '21:00';
    const edited = `${header.join('\n')}\n${dump(changed)}`;
    const second = await cliInProcess(['migrate-values', '-'], {}, edited);
    expect(second.status).toBe(0);
    expect(load(second.stdout)).toEqual(load(edited));
    expect(lines(second.stderr)).toEqual([
      "- holds kured-ts chart values already (this command's output): printed as they are",
    ]);
  });

  it.each(['', 'repo:', 'repo@sha256:abc'])('exits 2 naming --image for %j', async (image) => {
    const run = await cliInProcess([
      'migrate-values',
      'test/fixtures/kured-chart/chart-5.x-defaults.yaml',
      '--image',
      image,
    ]);
    expect(run.status).toBe(2);
    expect(lines(run.stderr)).toEqual([expect.stringContaining('for --image')]);
  });

  it('refuses a YAML list on stdin: exit 2, one line', async () => {
    const run = await cliInProcess(['migrate-values', '-'], {}, '- a\n- b\n');
    expect([run.status, run.stderr]).toEqual([2, 'cannot read kured values from -: not a map of values\n']);
  });

  it('reads the values from stdin with -', () => {
    const run = spawnSync(process.execPath, ['dist/cli.js', 'migrate-values', '-'], {
      cwd: ROOT,
      env: childEnv({}),
      input: 'configuration:\n  concurrency: 4\n',
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(load(run.stdout)).toEqual({ configuration: { concurrency: 4 } });
  });

  it.each([
    [
      'a file that does not exist',
      ['migrate-values', 'no/such/file.yaml'],
      /^cannot read kured values from no\/such\/file.yaml: .*ENOENT/,
    ],
    [
      'a file that is not YAML',
      ['migrate-values', 'README.md'],
      /^cannot read kured values from README.md: /,
    ],
    [
      'a file that is not a map of values',
      ['migrate-values', 'LICENSE'],
      /^cannot read kured values from LICENSE: /,
    ],
  ])('exits 2 with one line for %s', async (_name, args, message) => {
    const run = await cliInProcess(args);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(message);
  });
});

describe('simulate --timeline', () => {
  it('exits 1 with one line when the file cannot be written, after the report', () => {
    const run = cli(['simulate', '--nodes', '2', '--no-progress', '--timeline', '/nonexistent/dir/wave.svg']);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/invariant violations\s+0/);
    expect(run.stderr).toMatch(/^cannot write the timeline to \/nonexistent\/dir\/wave.svg: .*ENOENT.*\n$/);
  });
});

describe('the operator commands', () => {
  it.each(['status', 'history', 'approve', 'pause', 'resume', 'check', 'simulate', 'migrate-values'])(
    '%s is wired in (its own help, exit 0)',
    async (command) => {
      const run = await cliInProcess([command, '--help']);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: kured-ts ${command} `));
      expect(run.stdout).not.toContain('not implemented yet');
    },
  );

  it('report their usage errors like the agent: exit 2, one line', async () => {
    const run = await cliInProcess(['check']);
    expect([run.status, lines(run.stderr).length]).toEqual([2, 1]);
    expect(run.stderr).toContain('--node');
  });

  it.each([
    [['simulate', '--group-concurrency', '1'], /--group-concurrency needs --zones/],
    [['simulate', '--unhealthy-nodes', '2'], /--unhealthy-nodes.*expected N,DURATION/],
    [['simulate', '--max-unhealthy-nodes', '150%'], /--max-unhealthy-nodes.*percentage must be 0-100/],
    [['simulate', '--blocking-churn', '0,20m'], /--blocking-churn.*expected RATE,DURATION/],
    [['simulate', '--taint-timing', 'never'], /--taint-timing.*required, unblocked/],
    // integers and durations as the agent's flags read them (config/values.ts)
    [['simulate', '--nodes', '1e3'], /--nodes.*'1e3' is invalid\. expected an integer/],
    [['simulate', '--concurrency', '0'], /--concurrency.*must be at least 1/],
    [['simulate', '--seed', '0x10'], /--seed.*expected an integer/],
    [['simulate', '--boot-time', '-1m'], /--boot-time.*must not be negative/],
  ])('simulate refuses %j with exit 2 and one line', async (args, message) => {
    const run = await cliInProcess(args);
    expect([run.status, lines(run.stderr).length]).toEqual([2, 1]);
    expect(run.stderr).toMatch(message);
  });

  it('approve refuses to run with neither node names nor --all, or with both', async () => {
    for (const args of [['approve'], ['approve', 'n1', '--all']]) {
      const run = await cliInProcess(args);
      expect([run.status, lines(run.stderr).length]).toEqual([2, 1]);
      expect(run.stderr).toMatch(/^error: .*--all/);
    }
  });
});

describe('the agent', () => {
  it('exits 1 saying in one line that no cluster is configured', () => {
    const run = cli(['--node-id', 'n1'], { HOME: '/nonexistent-home', KUBECONFIG: '' });
    expect(run.status).toBe(1);
    expect(lines(run.stderr).filter((l) => l.includes('error'))).toEqual([
      expect.stringContaining(
        'cannot start error="no kubeconfig: KUBECONFIG unset, ~/.kube/config missing, not in a cluster; set --kubeconfig or KUBECONFIG"',
      ),
    ]);
  });

  it('says in one line that it cannot load the kubeconfig, before any configuration line', () => {
    const run = cli(
      [
        '--log-format',
        'json',
        '--notify-url',
        'https://hooks.example.com/SECRET',
        '--kubeconfig',
        '/nonexistent',
      ],
      { KURED_NODE_ID: 'n1' },
    );
    expect(run.status).toBe(1);
    const logged = lines(run.stderr)
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { message: string });
    expect(logged.map((l) => l.message)).toEqual(['cannot load the Kubernetes client configuration']);
    expect(run.stderr).not.toContain('SECRET');
  });
});

describe('the agent as a process', () => {
  it('runs against an API server and exits 0 on SIGTERM', async () => {
    const server = await startFakeApiServer();
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-cli-'));
    try {
      server.create('daemonsets', {
        metadata: { name: 'kured', namespace: 'kube-system' },
        spec: {
          selector: { matchLabels: { app: 'kured' } },
          template: { metadata: { labels: { app: 'kured' } } },
        },
      });
      server.create('nodes', {
        metadata: { name: 'n1' },
        spec: {},
        status: { conditions: [{ type: 'Ready', status: 'True' }] },
      });
      const kubeconfig = writeKubeconfig(join(dir, 'config'), server.url);
      const args = [
        '--node-id',
        'n1',
        '--kubeconfig',
        kubeconfig,
        '--metrics-port',
        '0',
        '--host-exec',
        'direct',
      ];
      const child = spawn(
        process.execPath,
        ['dist/cli.js', ...args, '--reboot-sentinel', join(dir, 'absent')],
        {
          cwd: ROOT,
          env: { ...process.env, TZ: 'UTC' },
        },
      );
      let stderr = '';
      const started = new Promise<void>((resolve) => {
        child.stderr.setEncoding('utf8').on('data', (d: string) => {
          stderr += d;
          if (stderr.includes('agent started')) resolve();
        });
      });
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      await Promise.race([started, exited]);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toContain('agent stopped');
    } finally {
      await server.close();
      rmSync(dir, { recursive: true });
    }
  }, 30_000);
});

/** Runs `file ...args` without blocking (the fake API server answers from this process). */
function run(file: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: ROOT, env: childEnv(env), timeout: 20_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => {
      resolve({ status, stdout, stderr });
    });
  });
}

describe('kubectl kured-ts: the operator commands as a kubectl plugin', () => {
  let kubectl: string;
  let dir: string;
  /** PATH with the bins `npm ci` installs (node_modules/.bin) first, as after `npm install -g`. */
  let env: Record<string, string>;

  beforeAll(() => {
    kubectl = execFileSync(process.execPath, ['scripts/ensure-helm.mjs', 'kubectl'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    dir = mkdtempSync(join(tmpdir(), 'kured-ts-plugin-'));
    env = { PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`, HOME: dir };
  }, 120_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('is found by kubectl under the name kubectl-kured_ts', async () => {
    const list = await run(kubectl, ['plugin', 'list', '--name-only'], env);
    expect(list.stdout.split('\n')).toContain('kubectl-kured_ts');
  });

  it('shows the help, named kubectl kured-ts and without the agent, when given no command', async () => {
    const help = await run(kubectl, ['kured-ts'], env);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl kured-ts \[options\] \[command\]/);
    expect(help.stdout).toMatch(/^ {2}status /m);
    expect(help.stdout).not.toMatch(/^ {2}agent /m);
  });

  it('refuses to run the agent, exit 2 and one line', async () => {
    const agent = await run(kubectl, ['kured-ts', 'agent'], env);
    expect([agent.status, agent.stderr]).toEqual([
      2,
      'error: the agent runs in the kured-ts DaemonSet, not as a kubectl plugin (run it as kured-ts agent)\n',
    ]);
  });

  it('runs status against the cluster of KUBECONFIG, with --context and -o yaml', async () => {
    const one = await startFakeApiServer();
    const two = await startFakeApiServer();
    try {
      for (const [server, nodeName] of [
        [one, 'on-one'],
        [two, 'on-two'],
      ] as const) {
        server.create('daemonsets', {
          metadata: { name: 'kured', namespace: 'kube-system' },
          spec: { selector: { matchLabels: { app: 'k' } }, template: { metadata: { labels: { app: 'k' } } } },
        });
        server.create('nodes', { metadata: { name: nodeName }, spec: {} });
      }
      const kubeconfig = join(dir, 'config');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          `- {name: one, cluster: {server: "${one.url}", insecure-skip-tls-verify: true}}`,
          `- {name: two, cluster: {server: "${two.url}", insecure-skip-tls-verify: true}}`,
          'users: [{name: u, user: {}}]',
          'contexts: [{name: one, context: {cluster: one, user: u}}, {name: two, context: {cluster: two, user: u}}]',
          'current-context: one',
        ].join('\n'),
      );
      const withConfig = { ...env, KUBECONFIG: kubeconfig };
      const table = await run(kubectl, ['kured-ts', 'status'], withConfig);
      expect([table.status, table.stderr]).toEqual([0, '']);
      expect(lines(table.stdout).map((l) => l.split(' ')[0])).toEqual(['NODE', 'on-one']);
      const yaml = await run(kubectl, ['kured-ts', 'status', '--context', 'two', '-o', 'yaml'], withConfig);
      expect(yaml.status).toBe(0);
      expect(yaml.stdout).toMatch(/^daemonSet: kube-system\/kured\n/);
      expect(yaml.stdout).toMatch(/^ {2}- node: on-two$/m);
    } finally {
      await one.close();
      await two.close();
    }
  }, 30_000);

  it('ships a krew manifest whose archive, installed as krew does, runs as the plugin', async () => {
    execFileSync(process.execPath, ['scripts/krew-package.mjs', 'https://example.test/v1'], { cwd: ROOT });
    const manifest = load(readFileSync(join(ROOT, 'dist/krew/kured-ts.yaml'), 'utf8')) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: { version: string; platforms: { uri: string; sha256: string; bin: string }[] };
    };
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect([manifest.apiVersion, manifest.kind, manifest.metadata.name, manifest.spec.version]).toEqual([
      'krew.googlecontainertools.github.com/v1alpha2',
      'Plugin',
      'kured-ts',
      `v${version}`,
    ]);
    const [platform] = manifest.spec.platforms;
    const archive = join(ROOT, 'dist/krew', `kured-ts-kubectl-${version}.tar.gz`);
    expect(platform?.uri).toBe(`https://example.test/v1/kured-ts-kubectl-${version}.tar.gz`);
    expect(platform?.sha256).toBe(createHash('sha256').update(readFileSync(archive)).digest('hex'));
    // krew unpacks the archive into its store and links `bin` into ~/.krew/bin.
    const store = join(dir, 'store');
    const bin = join(dir, 'krew-bin');
    mkdirSync(store);
    mkdirSync(bin);
    execFileSync('tar', ['-xzf', archive, '-C', store]);
    symlinkSync(join(store, platform?.bin ?? ''), join(bin, 'kubectl-kured_ts'));
    const path = `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`;
    const help = await run(kubectl, ['kured-ts', '--help'], { PATH: path, HOME: dir });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl kured-ts /);
  });

  it('says in one line that no cluster is configured, exit 1', async () => {
    const none = await run(kubectl, ['kured-ts', 'status'], env);
    expect([none.status, none.stderr]).toEqual([
      1,
      'no kubeconfig: KUBECONFIG unset, ~/.kube/config missing, not in a cluster; set --kubeconfig or KUBECONFIG\n',
    ]);
  });
});
