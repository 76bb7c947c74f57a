/**
 * The layering and dependency checks run by `npm run lint` (`node --import tsx scripts/check-layers.ts`).
 *
 * Layers (README "Architecture"): the HTTP surfaces (src/http, src/mate-api, src/people-api, src/web)
 * and the composition files (src/app.ts, src/main.ts, src/services.ts, src/cluster.ts) sit above the domain, which is
 * every other folder and file under src/. It fails when
 * - domain code imports fastify or @fastify/*, an HTTP surface or a composition file;
 * - src/lib imports anything under src/ outside src/lib;
 * - imports form a cycle, between folders (src/tasks → src/processes → src/tasks) or between files;
 * - a dependency of package.json is used nowhere (see UNUSED_ALLOWED for the declared exceptions).
 *
 * The web app (web/src, README "Architecture") is held to the same cycle check, its folders being the
 * ones directly under web/src (pages, components, api, lib) and its top files (router.tsx, main.tsx):
 * a page that imported the router, which imports the pages, is a cycle. It also fails when
 * - web/src/lib imports anything under web/src outside web/src/lib (it is the ground floor);
 * - a file under web/src imports a file outside web/src by a relative path (the server's code is
 *   not the app's, and the client package is imported by its name, @queuemate/client).
 *
 * Imports are read with the TypeScript compiler's pre-processor (static, type-only, dynamic and
 * re-exports alike), so a string that merely looks like an import in a comment does not count.
 */
import ts from 'typescript';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folders under src/ that are HTTP surfaces: only they (and the composition files) may speak HTTP. */
const SURFACES = ['http', 'mate-api', 'people-api', 'web'];
/** Files directly under src/ that assemble the layers. */
const COMPOSITION = ['app.ts', 'main.ts', 'services.ts', 'cluster.ts'];

/**
 * Dependencies no source file imports, each with its reason. Remove an entry when code imports the
 * package (the check then says so), or drop the dependency.
 */
export const UNUSED_ALLOWED: Record<string, string> = {
  'axe-core': 'read as a file (axe.min.js) and injected into the page by the browser tests, never imported',
  'light-my-request':
    "fastify's own dependency, pinned to 6.6.x so npm resolves a version that runs on Node.js 20: 6.8 needs cookie 2, whose engines field asks for Node.js 22 and makes npm install warn",
};

const SOURCE_EXTENSIONS = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'data', 'coverage', '.git']);

/** Every file under `dir` (relative to `root`, with forward slashes) whose name matches `pattern`. */
export function listFiles(root: string, dir: string, pattern: RegExp): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const abs = path.join(root, rel);
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const child = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(child);
      } else if (pattern.test(e.name)) out.push(child);
    }
  };
  walk(dir);
  return out.sort();
}

/** The module specifiers a source file imports (static, type-only, dynamic, require, re-exports). */
export function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** A relative specifier resolved to a file under root ('src/tasks/take.ts'), or null when it names none. */
function resolveRelative(root: string, from: string, spec: string): string | null {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  const candidates = [
    base,
    base.replace(/\.(m|c)?js$/, '.$1ts'),
    base.replace(/\.js$/, '.tsx'),
    `${base}.ts`,
    `${base}.tsx`,
    `${base}/index.ts`,
    `${base}/index.tsx`,
  ];
  for (const c of candidates) if (fs.existsSync(path.join(root, c)) && fs.statSync(path.join(root, c)).isFile()) return c;
  return null;
}

