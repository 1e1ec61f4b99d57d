import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { FLAGS, renderChartDefaultsYaml, renderConfigTable } from '../../src/config/flags.js';
import { renderMigrationTable } from '../../src/migrate/kured-chart-values.js';
import { load } from 'js-yaml';
import { CHART_DEFAULT_VALUES, CHART_VALUES_SCHEMA } from '../../src/migrate/chart-values.generated.js';
import { hookPolicySpecs } from '../../src/admission/hook-policy.js';
import { agentPolicySpecs } from '../../src/admission/agent-policy.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const configurationDoc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const chartReadme = readFileSync(new URL('../../charts/kured-ts/README.md', import.meta.url), 'utf8');

/** A markdown table as rows of trimmed cells; prettier's column padding does not matter. */
function cells(table: string): string[][] {
  return table
    .trim()
    .split('\n')
    .map((line) =>
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim())
        .map((cell) => (/^:?-+:?$/.test(cell) ? '---' : cell)),
    );
}

describe('the generated documentation', () => {
  it('docs/configuration.md carries the configuration table generated from the flag table (run `npm run docs` when it fails)', () => {
    const section = /<!-- config-table:begin -->\n([\s\S]*?)<!-- config-table:end -->/.exec(configurationDoc);
    expect(section).not.toBeNull();
    expect(cells(section?.[1] ?? '')).toEqual(cells(renderConfigTable()));
  });

  it("carries the chart's migration table generated from the migration rules (run `npm run docs` when it fails)", () => {
    const section = /<!-- migration-table:begin -->\n([\s\S]*?)<!-- migration-table:end -->/.exec(
      chartReadme,
    );
    expect(section).not.toBeNull();
    expect(cells(section?.[1] ?? '')).toEqual(cells(renderMigrationTable()));
  });

  it("ships the chart's admission policy spec generated from src/admission (run `npm run docs` when it fails)", () => {
    const file = readFileSync(
      new URL('../../charts/kured-ts/files/agent-admission-policy.yaml', import.meta.url),
      'utf8',
    );
    expect(load(file)).toEqual(agentPolicySpecs());
  });

  it("ships the chart's hook admission policy specs generated from src/admission (run `npm run docs` when it fails)", () => {
    const file = readFileSync(
      new URL('../../charts/kured-ts/files/hook-admission-policy.yaml', import.meta.url),
      'utf8',
    );
    expect(load(file)).toEqual(hookPolicySpecs());
  });

  it("ships the chart's table of agent defaults generated from the flag table (run `npm run docs` when it fails)", () => {
    const file = readFileSync(
      new URL('../../charts/kured-ts/files/agent-defaults.yaml', import.meta.url),
      'utf8',
    );
    expect(load(file)).toEqual(load(renderChartDefaultsYaml()));
  });

  it("bundles the chart's schema and default values for migrate-values (run `npm run docs` when it fails)", () => {
    const chartFile = (name: string): string =>
      readFileSync(new URL(`../../charts/kured-ts/${name}`, import.meta.url), 'utf8');
    expect(CHART_VALUES_SCHEMA).toEqual(JSON.parse(chartFile('values.schema.json')));
    expect(CHART_DEFAULT_VALUES).toEqual(load(chartFile('values.yaml')));
  });

  it("the README names every flag that is no key under the chart's configuration", () => {
    const keys = Object.keys((CHART_DEFAULT_VALUES as { configuration: object }).configuration);
    const camel = (name: string): string => name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    const notKeys = FLAGS.map((f) => f.name).filter((name) => !keys.includes(camel(name)));
    expect(notKeys.sort()).toEqual(['drain-rules', 'host-root', 'kubeconfig', 'node-id']);
    const prose = readme.replace(/\s+/g, ' ');
    for (const name of notKeys) expect(prose).toContain(`\`--${name}\``);
  });

  it('the README names the quick start and the test command', () => {
    expect(readme).toContain('npm ci && npx kured-ts simulate');
    expect(readme).toContain('npm test');
  });
});
