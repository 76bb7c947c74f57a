/**
 * Sums a V8 CPU profile (`node --cpu-prof`, a .cpuprofile file) by self time: the top functions,
 * and the totals by where the code lives (a package under node_modules, a file of src/, Node's
 * own modules, V8's pseudo-frames such as (garbage collector)). Idle time is left out of the
 * shares: what is summed is the time the process was busy.
 *
 *   node --import tsx bench/profile-summary.ts FILE.cpuprofile [--top N] [--per COUNT]
 *     --top N      how many functions and places to list (default 25)
 *     --per COUNT  also print each line's time divided by COUNT (e.g. life cycles: ms per cycle)
 *     --skip S     leave out the first S seconds of the profile (start-up, module loading, warm-up)
 *     --callers NAME  the call paths (--depth frames, default 6) that spent self time in functions named NAME
 *     --inclusive  also the total time by function, callees included (synchronous callees only: an
 *                  async function's continuations are counted under the microtask queue)
 *
 * A sample is taken on a wall-clock timer: on a loaded machine a process waiting for a core after a
 * system call (a socket write waking PostgreSQL) has that wait counted in the call (writev), so
 * compare the JavaScript shares with one another, and take the process's CPU time from
 * /proc (bench/server-cpu.ts), not from here.
 */
import fs from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const file = argv.find((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
if (!file) {
  console.error('profile-summary: name a .cpuprofile file (see the header)');
  process.exit(2);
}
const TOP = Number(opt('top') ?? 25);
const PER = opt('per') ? Number(opt('per')) : null;

const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** Where a frame's code lives: a package, a file of the project, a Node module or a V8 pseudo-frame. */
function place(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const src = url.search(/\/(src|dist\/src)\//);
  return src >= 0 ? url.slice(src + 1).replace(/^dist\//, '') : url;
}

const SKIP_US = Number(opt('skip') ?? 0) * 1e6;
const selfUs = new Map<number, number>();
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at < SKIP_US) continue;
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}

const byFunction = new Map<string, number>();
const byPlace = new Map<string, number>();
let busy = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  if (functionName === '(idle)') {
    idle += us;
    continue;
  }
  busy += us;
  const where = place(url, functionName);
  const fn = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  byPlace.set(where, (byPlace.get(where) ?? 0) + us);
}

const ms = (us: number) => (us / 1000).toFixed(1).padStart(9);
const share = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
const per = (us: number) => (PER ? `${(us / 1000 / PER).toFixed(4).padStart(9)} ms/each` : '');
const table = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${ms(us)} ms ${share(us)} ${per(us)}  ${k}`);
};

console.log(
  `${file}: busy ${ms(busy).trim()} ms, idle ${ms(idle).trim()} ms${PER ? `; busy per each of ${PER}: ${(busy / 1000 / PER).toFixed(4)} ms` : ''}`,
);
table('self time by function', byFunction);
table('self time by place (package, project file, Node module)', byPlace);

const CALLERS = opt('callers');
if (CALLERS) {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const paths = new Map<string, number>();
  for (const [id, us] of selfUs) {
    if (byId.get(id)!.callFrame.functionName !== CALLERS) continue;
    const frames: string[] = [];
    for (let p = parent.get(id); p !== undefined && frames.length < Number(opt('depth') ?? 6); p = parent.get(p)) {
      const f = byId.get(p)!.callFrame;
      frames.push(`${f.functionName || '(anonymous)'} ${place(f.url, f.functionName)}:${f.lineNumber + 1}`);
    }
    const k = frames.join(' < ');
    paths.set(k, (paths.get(k) ?? 0) + us);
  }
  table(`callers of ${CALLERS}`, paths);
}

if (argv.includes('--inclusive')) {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const total = new Map<string, number>();
  for (const [id, us] of selfUs) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const seen = new Set<string>();
    for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
      const f = byId.get(p)!.callFrame;
      const k = `${f.functionName || '(anonymous)'}  ${place(f.url, f.functionName)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + us);
    }
  }
  table('total time by function (self and callees)', total);
}
