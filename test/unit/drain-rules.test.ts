// --drain-rules: the rules file parsed at start-up, and a bad one a usage error naming the file.
import { describe, expect, it } from '@jest/globals';
import { UsageError } from '../../src/config/config.js';
import { parseDrainRules, withDrainRules } from '../../src/config/drain-rules.js';
import { parseLabelSelector } from '../../src/selector/label-selector.js';

describe('a --drain-rules file', () => {
  it.each([
    ['an empty file holds no rule', '', []],
    ['a file of comments holds no rule', '# nothing yet\n', []],
    [
      'a rule by namespace and selector gives mode and order',
      '- namespace: rook-ceph\n  selector: app=rook-ceph-osd\n  drain: evict\n  order: 10\n',
      [
        {
          entry: 1,
          namespace: 'rook-ceph',
          selector: parseLabelSelector('app=rook-ceph-osd'),
          drain: 'evict',
          order: 10,
        },
      ],
    ],
    [
      'a rule by selector alone applies in every namespace',
      '- selector: tier in (storage)\n  drain: wait-completed\n',
      [{ entry: 1, selector: parseLabelSelector('tier in (storage)'), drain: 'wait-completed' }],
    ],
    [
      'a rule by namespace alone may give only an order (negative first)',
      '- namespace: logging\n  order: -5\n',
      [{ entry: 1, namespace: 'logging', selector: [], order: -5 }],
    ],
  ])('%s', (_what, text, rules) => {
    expect(parseDrainRules(text)).toEqual(rules);
  });

  it.each([
    ['a mapping instead of a list', 'namespace: x\n', 'must be a YAML list'],
    ['text that is not YAML', '- namespace: [\n', 'not YAML'],
    ['an unknown key (a typo of drain)', '- namespace: x\n  drian: skip\n', 'entry 1: unknown key "drian"'],
    [
      'an unknown mode',
      '- namespace: x\n  drain: skp\n',
      'entry 1: "drain" must be one of evict, skip, wait-completed',
    ],
    [
      'an order that is no whole number',
      '- namespace: x\n  order: 1.5\n',
      'entry 1: "order" must be a whole number',
    ],
    ['an order given as text', "- namespace: x\n  order: '10'\n", 'entry 1: "order" must be a whole number'],
    [
      'a bad selector',
      '- selector: "app in x"\n  drain: skip\n',
      'entry 1: "selector" is not a label selector',
    ],
    ['a bad namespace', '- namespace: Rook_Ceph\n  drain: skip\n', 'entry 1: not a valid DNS-1123 label'],
    ['a rule for every pod of the cluster', '- drain: skip\n', 'entry 1: needs a namespace or a selector'],
    ['a rule that says nothing', '- namespace: x\n', 'entry 1: needs drain or order'],
    [
      'the second entry at fault',
      '- namespace: x\n  drain: skip\n- namespace: y\n  drain: never\n',
      'entry 2:',
    ],
  ])('refuses %s, naming the entry', (_what, text, message) => {
    expect(() => parseDrainRules(text)).toThrow(message);
  });
});

describe('reading --drain-rules at start-up', () => {
  const config = { drainRulesFile: '/etc/rules.yaml', drainRules: [] };

  it('reads nothing without the flag', () => {
    const read = (): string => {
      throw new Error('read');
    };
    expect(withDrainRules({ drainRulesFile: '', drainRules: [] }, read)).toEqual({
      drainRulesFile: '',
      drainRules: [],
    });
  });

  it('puts the rules of the file into the configuration', () => {
    const next = withDrainRules(config, () => '- namespace: x\n  drain: skip\n');
    expect(next.drainRules).toEqual([{ entry: 1, namespace: 'x', selector: [], drain: 'skip' }]);
  });

  it.each([
    [
      'a file that cannot be read',
      (): string => {
        throw new Error('ENOENT: no such file');
      },
      'cannot read the file: ENOENT',
    ],
    [
      'a rule it does not understand',
      (): string => '- namespace: x\n  drain: skp\n',
      'entry 1: "drain" must be one of',
    ],
  ])('makes %s a one-line usage error naming --drain-rules and the file', (_what, read, reason) => {
    let error: unknown;
    try {
      withDrainRules(config, read);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UsageError);
    const message = (error as UsageError).message;
    expect(message).toContain('invalid value "/etc/rules.yaml" for --drain-rules');
    expect(message).toContain(reason);
    expect(message).not.toContain('\n');
  });
});
