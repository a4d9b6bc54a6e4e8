/**
 * The dependency rule (README, "Layout"), checked over every relative `import` / `export … from` /
 * `import('…')` in src/, runner/ and gateway/, parsed with the TypeScript compiler API:
 *
 * - the **shared layer** (src/ except src/cli, src/dev and src/executor) imports no role and not the root;
 * - a **role** (runner/, gateway/, src/executor/) imports the shared layer and itself, never another role
 *   and never the root;
 * - only the **composition root** (src/cli, src/dev) imports roles;
 * - no file takes part in an import cycle (strongly connected components of the file graph, type-only
 *   imports included: a cycle of types is still a cycle for the reader);
 * - no area (a folder under src/ or runner/, or gateway/) takes part in a cycle of areas either, so
 *   runner/sandbox and runner/builtins, say, cannot each reach into the other through different files.
 *
 * And surfaces (README, "Layout"): an `index.ts` is the way into its area or does not exist:
 * - the shared layer has no `index.ts`: its files are imported by name, the direction keeps it in order;
 * - an area's `index.ts` (or a second entry named in ENTRIES) is the only file other areas import from it;
 * - the composition root reaches a role only through such an entry;
 * - an area's `index.ts` is imported from outside the area (no dead surface).
 *
 * Edges against the rule that cannot be removed yet are listed in ALLOWED with the reason; an entry that no
 * longer matches an edge fails too, so the list only shrinks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

// Compiled to dist/test/architecture: the repository root is three levels up.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

type Layer = 'shared' | 'root' | 'runner' | 'gateway' | 'executor';

/** The layer of a repository-relative path (forward slashes). */
export function layerOf(file: string): Layer {
  if (file.startsWith('runner/')) return 'runner';
  if (file.startsWith('gateway/')) return 'gateway';
  if (file.startsWith('src/executor/')) return 'executor';
  if (file.startsWith('src/cli/') || file.startsWith('src/dev/') || file.startsWith('bin/')) return 'root';
  return 'shared';
}

const ROLES: ReadonlySet<Layer> = new Set(['runner', 'gateway', 'executor']);

/** Why an edge from one layer to another is against the rule, or undefined when it is allowed. */
export function violation(from: Layer, to: Layer): string | undefined {
  if (from === to) return undefined;
  if (to === 'root') return `${from} imports the composition root`;
  if (from === 'shared' && ROLES.has(to)) return `the shared layer imports the ${to} role`;
  if (ROLES.has(from) && ROLES.has(to)) return `the ${from} role imports the ${to} role`;
  return undefined;
}

/** Edges against the rule that stay for now, `from -> to`, each with its reason (none today). */
const ALLOWED: ReadonlyMap<string, string> = new Map();

/**
 * Files other areas may import besides the area's `index.ts`. runner/builtins/guest-boundary.ts is the
 * contract the sandbox and the built-ins share; importing it must not load the concrete table (index.ts).
 * runner/config/egress-allow-list.ts is the syntax of LDBOX_EGRESS_ALLOW that the runner's config and its
 * egress guard (runner/builtins/http, in every worker) share; importing it must not load the config
 * loader (index.ts). The gateway's and the executor's config modules are the CLI's way to their settings.
 */
const ENTRIES: ReadonlySet<string> = new Set([
  'runner/builtins/guest-boundary.ts',
  'runner/config/egress-allow-list.ts',
  // The settings lists the CLI prints for --help and checks LDBOX_* variables against: reading them must
  // not load the role (src/cli/known-settings.ts; `ldbox --help` answers without a role, the pool or NATS).
  'gateway/gateway-config.ts',
  'src/executor/executor-config.ts',
]);

/** Ways into a role from the composition root that are not an entry, with the reason (none today). */
const ROOT_EDGES_ALLOWED: ReadonlyMap<string, string> = new Map();

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const slash = (p: string) => p.split(sep).join('/');

/** Every relative module specifier of a file: import and export declarations, `import type`, `import()`. */
export function relativeSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((s) => s.startsWith('.'));
}

/** The import graph of src/, runner/ and gateway/: repository-relative `.ts` paths. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of ['src', 'runner', 'gateway'].flatMap((area) => sourceFiles(join(root, area)))) {
    const from = slash(relative(root, file));
    const targets = relativeSpecifiers(file, readFileSync(file, 'utf8')).map((s) => slash(relative(root, resolve(dirname(file), s))).replace(/\.js$/, '.ts'));
    graph.set(from, [...new Set(targets)]);
  }
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return found;
}

/** One cycle through the first file of a component, as `a -> b -> … -> a`, so the failure names the edges. */
function describeCycle(graph: ReadonlyMap<string, readonly string[]>, component: readonly string[]): string {
  const members = new Set(component);
  const start = component[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start].join(' -> ');
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return component.join(', ');
}

const graph = importGraph();

/** The area of a file: `runner/sandbox`, `src/config`, `gateway` (files directly in a top folder). */
export function areaOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/**
 * The graph of areas: an edge where some file of one imports some file of the other. ALLOWED edges, if
 * any, are left out: they are known to point the wrong way and each is already listed with its reason.
 */
function areaGraph(files: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const areas = new Map<string, Set<string>>();
  for (const [from, targets] of files) {
    const a = areaOf(from);
    if (!areas.has(a)) areas.set(a, new Set());
    for (const to of targets) if (areaOf(to) !== a && !ALLOWED.has(`${from} -> ${to}`)) areas.get(a)!.add(areaOf(to));
  }
  return new Map([...areas].map(([a, targets]) => [a, [...targets].sort()]));
}

