import { describe, expect, it } from '@jest/globals';
import {
  LockFormatError,
  entriesOf,
  formatMulti,
  formatRfc3339Nano,
  formatSingle,
  isExpired,
  newEntry,
  parseLockAnnotation,
  parseRfc3339,
  toHolder,
} from '../../src/lock/kured-lock-format.js';

// Literal annotations as kured (Go encoding/json) writes them.
const KURED_SINGLE =
  '{"nodeID":"node-1","metadata":{"unschedulable":false},"created":"2024-03-01T12:34:56.123456789Z","TTL":0}';
const KURED_SINGLE_TTL =
  '{"nodeID":"node-2","metadata":{"unschedulable":true},"created":"2024-03-01T12:00:00Z","TTL":1800000000000}';
const KURED_MULTI =
  '{"maxOwners":2,"locks":[{"nodeID":"a","metadata":{"unschedulable":false},"created":"2024-03-01T12:34:56.1Z","TTL":0},{"nodeID":"b","metadata":{"unschedulable":true},"created":"2024-03-01T12:35:00.00001Z","TTL":3600000000000}]}';
const KURED_MULTI_EMPTY = '{"maxOwners":3,"locks":[]}';
const KURED_MANUAL = '{"nodeID":"manual"}';

describe('kured lock annotation format', () => {
  it.each([
    ['single', KURED_SINGLE],
    ['single with TTL', KURED_SINGLE_TTL],
    ['multi', KURED_MULTI],
    ['multi after the last release', KURED_MULTI_EMPTY],
  ])('re-writes a %s lock written by kured byte for byte', (_name, text) => {
    const value = parseLockAnnotation(text);
    const written =
      value.form === 'single' ? formatSingle(value.entry) : formatMulti(value.maxOwners, value.entries);
    expect(written).toBe(text);
  });

  it('reads the fields of a kured single lock', () => {
    const value = parseLockAnnotation(KURED_SINGLE_TTL);
    expect(value.form).toBe('single');
    const holder = toHolder(entriesOf(value)[0]!);
    expect(holder).toEqual({
      nodeID: 'node-2',
      created: new Date('2024-03-01T12:00:00Z'),
      ttlMs: 1_800_000,
      metadata: { unschedulable: true },
    });
  });

  it('reads every slot of a kured multi lock', () => {
    const value = parseLockAnnotation(KURED_MULTI);
    expect(value).toMatchObject({ form: 'multi', maxOwners: 2 });
    expect(entriesOf(value).map((e) => toHolder(e))).toEqual([
      {
        nodeID: 'a',
        created: new Date('2024-03-01T12:34:56.100Z'),
        ttlMs: 0,
        metadata: { unschedulable: false },
      },
      {
        nodeID: 'b',
        created: new Date('2024-03-01T12:35:00.000Z'),
        ttlMs: 3_600_000,
        metadata: { unschedulable: true },
      },
    ]);
  });

  it('reads the manual lock as held by "manual" with no creation time, and it never expires', () => {
    const entry = entriesOf(parseLockAnnotation(KURED_MANUAL))[0]!;
    expect(entry).toMatchObject({ nodeID: 'manual', createdMs: undefined, ttlNs: 0 });
    expect(isExpired(entry, 60_000, Date.parse('2030-01-01T00:00:00Z'))).toBe(false);
    // Re-written (e.g. kept while another slot is pruned) the way Go marshals it.
    expect(formatSingle(entry)).toBe(
      '{"nodeID":"manual","metadata":{"unschedulable":false},"created":"0001-01-01T00:00:00Z","TTL":0}',
    );
  });

  it('writes our entries with kured field names and types, our extras inside metadata', () => {
    const entry = newEntry(
      'n1',
      { unschedulable: false, bootID: 'b-1' },
      new Date('2026-01-05T10:00:00.120Z'),
      90_000,
    );
    expect(formatSingle(entry)).toBe(
      '{"nodeID":"n1","metadata":{"unschedulable":false,"bootID":"b-1"},"created":"2026-01-05T10:00:00.12Z","TTL":90000000000}',
    );
    expect(formatMulti(2, [entry])).toBe(
      '{"maxOwners":2,"locks":[{"nodeID":"n1","metadata":{"unschedulable":false,"bootID":"b-1"},"created":"2026-01-05T10:00:00.12Z","TTL":90000000000}]}',
    );
    expect(toHolder(entriesOf(parseLockAnnotation(formatSingle(entry)))[0]!)).toEqual({
      nodeID: 'n1',
      created: new Date('2026-01-05T10:00:00.120Z'),
      ttlMs: 90_000,
      metadata: { unschedulable: false, bootID: 'b-1' },
    });
  });

  it('round-trips every field of our metadata through the annotation', () => {
    const metadata = {
      unschedulable: true,
      bootID: 'b-2',
      attempts: 2,
      verifyingSince: '2026-01-05T10:05:00Z',
    };
    const entry = newEntry('n1', metadata, new Date('2026-01-05T10:00:00Z'), 0);
    expect(toHolder(entriesOf(parseLockAnnotation(formatSingle(entry)))[0]!).metadata).toEqual(metadata);
  });

  it('drops our metadata fields that carry the wrong type', () => {
    const text =
      '{"nodeID":"n1","metadata":{"unschedulable":false,"bootID":7},"created":"2024-01-01T00:00:00Z","TTL":0}';
    expect(toHolder(entriesOf(parseLockAnnotation(text))[0]!).metadata).toEqual({ unschedulable: false });
  });

  it('keeps fields of other writers inside metadata when re-writing their slot', () => {
    const text =
      '{"maxOwners":2,"locks":[{"nodeID":"x","metadata":{"unschedulable":false,"future":{"k":[1,2]}},"created":"2024-01-01T00:00:00Z","TTL":5}]}';
    const value = parseLockAnnotation(text);
    expect(formatMulti(2, entriesOf(value))).toBe(text);
  });

  it('escapes <, > and & as Go does', () => {
    const entry = newEntry('a<b>&c', { unschedulable: false }, new Date('2026-01-05T10:00:00Z'), 0);
    expect(formatSingle(entry)).toContain('"nodeID":"a\\u003cb\\u003e\\u0026c"');
    expect(entriesOf(parseLockAnnotation(formatSingle(entry)))[0]!.nodeID).toBe('a<b>&c');
  });

  it.each([
    ['2026-01-05T10:00:00Z', '2026-01-05T10:00:00.000Z'],
    ['2026-01-05T10:00:00.5Z', '2026-01-05T10:00:00.500Z'],
    ['2026-01-05T10:00:00.123456789Z', '2026-01-05T10:00:00.123Z'],
    ['2026-01-05T12:00:00.25+02:00', '2026-01-05T10:00:00.250Z'],
    ['2026-01-05t04:30:00-05:30', '2026-01-05T10:00:00.000Z'],
  ])('parses the RFC 3339 time %s', (text, iso) => {
    expect(new Date(parseRfc3339(text)!).toISOString()).toBe(iso);
  });

  it.each([
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-01-05 10:00:00Z',
    '2026-01-05T10:00:00',
    'yesterday',
  ])('rejects %s as an RFC 3339 time', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });

  it.each([
    ['2026-01-05T10:00:00.000Z', '2026-01-05T10:00:00Z'],
    ['2026-01-05T10:00:00.100Z', '2026-01-05T10:00:00.1Z'],
    ['2026-01-05T10:00:00.010Z', '2026-01-05T10:00:00.01Z'],
    ['2026-01-05T10:00:00.123Z', '2026-01-05T10:00:00.123Z'],
  ])('formats %s as Go RFC3339Nano %s', (iso, go) => {
    expect(formatRfc3339Nano(new Date(iso))).toBe(go);
  });

  it.each([
    ['empty text', ''],
    ['not JSON', 'node-1'],
    ['a JSON string', '"node-1"'],
    ['an array', '[]'],
    ['an object without nodeID or locks', '{"holder":"n1"}'],
    ['a string TTL', '{"nodeID":"n1","created":"2024-01-01T00:00:00Z","TTL":"1h"}'],
    ['a bad created time', '{"nodeID":"n1","created":"noon","TTL":0}'],
    ['a numeric nodeID', '{"nodeID":1}'],
    ['a string unschedulable', '{"nodeID":"n1","metadata":{"unschedulable":"yes"}}'],
    ['locks that are not an array', '{"maxOwners":2,"locks":{}}'],
    ['a lock entry that is not an object', '{"maxOwners":2,"locks":["n1"]}'],
  ])('rejects %s with a LockFormatError', (_name, text) => {
    expect(() => parseLockAnnotation(text)).toThrow(LockFormatError);
  });

  it.each([
    ['an entry TTL not reached', 1_800_000_000_000, 0, 1_799_999, false],
    ['an entry TTL reached', 1_800_000_000_000, 0, 1_800_000, true],
    ['the configured TTL when the entry records none', 0, 60_000, 60_000, true],
    ['the entry TTL over the configured one', 1_800_000_000_000, 60_000, 60_000, false],
    ['no TTL at all', 0, 0, 365 * 86_400_000, false],
  ])('judges expiry by %s', (...[, ttlNs, configuredMs, elapsedMs, expired]) => {
    const created = Date.parse('2024-03-01T12:00:00Z');
    const entry = { nodeID: 'n', created: '2024-03-01T12:00:00Z', createdMs: created, ttlNs, metadata: {} };
    expect(isExpired(entry, configuredMs, created + elapsedMs)).toBe(expired);
  });
});
