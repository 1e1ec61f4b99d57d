// Fails (exit 1) when the modules under src/ import each other in a cycle, or when a top-level folder
// imports one drawn above it in LAYERS (a back-arrow), naming each. Part of `npm run lint`. Written on
// the TypeScript compiler's own import scanner (ts.preProcessFile) rather than with
// eslint-plugin-import-x, whose TypeScript resolver brings a native binary to every machine that
// installs the project.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The house as it is drawn: the top-level folders under src/, from the entry point down to the
 * helpers. A folder imports its own modules and those of any folder on a lower row; never one on its
 * own row or above. Read off the imports of today (issue 31): the commands drive the simulator, which
 * runs agents and coordinators; the blockers read the lock, the drain's budgets and the node; the
 * lock and the drain write the node; all of them talk to the API server only through kube/.
 *
 * | row | folders                                    | imports from the rows below, e.g.             |
 * | --- | ------------------------------------------ | --------------------------------------------- |
 * | 0   | cli                                        | everything                                    |
 * | 1   | sim                                        | agent, coordinator, admission, blockers, kube |
 * | 2   | agent, coordinator                         | blockers, server, sentinel, lock, drain, node |
 * | 3   | blockers, sentinel, server, admission      | queue, lock, drain, reboot, metrics, node     |
 * | 4   | queue                                      | lock, node, kube                              |
 * | 5   | lock, drain, metrics, reboot, migrate      | capacity, node, config, kube, http            |
 * | 6   | capacity                                   | node, config, kube, clock, text               |
 * | 7   | node, events, config, hooks                | kube, notify, http, window, selector          |
 * | 8   | kube, notify, fleetlock, host, silence     | http, clock, log, text                        |
 * | 9   | http                                       | clock, text                                   |
 * | 10  | text, clock, log, selector, window, pause, | nothing                                       |
 * |     | volumes, cel                               |                                               |
 *
 * capacity/ (issue 57) is the one room for "how many may be out, and who": the lock, the coordinator
 * and the agent ask it, and it asks nothing of them.
 *
 * A new folder goes on a row before its first import; moving a folder up is a change of design.
 * Files directly under the root, outside any folder, are not ranked.
 */
const LAYERS = [
  ['cli'],
  ['sim'],
  ['agent', 'coordinator'],
  ['blockers', 'sentinel', 'server', 'admission'],
  ['queue'],
  ['lock', 'drain', 'metrics', 'reboot', 'migrate'],
  ['capacity'],
  ['node', 'events', 'config', 'hooks'],
  ['kube', 'notify', 'fleetlock', 'host', 'silence'],
  ['http'],
  ['text', 'clock', 'log', 'selector', 'window', 'pause', 'volumes', 'cel'],
];
const ROW = new Map(LAYERS.flatMap((folders, row) => folders.map((folder) => [folder, row])));

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

/**
 * The problems of the modules under `root` (cycles, back-arrows, unranked folders, watches outside
 * the reflector), each as the line the command prints, and how many modules it read. Paths are
 * named relative to the working directory.
 */
export function checkImports(root) {
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

  /** The top-level folder of `file` under the root; undefined for a file directly under it. */
  function folderOf(file) {
    const parts = relative(root, file).split(sep);
    return parts.length > 1 ? parts[0] : undefined;
  }

  const problems = cycles.map((c) => `import cycle: ${c.join(' <-> ')}`);
  const unranked = new Set();
  for (const [from, imports] of graph) {
    const upper = folderOf(from);
    if (upper === undefined) continue;
    if (!ROW.has(upper)) unranked.add(upper);
    for (const to of imports) {
      const lower = folderOf(to);
      if (lower === undefined || lower === upper || !ROW.has(upper) || !ROW.has(lower)) continue;
      if (ROW.get(lower) <= ROW.get(upper)) {
        const where = ROW.get(lower) === ROW.get(upper) ? 'beside' : 'above';
        problems.push(
          `back-arrow: ${relative(process.cwd(), from)} imports ${relative(process.cwd(), to)} ` +
            `(${lower}/ is drawn ${where} ${upper}/ in LAYERS, scripts/check-imports.mjs)`,
        );
      }
    }
  }
  for (const folder of unranked) {
    problems.push(`unranked folder: ${folder}/ is on no row of LAYERS in scripts/check-imports.mjs`);
  }

  // One reflector (issue 43): the Kube interface's watch methods are called only by the ListWatches of
  // src/kube/list-watch.ts, so that every watch gets the reflector's back-off, relist and blindness.
  // Classes that implement Kube themselves, or extend ForwardingKube (wrappers that delegate each
  // call), may pass a call on.
  const kubeInterfaceFile = join(root, 'kube', 'kube.ts');
  const kubeInterface = known.has(kubeInterfaceFile) ? readFileSync(kubeInterfaceFile, 'utf8') : '';
  const watchMethods = [...kubeInterface.matchAll(/^\s+(watch[A-Z]\w*)\(/gm)].map((m) => m[1]);
  const reflectorHome = join(root, 'kube', 'list-watch.ts');
  for (const file of all) {
    if (file === reflectorHome) continue;
    const text = readFileSync(file, 'utf8');
    if (/\bimplements\s+Kube\b|\bextends\s+ForwardingKube\b/.test(text)) continue;
    for (const method of watchMethods) {
      if (new RegExp(`\\.${method}\\s*\\(`).test(text))
        problems.push(
          `watch outside the reflector: ${relative(process.cwd(), file)} calls ${method}; follow it with a Reflector over a ListWatch of src/kube/list-watch.ts`,
        );
    }
  }
  problems.push(...roomDecidedOutside(root, all));
  return { problems, modules: all.length };
}

/**
 * Only src/capacity/ decides room (issue 57): no module elsewhere resolves a budget ("N or N%": it
 * reads a share only through capacity/, or config/ where the flags are parsed and printed), nor
 * compares a count of holders with the slots (capacity's allTaken and roomFor do). The simulator's
 * observer is exempt: it judges the outcome on its own count, on purpose, as a test would.
 */
const ROOM_HOME = ['capacity', 'config'];
const ROOM_EXEMPT = ['sim'];
const SHARE_READ = /'percent'\s+in\b|\.percent\b/;
const SLOT_COMPARE =
  /\.(length|size)\s*(>=|<=|<|>)\s*[\w.]*\b(slots|concurrency)\b|\b(slots|concurrency)\s*(>=|<=|<|>)\s*[\w.]*\.(length|size)\b/;

function roomDecidedOutside(root, all) {
  const problems = [];
  for (const file of all) {
    const folder = relative(root, file).split(sep)[0];
    if (ROOM_HOME.includes(folder) || ROOM_EXEMPT.includes(folder)) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '');
      const what = SHARE_READ.test(code)
        ? "reads a budget's share"
        : SLOT_COMPARE.test(code)
          ? 'compares a count with the slots'
          : undefined;
      if (what !== undefined)
        problems.push(
          `room decided outside src/capacity/: ${relative(process.cwd(), file)}:${i + 1} ${what}; ask src/capacity/ (budget.ts, room.ts)`,
        );
    });
  }
  return problems;
}

/** As `npm run lint` runs it: `node scripts/check-imports.mjs [DIR]` (default src), exit 1 naming each problem. */
function main() {
  const root = resolve(process.argv[2] ?? 'src');
  const { problems, modules } = checkImports(root);
  if (problems.length > 0) {
    for (const p of problems) console.error(p);
    process.exit(1);
  }
  console.log(
    `no import cycles and no back-arrows among ${modules} modules under ${relative(process.cwd(), root)}`,
  );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