/** The package a bare specifier names ('@fastify/static/x' → '@fastify/static'), null for node: builtins. */
export function packageOf(spec: string): string | null {
  if (spec.startsWith('node:')) return null;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The web app's sources: the tree that web/src holds. */
const WEB = 'web/src';

/** The tree a file belongs to: 'src' or 'web/src'. */
function treeOf(file: string): string {
  return file.startsWith(`${WEB}/`) ? WEB : 'src';
}

/**
 * The folder (or top file) of its tree a file counts in for the folder cycles: 'src/tasks/take.ts' →
 * 'src/tasks', 'src/app.ts' → 'src/app.ts', 'web/src/pages/queue/QueuePage.tsx' → 'web/src/pages'.
 */
function unitOf(file: string): string {
  const tree = treeOf(file);
  const parts = file.slice(tree.length + 1).split('/');
  return parts.length > 1 ? `${tree}/${parts[0]}` : file;
}

function isSurface(file: string): boolean {
  const parts = file.split('/');
  return parts.length > 2 && SURFACES.includes(parts[1]);
}

function isComposition(file: string): boolean {
  return COMPOSITION.some((c) => file === `src/${c}`);
}

function isDomain(file: string): boolean {
  return file.startsWith('src/') && !isSurface(file) && !isComposition(file);
}

/** The problems of one import of the web app (its cycles are found with the server's). */
function webImportProblem(file: string, target: string): string | null {
  if (!target.startsWith(`${WEB}/`)) {
    return `${file}: imports ${target}, outside ${WEB} (the app imports the client by its package name, @queuemate/client, and never the server's code)`;
  }
  if (file.startsWith(`${WEB}/lib/`) && !target.startsWith(`${WEB}/lib/`)) {
    return `${file}: ${WEB}/lib imports ${target} (${WEB}/lib imports nothing of the app outside ${WEB}/lib)`;
  }
  return null;
}

/** Every cycle of a directed graph, one per strongly connected component, as a path a → b → … → a. */
export function findCycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) strong(v);

  // one concrete cycle through each component: breadth-first from its first node back to it
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0];
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of [...(graph.get(v) ?? [])].sort()) {
        if (!members.has(w)) continue;
        if (w === start) {
          const cycle = [v];
          while (cycle[0] !== start) cycle.unshift(previous.get(cycle[0])!);
          return [...cycle, start];
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    return [start, start];
  });
}

/** The layering problems of the tree at `root`, one line each; [] when it is clean. */
export function checkLayers(root: string): string[] {
  const problems: string[] = [];
  const fileGraph = new Map<string, Set<string>>();
  const unitGraph = new Map<string, Set<string>>();
  const edge = (g: Map<string, Set<string>>, a: string, b: string) => {
    if (!g.has(a)) g.set(a, new Set());
    g.get(a)!.add(b);
  };

  const files = [...listFiles(root, 'src', /\.ts$/), ...listFiles(root, WEB, /\.tsx?$/)];
  for (const file of files) {
    if (file.endsWith('.d.ts')) continue;
    fileGraph.set(file, fileGraph.get(file) ?? new Set());
    const web = treeOf(file) === WEB;
    for (const spec of importsOf(fs.readFileSync(path.join(root, file), 'utf8'))) {
      if (web && !spec.startsWith('.')) continue;
      if (!spec.startsWith('.')) {
        const pkg = packageOf(spec);
        if (isDomain(file) && pkg !== null && (pkg === 'fastify' || pkg.startsWith('@fastify/'))) {
          problems.push(`${file}: domain code imports '${spec}' (only the HTTP surfaces may use Fastify)`);
        }
        continue;
      }
      const target = resolveRelative(root, file, spec);
      if (target === null) {
        problems.push(`${file}: '${spec}' names no file`);
        continue;
      }
      if (web) {
        const problem = webImportProblem(file, target);
        if (problem !== null) {
          problems.push(problem);
          continue;
        }
        edge(fileGraph, file, target);
        if (unitOf(file) !== unitOf(target)) edge(unitGraph, unitOf(file), unitOf(target));
        continue;
      }
      if (!target.startsWith('src/')) continue;
      if (isDomain(file) && (isSurface(target) || isComposition(target))) {
        problems.push(`${file}: domain code imports ${target} (an HTTP surface or the composition; arrows run from the surfaces down)`);
      }
      if (file.startsWith('src/lib/') && !target.startsWith('src/lib/')) {
        problems.push(`${file}: src/lib imports ${target} (src/lib imports nothing outside src/lib)`);
      }
      edge(fileGraph, file, target);
      if (unitOf(file) !== unitOf(target)) edge(unitGraph, unitOf(file), unitOf(target));
    }
  }
  for (const cycle of findCycles(unitGraph)) problems.push(`import cycle between folders: ${cycle.join(' → ')}`);
  for (const cycle of findCycles(fileGraph)) problems.push(`import cycle between files: ${cycle.join(' → ')}`);
  return problems;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
  workspaces?: string[];
}

