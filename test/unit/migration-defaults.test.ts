// docs/migration.md's table of the defaults that differ from kured, checked rather than trusted:
// every value in its "kured-ts's default" column is what the chart's values.yaml holds, and every
// value in its "kured's behaviour" column is one the chart's schema accepts and that changes it.
import { describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { chartSchemaErrors } from '../../src/migrate/chart-schema.js';
import { codeSpans, markdownSection, readRepoFile } from '../fakes/markdown.js';

const HEADING = '## What kured-ts does by default that kured does not';

interface Row {
  behaviour: string;
  defaults: string[];
  kured: string[];
}

/** The table's rows, each with the `key: value` spans of its second and fourth columns. */
function rows(): Row[] {
  return markdownSection(readRepoFile('docs/migration.md'), HEADING)
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .slice(1) // the header
    .map((line) => {
      const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
      const settings = (cell: string): string[] => codeSpans(cell).filter((s) => /^[\w.]+: /.test(s));
      return {
        behaviour: cells[1] ?? '',
        defaults: settings(cells[2] ?? ''),
        kured: settings(cells[4] ?? ''),
      };
    });
}

/** `a.b: value` as its path and its YAML value. */
function setting(span: string): { path: string[]; value: unknown } {
  const colon = span.indexOf(': ');
  return { path: span.slice(0, colon).split('.'), value: load(span.slice(colon + 2)) };
}

function at(values: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>(
    (v, key) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[key] : undefined),
    values,
  );
}

function nested(path: readonly string[], value: unknown): Record<string, unknown> {
  return path.reduceRight<Record<string, unknown>>((inner, key) => ({ [key]: inner }), value as never);
}

const chartValues = load(readRepoFile('charts/kured-ts/values.yaml'));
const table = rows();

describe("docs/migration.md's table of defaults that differ from kured", () => {
  it('has a row for each default the migration guide promises', () => {
    expect(table.length).toBeGreaterThanOrEqual(14);
    for (const row of table) expect(row.defaults.length).toBeGreaterThan(0);
  });

  it.each(table.map((r) => [r.behaviour, r] as const))(
    "%s: the default column is the chart's, and kured's value is valid and differs",
    (_name, row) => {
      for (const span of row.defaults) {
        const { path, value } = setting(span);
        expect({ span, chart: at(chartValues, path) }).toEqual({ span, chart: value });
      }
      for (const span of row.kured) {
        const { path, value } = setting(span);
        expect({ span, errors: chartSchemaErrors(nested(path, value) as never) }).toEqual({
          span,
          errors: [],
        });
        expect({ span, differs: JSON.stringify(at(chartValues, path)) !== JSON.stringify(value) }).toEqual({
          span,
          differs: true,
        });
      }
    },
  );
});