/** The file edges behind one area edge, for the failure message. */
function filesBehind(from: string, to: string): string[] {
  return [...graph].flatMap(([f, targets]) => (areaOf(f) === from ? targets.filter((x) => areaOf(x) === to).map((x) => `${f} -> ${x}`) : []));
}

t.test('the scan reads the import graph', async (t) => {
  t.ok(graph.size >= 150, `${graph.size} files`);
  t.ok(graph.get('src/cli/main.ts')?.includes('runner/server/index.ts'), 'the root imports the runner');
  t.same(
    relativeSpecifiers(
      'x.ts',
      "import type { A } from './a.js';\nexport * from '../b.js';\nconst m = await import('./c.js');\nlet x: import('./d.js').D;\nimport 'node:fs';",
    ),
    ['./a.js', '../b.js', './c.js', './d.js'],
  );
});

t.test('the layers', async (t) => {
  t.equal(layerOf('src/config/nats-config.ts'), 'shared');
  t.equal(layerOf('runner/config/runner-config.ts'), 'runner');
  t.equal(layerOf('gateway/gateway-config.ts'), 'gateway');
  t.equal(layerOf('src/executor/executor-config.ts'), 'executor');
  t.equal(layerOf('src/cli/known-settings.ts'), 'root');
  t.equal(layerOf('src/executor/run-execution.ts'), 'executor');
  t.equal(layerOf('src/cli/main.ts'), 'root');
  t.equal(layerOf('src/dev/dev-command.ts'), 'root');
  t.equal(layerOf('runner/pool/worker.ts'), 'runner');
  t.equal(layerOf('gateway/control-plane.ts'), 'gateway');
  t.equal(areaOf('runner/builtins/http/egress-guard.ts'), 'runner/builtins');
  t.equal(areaOf('gateway/control-plane.ts'), 'gateway');
  t.equal(violation('shared', 'runner'), 'the shared layer imports the runner role');
  t.equal(violation('executor', 'runner'), 'the executor role imports the runner role');
  t.equal(violation('gateway', 'root'), 'gateway imports the composition root');
  t.equal(violation('root', 'gateway'), undefined);
  t.equal(violation('runner', 'shared'), undefined);
});

t.test('every edge follows the dependency rule', async (t) => {
  const against: string[] = [];
  const used = new Set<string>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const why = violation(layerOf(from), layerOf(to));
      if (why === undefined) continue;
      const edge = `${from} -> ${to}`;
      if (ALLOWED.has(edge)) used.add(edge);
      else against.push(`${edge} (${why})`);
    }
  }
  t.same(against, [], 'edges against the rule:\n' + against.join('\n'));
  t.same(
    [...ALLOWED.keys()].filter((edge) => !used.has(edge)),
    [],
    'allowed exceptions that no longer occur (remove them from ALLOWED)',
  );
});

t.test('no import cycles', async (t) => {
  const found = cycles(graph).map((component) => describeCycle(graph, component));
  t.same(found, [], 'cycles:\n' + found.join('\n'));
});

t.test('no cycles between areas', async (t) => {
  const areas = areaGraph(graph);
  const found = cycles(areas).map((component) => {
    const cycle = describeCycle(areas, component);
    const steps = cycle.split(' -> ');
    const edges = steps.slice(1).flatMap((to, i) => filesBehind(steps[i]!, to));
    return `${cycle}\n  ${edges.join('\n  ')}`;
  });
  t.same(found, [], 'area cycles:\n' + found.join('\n'));
});

t.test('surfaces', async (t) => {
  const files = [...graph.keys()];
  const isAreaIndex = (f: string) => f === `${areaOf(f)}/index.ts`;
  const indexed = new Set(files.filter(isAreaIndex).map(areaOf));
  t.same(
    files.filter((f) => f.endsWith('/index.ts') && layerOf(f) === 'shared'),
    [],
    'the shared layer has no index.ts',
  );
  const past: string[] = [];
  const rootEdges: string[] = [];
  const usedRoot = new Set<string>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const edge = `${from} -> ${to}`;
      if (areaOf(from) === areaOf(to) || ALLOWED.has(edge)) continue;
      const entry = isAreaIndex(to) || ENTRIES.has(to);
      if (indexed.has(areaOf(to)) && !entry) past.push(edge);
      if (layerOf(from) === 'root' && ROLES.has(layerOf(to)) && !entry) {
        if (ROOT_EDGES_ALLOWED.has(edge)) usedRoot.add(edge);
        else rootEdges.push(edge);
      }
    }
  }
  t.same(past, [], 'imports past an index.ts:\n' + past.join('\n'));
  t.same(rootEdges, [], 'the composition root reaches into a role:\n' + rootEdges.join('\n'));
  t.same(
    [...ROOT_EDGES_ALLOWED.keys()].filter((e) => !usedRoot.has(e)),
    [],
    'ROOT_EDGES_ALLOWED entries that no longer occur',
  );
  const imported = new Set([...graph].flatMap(([from, targets]) => targets.filter((to) => areaOf(to) !== areaOf(from))));
  t.same(
    files.filter((f) => isAreaIndex(f) && !imported.has(f)),
    [],
    'index.ts files nothing outside their area imports',
  );
});

t.test('the cycle finder', async (t) => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a', 'd']],
    ['d', []],
    ['e', ['e']],
  ]);
  t.same(cycles(g), [['a', 'b', 'c'], ['e']]);
  t.equal(describeCycle(g, ['a', 'b', 'c']), 'a -> b -> c -> a');
});
