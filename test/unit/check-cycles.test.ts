// scripts/check-cycles.mjs (part of `npm run lint`): it names every import cycle, and passes src/.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function check(dir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, ['scripts/check-cycles.mjs', dir], { encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('the import cycle check', () => {
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
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-cycles-'));
    try {
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      const run = check(dir);
      expect(run.status).toBe(status);
      if (status === 1) expect(run.output).toMatch(/import cycle: .*a\.ts <-> .*b\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds none in src/', () => {
    expect(check('src')).toMatchObject({ status: 0 });
  });
});
