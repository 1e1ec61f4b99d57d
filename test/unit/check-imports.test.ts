// scripts/check-imports.mjs (part of `npm run lint`): it names every import cycle and every back-arrow
// between the folders it ranks, and passes src/. The cases run its checkImports() in this process
// (each process would load the TypeScript compiler again); the command itself runs once, on src/.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** scripts/check-imports.mjs as a module (a plain .mjs: typed here). */
interface CheckImports {
  checkImports: (root: string) => { problems: string[]; modules: number };
}
const script = join(process.cwd(), 'scripts/check-imports.mjs');
const { checkImports } = (await import(pathToFileURL(script).href)) as CheckImports;

/** Writes `files` (path → text) into a fresh directory, checks it and removes it. */
function checkFiles(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-imports-'));
  try {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return check(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What the command would answer for `dir`: exit 1 and a line per problem, or exit 0. */
function check(dir: string): { status: number | null; output: string } {
  const { problems } = checkImports(dir);
  return { status: problems.length > 0 ? 1 : 0, output: problems.map((p) => `${p}\n`).join('') };
}

/** The command as `npm run lint` runs it. */
function command(dir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, ['scripts/check-imports.mjs', dir], { encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('the import check', () => {
  it.each([
    [
      'two modules importing each other',
      { 'a.ts': "import { b } from './b.js';", 'b.ts': "import { a } from './a.js';" },
      1,
    ],
    [
      'a cycle through a type-only import',
      { 'a.ts': "import type { B } from './b.js';", 'b.ts': "export { a } from './a.js';" },
      1,
    ],
    [
      'a cycle through a dynamic import',
      { 'a.ts': "await import('./b.js');", 'b.ts': "import './a.js';" },
      1,
    ],
    [
      'a chain without a cycle',
      { 'a.ts': "import './b.js';", 'b.ts': "import './c.js';", 'c.ts': 'export {};' },
      0,
    ],
  ])('%s', (_name, files, status) => {
    const run = checkFiles(files);
    expect(run.status).toBe(status);
    if (status === 1) expect(run.output).toMatch(/import cycle: .*a\.ts <-> .*b\.ts/);
  });

  it.each([
    [
      'a helper importing the agent',
      { 'kube/a.ts': "import '../agent/b.js';", 'agent/b.ts': 'export {};' },
      /above/,
    ],
    [
      'the lock importing a blocker (type only)',
      { 'lock/a.ts': "import type { B } from '../blockers/b.js';", 'blockers/b.ts': 'export type B = 1;' },
      /above/,
    ],
    [
      'one folder importing another on its row',
      { 'agent/a.ts': "await import('../coordinator/b.js');", 'coordinator/b.ts': 'export {};' },
      /beside/,
    ],
  ])('names a back-arrow: %s', (_name, files, where) => {
    const run = checkFiles(files);
    expect(run.status).toBe(1);
    expect(run.output).toMatch(/back-arrow: .*\/a\.ts imports .*\/b\.ts/);
    expect(run.output).toMatch(where);
  });

  it('lets a folder import itself and the folders below it', () => {
    const run = checkFiles({
      'cli/a.ts': "import './c.js'; import '../sim/b.js';",
      'cli/c.ts': 'export {};',
      'sim/b.ts': "import '../kube/d.js';",
      'kube/d.ts': "import '../clock/e.js';",
      'clock/e.ts': 'export {};',
    });
    expect(run).toMatchObject({ status: 0 });
  });

  it.each([
    [
      'a lock resolving a share itself',
      { 'lock/a.ts': 'const n = (b: { percent: number }) => b.percent;' },
      /lock\/a\.ts:1 reads a budget's share/,
    ],
    [
      "the coordinator testing a budget's form",
      { 'coordinator/a.ts': "const share = 'percent' in budget;" },
      /reads a budget's share/,
    ],
    [
      'an agent comparing its holders with the slots',
      { 'agent/a.ts': 'if (live.length >= slots) go();' },
      /agent\/a\.ts:1 compares a count with the slots/,
    ],
    [
      'the other way round',
      { 'queue/a.ts': 'const room = concurrency > holders.size;' },
      /compares a count with the slots/,
    ],
  ])('names room decided outside src/capacity/: %s', (_name, files, what) => {
    const run = checkFiles(files);
    expect(run.status).toBe(1);
    expect(run.output).toMatch(/room decided outside src\/capacity\//);
    expect(run.output).toMatch(what);
  });

  it.each([
    ['capacity resolving a share', { 'capacity/a.ts': "const n = 'percent' in b ? b.percent : 1;" }],
    ['config printing a share', { 'config/a.ts': 'const t = `${b.percent}%`;' }],
    [
      "the simulator's observer counting on its own",
      { 'sim/a.ts': 'if (slots.length > concurrency) violate();' },
    ],
    ['a comment that names a share', { 'lock/a.ts': '// a .percent of the fleet\nexport {};' }],
  ])('lets room be decided where it lives: %s', (_name, files) => {
    expect(checkFiles(files)).toMatchObject({ status: 0 });
  });

  it('fails on a folder that is on no row', () => {
    const run = checkFiles({ 'gadgets/a.ts': "import '../kube/b.js';", 'kube/b.ts': 'export {};' });
    expect(run.status).toBe(1);
    expect(run.output).toMatch(/unranked folder: gadgets\//);
  });

  const kube = {
    'kube/kube.ts': 'export interface Kube {\n  watchNodes(on: () => void): Promise<void>;\n}',
    'kube/list-watch.ts':
      "import type { Kube } from './kube.js';\nexport const w = (k: Kube) => k.watchNodes(() => 1);",
  };
  it.each([
    ['a watch by the list-watch of the reflector', {}, 0],
    [
      'a class that implements Kube passing a watch on',
      { 'sim/t.ts': 'class T implements Kube { w() { return this.inner.watchNodes(() => 1); } }' },
      0,
    ],
    [
      'a decorator that extends ForwardingKube passing a watch on',
      { 'kube/v.ts': 'class V extends ForwardingKube { w() { return super.watchNodes(() => 1); } }' },
      0,
    ],
    [
      'a blocker calling a watch method itself',
      { 'blockers/b.ts': 'export const b = (k: Kube) => k.watchNodes(() => 1);' },
      1,
    ],
  ])('the watches: %s', (_name, files, status) => {
    const run = checkFiles({ ...kube, ...files });
    expect(run.status).toBe(status);
    if (status === 1)
      expect(run.output).toMatch(/watch outside the reflector: .*blockers\/b\.ts calls watchNodes/);
  });

  it('finds no cycle and no back-arrow in src/', () => {
    expect(check('src')).toMatchObject({ status: 0 });
  });

  it('as a command, exits 0 on src/ and 1 naming each problem of a tree that has them', () => {
    expect(command('src')).toMatchObject({ status: 0, output: expect.stringMatching(/^no import cycles/) });
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-imports-'));
    try {
      for (const [name, text] of Object.entries({ 'a.ts': "import './b.js';", 'b.ts': "import './a.js';" }))
        writeFileSync(join(dir, name), text);
      const run = command(dir);
      expect(run.status).toBe(1);
      expect(run.output).toMatch(/import cycle: .*a\.ts <-> .*b\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
