import { describe, expect, it } from '@jest/globals';
import { NOTIFY_EVENTS } from '../../src/notify/notifier.js';
import {
  DEFAULT_FAILURE_MESSAGES,
  DEFAULT_MESSAGE_DRAIN,
  DEFAULT_MESSAGE_REBOOT,
  DEFAULT_MESSAGE_UNCORDON,
  redactConfig,
  UsageError,
  type Config,
} from '../../src/config/config.js';
import { splitCommand } from '../../src/config/values.js';
import {
  defaultConfig,
  parseConfig,
  parseConfigWithWarnings,
  requireNodeId,
  type Env,
  type FlagValues,
} from '../../src/config/parse.js';

/** The UsageError parseConfig throws for these inputs (fails the test when it does not throw). */
function usageError(values: FlagValues, env: Env = {}): UsageError {
  try {
    parseConfig(values, env);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error('expected a UsageError');
}

describe('defaults', () => {
  it('are those of DESIGN §3 (kured where kured has the flag)', () => {
    const expected: Config = {
      nodeId: '',
      periodMs: 3_600_000,
      rebootSentinel: '/var/run/reboot-required',
      rebootSentinelCommand: [],
      rebootMethod: 'command',
      rebootCommand: ['/bin/systemctl', 'reboot'],
      rebootSignal: 39,
      rebootDelayMs: 0,
      drainDelayMs: 0,
      drainTimeoutMs: 0,
      drainGracePeriodSeconds: -1,
      drainPodSelector: [],
      drainRulesFile: '',
      drainRules: [],
      drainFallback: 'none',
      singleReplica: 'off',
      singleReplicaTimeoutMs: 600_000,
      holdAfterDrainAnnotations: [],
      holdTimeoutMs: 3_600_000,
      volumeDetachTimeoutMs: 600_000,
      volumeDetachTimeoutAction: 'fail',
      nodeChecks: [],
      skipWaitForDeleteTimeoutSeconds: 0,
      forceReboot: false,
      onDrainFailure: 'quarantine',
      quarantineCordon: false,
      quarantineRetryMs: 3_600_000,
      maxQuarantined: undefined,
      dsName: 'kured',
      dsNamespace: 'kube-system',
      lockAnnotation: 'weave.works/kured-node-lock',
      lockTtlMs: 0,
      lockReleaseDelayMs: 0,
      concurrency: { count: 1 },
      groupLabel: '',
      groupConcurrency: undefined,
      countUnavailable: true,
      controlPlaneLast: true,
      maxUnhealthyNodes: undefined,
      requireApproval: false,
      approvalTtlMs: 0,
      historyLimit: 10,
      taintTiming: 'required',
      lockQueue: 'fair',
      coordinator: true,
      fleetlockUrl: '',
      fleetlockGroup: 'default',
      preferNoScheduleTaint: '',
      blockingPodSelectors: [],
      prometheusUrl: '',
      alertmanagerUrl: '',
      silenceMatchers: [],
      silenceDurationMs: 900_000,
      silenceTailMs: 300_000,
      beforeRebootHook: '',
      afterRebootHook: '',
      hookNamespace: '',
      hookTimeoutMs: 600_000,
      alertFilterRegexp: undefined,
      alertFilterMatchOnly: false,
      alertFiringOnly: false,
      window: {
        days: [0, 1, 2, 3, 4, 5, 6],
        startSecond: 0,
        endSecond: 86399,
        timeZone: 'UTC',
        schedules: [],
        blackouts: [],
      },
      annotateNodes: false,
      preRebootNodeLabels: {},
      postRebootNodeLabels: {},
      notifyUrl: '',
      messageTemplateDrain: DEFAULT_MESSAGE_DRAIN,
      messageTemplateReboot: DEFAULT_MESSAGE_REBOOT,
      messageTemplateUncordon: DEFAULT_MESSAGE_UNCORDON,
      metricsHost: '',
      metricsPort: 8080,
      logFormat: 'text',
      readinessGates: [],
      postRebootWaitTaints: [],
      postRebootTimeoutMs: 1_800_000,
      onPostRebootTimeout: 'hold',
      waitForDaemonSetPods: false,
      rebootRetries: 3,
      maxRebootsPerNeed: 2,
      packageManagerWaitMs: 3_600_000,
      onUncordonedDuringDelay: 'abort',
      blockOnPdb: true,
      evictionRetryDelayMs: 5000,
      hostExec: 'nsenter',
      kubeconfig: '',
      proxy: { httpProxy: '', httpsProxy: '', noProxy: '' },
      blockingQueries: [],
      rebootDeadlineMs: 0,
      autoscalerProtection: true,
      settleTimeMs: 600_000,
      excludeFromLb: true,
      lbDrainWaitMs: 120_000,
      hostRoot: '/',
      kubeletConfig: '/var/lib/kubelet/config.yaml',
      waveStart: 0,
      waveGrowth: { kind: 'none' },
      soakMs: 0,
      maxFailures: undefined,
      groupOrder: { kind: 'parallel' },
      healthChecks: [],
      healthCheckTimeoutMs: 300_000,
      notifyEvents: [...NOTIFY_EVENTS],
      failureTemplates: { ...DEFAULT_FAILURE_MESSAGES },
    };
    expect(defaultConfig()).toEqual(expected);
  });
});

describe('precedence: default < env < command line', () => {
  it('uses the default when neither is given', () => {
    expect(parseConfig({}, {}).periodMs).toBe(3_600_000);
  });

  it('lets the environment override the default', () => {
    expect(parseConfig({}, { KURED_PERIOD: '2h' }).periodMs).toBe(7_200_000);
  });

  it('lets the command line override the environment', () => {
    expect(parseConfig({ period: ['3h'] }, { KURED_PERIOD: '2h' }).periodMs).toBe(10_800_000);
  });

  it('treats an empty variable as unset, as kured (viper) does', () => {
    expect(parseConfig({}, { KURED_LOCK_ANNOTATION: '' }).lockAnnotation).toBe('weave.works/kured-node-lock');
  });

  it('replaces, not merges, repeatable values from the environment with those of the command line', () => {
    const config = parseConfig({ 'readiness-gate': ['A', 'B'] }, { KURED_READINESS_GATE: 'C' });
    expect(config.readinessGates).toEqual(['A', 'B']);
  });

  it('reads --post-reboot-wait-taint keys and prefixes ending in /, repeated or comma-separated', () => {
    const config = parseConfig(
      { 'post-reboot-wait-taint': ['example.com/gpu-ready,storage.example.com/', 'plain'] },
      {},
    );
    expect(config.postRebootWaitTaints).toEqual(['example.com/gpu-ready', 'storage.example.com/', 'plain']);
  });

  it('reads booleans the way Go does', () => {
    expect(parseConfig({}, { KURED_FORCE_REBOOT: 'True' }).forceReboot).toBe(true);
    expect(parseConfig({ 'block-on-pdb': ['false'] }, { KURED_BLOCK_ON_PDB: '1' }).blockOnPdb).toBe(false);
  });

  it('reads the window from the environment too', () => {
    const config = parseConfig(
      { 'end-time': ['5pm'] },
      { KURED_REBOOT_DAYS: 'mon-fri', KURED_START_TIME: '9am' },
    );
    expect(config.window).toMatchObject({
      days: [1, 2, 3, 4, 5],
      startSecond: 9 * 3600,
      endSecond: 17 * 3600,
    });
  });
});

describe('budgets as percentages', () => {
  it('reads --concurrency 10% as a share of the fleet', () => {
    const config = parseConfig({ concurrency: ['10%'] }, {});
    expect(config.concurrency).toEqual({ percent: 10 });
  });

  it('reads KURED_GROUP_CONCURRENCY=25% as a share of each group', () => {
    const config = parseConfig({ 'group-label': ['zone'] }, { KURED_GROUP_CONCURRENCY: '25%' });
    expect(config.groupConcurrency).toEqual({ percent: 25 });
  });

  it('reads a plain number as kured does, with no percentage', () => {
    const config = parseConfig({ concurrency: ['3'] }, { KURED_CONCURRENCY: '10%' });
    expect(config.concurrency).toEqual({ count: 3 });
  });

  it('reads --group-concurrency 0 as no limit per group', () => {
    const config = parseConfig({ 'group-label': ['zone'], 'group-concurrency': ['0'] }, {});
    expect(config.groupConcurrency).toBeUndefined();
  });
});

describe('blocking pod selectors', () => {
  it('are honoured from KURED_BLOCKING_POD_SELECTOR (kured ignores it)', () => {
    const config = parseConfig({}, { KURED_BLOCKING_POD_SELECTOR: 'app=backup' });
    expect(config.blockingPodSelectors).toEqual([[{ key: 'app', operator: 'In', values: ['backup'] }]]);
  });

  it('OR repeats and AND commas', () => {
    const config = parseConfig({ 'blocking-pod-selector': ['app=backup,tier!=db', 'batch'] }, {});
    expect(config.blockingPodSelectors).toEqual([
      [
        { key: 'app', operator: 'In', values: ['backup'] },
        { key: 'tier', operator: 'NotIn', values: ['db'] },
      ],
      [{ key: 'batch', operator: 'Exists', values: [] }],
    ]);
  });

  it('take several selectors from one variable separated by ";"', () => {
    const config = parseConfig({}, { KURED_BLOCKING_POD_SELECTOR: 'a=1;b in (x,y)' });
    expect(config.blockingPodSelectors).toHaveLength(2);
  });

  it('ignore empty entries, which would block on every pod', () => {
    expect(parseConfig({ 'blocking-pod-selector': [''] }, {}).blockingPodSelectors).toEqual([]);
  });

  it('name the bad selector', () => {
    const err = usageError({ 'blocking-pod-selector': ['app=ok', 'bad key=1'] });
    expect(err.message).toMatch(/^invalid value "bad key=1" for --blocking-pod-selector: bad label selector/);
  });
});

describe('node labels', () => {
  it('parse key=value pairs, comma-separated and repeated', () => {
    const config = parseConfig({ 'pre-reboot-node-labels': ['a=1,example.com/b=two', 'c='] }, {});
    expect(config.preRebootNodeLabels).toEqual({ a: '1', 'example.com/b': 'two', c: '' });
  });

  it('reject a label without "=" (kured panics on it), naming that label', () => {
    const err = usageError({ 'post-reboot-node-labels': ['a=1,oops'] });
    expect(err.message).toBe('invalid value "oops" for --post-reboot-node-labels: expected key=value');
  });

  it.each(['bad key=1', 'a=b=c', '=v', 'a=' + 'x'.repeat(64)])('reject %p', (label) => {
    expect(usageError({ 'pre-reboot-node-labels': [label] }).flag).toBe('--pre-reboot-node-labels');
  });
});

describe('commands are split like a shell', () => {
  const cases: [string, string[]][] = [
    ['/bin/systemctl reboot', ['/bin/systemctl', 'reboot']],
    ['  sh  -c  "echo hi; exit 1" ', ['sh', '-c', 'echo hi; exit 1']],
    ['sh -c \'test -f "/var/run/reboot required"\'', ['sh', '-c', 'test -f "/var/run/reboot required"']],
    ['echo a\\ b "x\\"y" \'\'', ['echo', 'a b', 'x"y', '']],
    ['', []],
  ];
  it.each(cases)('%p', (text, argv) => {
    expect(splitCommand(text)).toEqual(argv);
  });

  it('rejects an unterminated quote, naming the flag', () => {
    expect(usageError({ 'reboot-command': ['sh -c "oops'] }).message).toBe(
      'invalid value "sh -c \\"oops" for --reboot-command: unterminated " quote',
    );
  });

  it('requires a reboot command for method command, but not for method signal', () => {
    expect(usageError({ 'reboot-command': [''] }).flag).toBe('--reboot-command');
    expect(parseConfig({ 'reboot-command': [''], 'reboot-method': ['signal'] }, {}).rebootCommand).toEqual(
      [],
    );
  });

  it('parses the sentinel command', () => {
    expect(parseConfig({ 'reboot-sentinel-command': ['test -f /run/x'] }, {}).rebootSentinelCommand).toEqual([
      'test',
      '-f',
      '/run/x',
    ]);
  });
});

describe('notification URLs', () => {
  it('convert --slack-hook-url the way kured does, with a deprecation warning', () => {
    const { config, warnings } = parseConfigWithWarnings(
      { 'slack-hook-url': ['https://hooks.slack.com/services/T01/B02/secretvice'] },
      {},
    );
    // kured's strings.Trim cut-set would also eat the trailing "vice"; we keep the token whole.
    expect(config.notifyUrl).toBe('slack://T01/B02/secretvice');
    expect(warnings).toEqual(['--slack-hook-url is deprecated: use --notify-url']);
  });

  it('strip quotes around URLs', () => {
    expect(
      parseConfig({}, { KURED_SLACK_HOOK_URL: '"https://hooks.slack.com/services/T/B/X"' }).notifyUrl,
    ).toBe('slack://T/B/X');
    expect(parseConfig({ 'notify-url': ["'https://example.com/hook'"] }, {}).notifyUrl).toBe(
      'https://example.com/hook',
    );
  });

  it('prefer --notify-url when both are set', () => {
    const { config, warnings } = parseConfigWithWarnings(
      { 'notify-url': ['slack://A/B/C'], 'slack-hook-url': ['https://hooks.slack.com/services/T/B/X'] },
      {},
    );
    expect(config.notifyUrl).toBe('slack://A/B/C');
    expect(warnings).toContain('both --notify-url and --slack-hook-url are set: using --notify-url only');
  });

  it('refuse a malformed Slack hook instead of silently sending nothing', () => {
    expect(usageError({ 'slack-hook-url': ['https://hooks.slack.com/services/T/B'] }).message).toMatch(
      /for --slack-hook-url: expected https:\/\/hooks.slack.com\/services/,
    );
  });

  it('show a refused Slack hook redacted: its path holds the webhook token', () => {
    const err = usageError({ 'slack-hook-url': ['https://hooks.slack.com/services/T/SECRET'] });
    expect(err.value).toBe('https://hooks.slack.com/<redacted>');
    expect(err.message).not.toContain('SECRET');
  });

  it.each([
    ['slack://T01/B02/SECRET', 'slack://T01/<redacted>'],
    ['http://notify.example.com', 'http://notify.example.com'],
  ])('log %s as %s, as the notifier redacts it', (url, shown) => {
    expect(redactConfig(parseConfig({ 'notify-url': [url] }, {})).notifyUrl).toBe(shown);
  });

  it('are redacted in the logged configuration', () => {
    const config = parseConfig(
      {
        'notify-url': ['https://hooks.example.com/workflows/SECRET'],
        'prometheus-url': ['http://u:pw@prom:9090'],
      },
      {},
    );
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain('SECRET');
    expect(shown).not.toContain('pw@');
    expect(shown).toContain('https://hooks.example.com/<redacted>');
    expect(redactConfig(config).prometheusUrl).toBe('http://<redacted>@prom:9090');
  });
});

describe('bad values name the flag and the value', () => {
  const cases: [string, FlagValues, Env, string][] = [
    [
      'a time out of range',
      { 'end-time': ['25:00'] },
      {},
      'invalid value "25:00" for --end-time: hour must be 0-23',
    ],
    [
      'a bad value from the environment',
      {},
      { KURED_END_TIME: '24:00' },
      'invalid value "24:00" for --end-time (from KURED_END_TIME): hour must be 0-23',
    ],
    [
      'a negative duration',
      { 'lock-ttl': ['-1s'] },
      {},
      'invalid value "-1s" for --lock-ttl: must not be negative',
    ],
    ['a zero period', { period: ['0'] }, {}, 'invalid value "0" for --period: must be greater than 0'],
    [
      'a notify URL no notifier can send to',
      { 'notify-url': ['ifttt://key/?events=reboot'] },
      {},
      'invalid value "ifttt://key/<redacted>" for --notify-url: unsupported scheme ifttt: (use slack://, teams://, telegram://, discord://, mattermost://, rocketchat://, gotify://, pushover://, googlechat://, generic://, generic+http://, generic+https://, smtp://, https://, http://)',
    ],
    [
      'a blocking query without a Prometheus to ask',
      { 'blocking-query': ['up == 0'] },
      {},
      'invalid value "up == 0" for --blocking-query: needs --prometheus-url',
    ],
    [
      'an smtp URL without its recipients',
      { 'notify-url': ['smtp://mail.example.com'] },
      {},
      'invalid value "smtp://mail.example.com" for --notify-url: smtp notify URL must be smtp://[user:password@]host[:port]/?from=…&to=…',
    ],
    [
      'a proxy that is no URL, named by its variable',
      {},
      { HTTPS_PROXY: 'http://user:pw@[bad' },
      'invalid value "http://<redacted>@[bad" for HTTPS_PROXY: not a proxy URL',
    ],
    [
      'a SOCKS proxy',
      {},
      { HTTP_PROXY: 'socks5://proxy:1080' },
      'invalid value "socks5://proxy:1080" for HTTP_PROXY: socks5:// proxies are not supported (use http:// or https://)',
    ],
    [
      'a Slack bot token instead of a webhook, shown redacted',
      { 'notify-url': ['slack://xoxb:SECRET@alerts'] },
      {},
      'invalid value "slack://alerts/<redacted>" for --notify-url: slack bot API tokens are not supported; use an incoming webhook (slack://T…/B…/X…)',
    ],
    [
      'a Slack notify URL without three tokens',
      {},
      { KURED_NOTIFY_URL: 'slack://T/B' },
      'invalid value "slack://T/<redacted>" for --notify-url (from KURED_NOTIFY_URL): slack notify URL must be slack://T…/B…/X… or slack://hook:T…-B…-X…@webhook',
    ],
    [
      'a notify URL that is no URL',
      { 'notify-url': ['hooks'] },
      {},
      'invalid value "<redacted>" for --notify-url: not a valid URL',
    ],
    [
      'concurrency below 1',
      { concurrency: ['0'] },
      {},
      'invalid value "0" for --concurrency: must be at least 1',
    ],
    [
      'a concurrency of 0%',
      { concurrency: ['0%'] },
      {},
      'invalid value "0%" for --concurrency: a percentage must be 1-100',
    ],
    [
      'a group concurrency above 100%',
      { 'group-label': ['zone'], 'group-concurrency': ['150%'] },
      {},
      'invalid value "150%" for --group-concurrency: a percentage must be 1-100',
    ],
    [
      'a port out of range',
      { 'metrics-port': ['70000'] },
      {},
      'invalid value "70000" for --metrics-port: must be 0-65535',
    ],
    [
      'a signal out of range',
      { 'reboot-signal': ['0'] },
      {},
      'invalid value "0" for --reboot-signal: must be 1-64',
    ],
    [
      'a non-integer',
      { 'drain-grace-period': ['1.5'] },
      {},
      'invalid value "1.5" for --drain-grace-period: expected an integer',
    ],
    [
      'an unknown enum value',
      { 'reboot-method': ['kexec'] },
      {},
      'invalid value "kexec" for --reboot-method: must be one of: command, signal',
    ],
    [
      'an unknown zone',
      { 'time-zone': ['Mars/Base'] },
      {},
      'invalid value "Mars/Base" for --time-zone: unknown time zone (expected an IANA name such as UTC or Europe/Berlin)',
    ],
    [
      'a bad boolean',
      { 'force-reboot': ['yes'] },
      {},
      'invalid value "yes" for --force-reboot: expected true or false',
    ],
  ];
  it.each(cases)('%s', (_name, values, env, message) => {
    expect(usageError(values, env).message).toBe(message);
  });

  it.each([
    ['alert-filter-regexp', '(unclosed'],
    ['prometheus-url', 'ftp://prom'],
    ['ds-namespace', 'Kube_System'],
    ['lock-annotation', 'bad key'],
    ['reboot-schedule', '0 0 * * * *'],
    ['reboot-days', 'funday'],
    ['readiness-gate', 'not valid!'],
    ['post-reboot-wait-taint', 'not valid!'],
    ['post-reboot-wait-taint', 'Not_A_Domain/'],
    ['on-post-reboot-timeout', 'ignore'],
    ['log-format', 'xml'],
    ['host-exec', 'ssh'],
    ['drain-pod-selector', 'a=b=c'],
  ])('--%s rejects %p', (flag, value) => {
    const err = usageError({ [flag]: [value] });
    expect([err.flag, err.value]).toEqual([`--${flag}`, value]);
  });

  it('the agent requires a node id', () => {
    expect(() => {
      requireNodeId(parseConfig({}, {}));
    }).toThrow('invalid value "" for --node-id: required (set --node-id or KURED_NODE_ID)');
    expect(() => {
      requireNodeId(parseConfig({}, { KURED_NODE_ID: 'n1' }));
    }).not.toThrow();
  });
});

describe('KURED_* variables that are no setting', () => {
  it.each([
    [
      'names a misspelt one with the setting it is probably a typo of',
      { KURED_PERIOID: '2h' },
      'KURED_PERIOID (KURED_PERIOD?)',
    ],
    ['names one that resembles nothing', { KURED_WHATEVER: 'x' }, 'KURED_WHATEVER:'],
  ])('%s, in one warning', (_name, env, named) => {
    const { config, warnings } = parseConfigWithWarnings({}, env);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(named);
    expect(config.periodMs).toBe(3_600_000);
  });

  it('says nothing of known ones or of other variables', () => {
    expect(
      parseConfigWithWarnings({}, { KURED_PERIOD: '2h', HOME: '/root', KUBECONFIG: '/k' }).warnings,
    ).toEqual([]);
  });
});

describe('the FleetLock flags', () => {
  it('are off by default, the group "default" (a Config has no cluster name to default to)', () => {
    const config = parseConfig({}, {});
    expect([config.fleetlockUrl, config.fleetlockGroup]).toEqual(['', 'default']);
  });

  it('take the URL and group from flags, and from KURED_FLEETLOCK_URL / KURED_FLEETLOCK_GROUP', () => {
    const flags = parseConfig({ 'fleetlock-url': ['http://fl:8080'], 'fleetlock-group': ['prod'] }, {});
    expect([flags.fleetlockUrl, flags.fleetlockGroup]).toEqual(['http://fl:8080', 'prod']);
    const env = parseConfig({}, { KURED_FLEETLOCK_URL: 'https://fl.example', KURED_FLEETLOCK_GROUP: 'eu' });
    expect([env.fleetlockUrl, env.fleetlockGroup]).toEqual(['https://fl.example', 'eu']);
  });

  it('refuse a URL that is no http(s) URL, naming the flag', () => {
    expect(() => parseConfig({ 'fleetlock-url': ['fleetlock:8080'] }, {})).toThrow(
      'invalid value "fleetlock:8080" for --fleetlock-url: scheme must be http or https',
    );
  });

  it('hide a password in the URL from the logged configuration', () => {
    const config = parseConfig({ 'fleetlock-url': ['https://u:secret@fl.example'] }, {});
    expect(JSON.stringify(redactConfig(config))).not.toContain('secret');
  });
});
