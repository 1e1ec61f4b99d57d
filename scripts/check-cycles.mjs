// Fails (exit 1) when the modules under src/ import each other in a cycle, naming each cycle. Part of
// `npm run lint`. Written on the TypeScript compiler's own import scanner (ts.preProcessFile) rather
// than with eslint-plugin-import-x, whose TypeScript resolver brings a native binary to every
// machine that installs the project.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');

/** Every .ts file under `dir`. */
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The project files `file` imports (relative imports only; `./x.js` is `./x.ts`); type-only ones too. */
function importsOf(file, known) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')))
    .filter((path) => known.has(path));
}

const all = files(root);
const known = new Set(all);
const graph = new Map(all.map((f) => [f, importsOf(f, known)]));

// Tarjan's strongly connected components: every component of more than one module is a cycle.
let index = 0;
const stack = [];
const state = new Map();
const cycles = [];
function visit(v) {
  state.set(v, { index, low: index, onStack: true });
  index++;
  stack.push(v);
  for (const w of graph.get(v) ?? []) {
    const ws = state.get(w);
    if (ws === undefined) {
      visit(w);
      state.get(v).low = Math.min(state.get(v).low, state.get(w).low);
    } else if (ws.onStack) {
      state.get(v).low = Math.min(state.get(v).low, ws.index);
    }
  }
  const vs = state.get(v);
  if (vs.low !== vs.index) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    state.get(w).onStack = false;
    component.push(w);
  } while (w !== v);
  if (component.length > 1) cycles.push(component.map((f) => relative(process.cwd(), f)).sort());
}
for (const v of all) if (!state.has(v)) visit(v);

if (cycles.length > 0) {
  for (const c of cycles) console.error(`import cycle: ${c.join(' <-> ')}`);
  process.exit(1);
}
console.log(`no import cycles among ${all.length} modules under ${relative(process.cwd(), root)}`);