function readJson<T>(file: string): T | null {
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as T) : null;
}

/** The command names a package installs (its package.json `bin`), read from node_modules when present. */
function binsOf(root: string, pkg: string): string[] {
  const manifest = readJson<{ bin?: string | Record<string, string> }>(path.join(root, 'node_modules', pkg, 'package.json'));
  if (!manifest?.bin) return [];
  return typeof manifest.bin === 'string' ? [pkg.split('/').pop()!] : Object.keys(manifest.bin);
}

/**
 * Dependencies of the root package.json used nowhere: not imported by any source file (src, test,
 * bench, scripts, web, client) and not named by a package.json script, unless listed in `allowed`.
 * `@types/x` counts as used when `x` is (`@types/node` when a node: builtin is imported).
 */
export function checkDependencies(root: string, allowed: Record<string, string> = UNUSED_ALLOWED): string[] {
  const manifest = readJson<PackageJson>(path.join(root, 'package.json'));
  if (!manifest) return ['package.json is missing'];
  const declared = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.devDependencies ?? {})];

  const imported = new Set<string>();
  let usesBuiltins = false;
  for (const dir of ['src', 'test', 'bench', 'scripts', 'web', 'client']) {
    for (const file of listFiles(root, dir, SOURCE_EXTENSIONS)) {
      for (const spec of importsOf(fs.readFileSync(path.join(root, file), 'utf8'))) {
        if (spec.startsWith('.') || spec.startsWith('/')) continue;
        const pkg = packageOf(spec);
        if (pkg === null) usesBuiltins = true;
        else imported.add(pkg);
      }
    }
  }
  const manifests = [manifest, ...(manifest.workspaces ?? []).map((w) => readJson<PackageJson>(path.join(root, w, 'package.json')))];
  const scripts = manifests.flatMap((m) => Object.values(m?.scripts ?? {})).join('\n');
  const named = (word: string) =>
    new RegExp(`(^|[\\s"'=(&|;])${word.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}($|[\\s"'/&|;)])`, 'm').test(scripts);
  const used = (pkg: string): boolean => {
    if (imported.has(pkg) || named(pkg) || binsOf(root, pkg).some(named)) return true;
    if (pkg.startsWith('@types/')) {
      const typed = pkg.slice('@types/'.length).replace(/^(.+)__(.+)$/, '@$1/$2');
      return typed === 'node' ? usesBuiltins : used(typed);
    }
    return false;
  };

  const problems: string[] = [];
  for (const pkg of declared) {
    if (used(pkg)) {
      if (pkg in allowed) problems.push(`${pkg} is used now: remove it from the exceptions in scripts/check-layers.ts`);
    } else if (!(pkg in allowed)) {
      problems.push(`${pkg} is declared in package.json but used nowhere (drop it, or list it in UNUSED_ALLOWED with the reason)`);
    }
  }
  for (const pkg of Object.keys(allowed)) {
    if (!declared.includes(pkg)) problems.push(`${pkg} is listed in UNUSED_ALLOWED but not declared in package.json`);
  }
  return problems;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? process.cwd();
  const problems = [...checkLayers(root), ...checkDependencies(root)];
  for (const p of problems) console.error(`check-layers: ${p}`);
  process.exit(problems.length > 0 ? 1 : 0);
}
