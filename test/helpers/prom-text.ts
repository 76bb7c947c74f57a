/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4): every line is a
 * comment, a HELP or TYPE line, or a sample; names, label syntax, escapes and values are checked,
 * each family's TYPE precedes its samples, and histograms are consistent (cumulative buckets,
 * le="+Inf" equal to _count). Throws on the first violation.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseValue(s: string, line: number): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  // Prometheus reads values with Go's strconv.ParseFloat, which takes NaN in any letter case;
  // prom-client writes an empty summary (event-loop lag before its first sample) as "Nan"
  if (/^nan$/i.test(s)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`line ${line}: bad value "${s}"`);
  return Number(s);
}

function parseLabels(s: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < s.length) {
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`line ${line}: label without =`);
    const name = s.slice(i, eq).trim();
    if (!LABEL.test(name)) throw new Error(`line ${line}: bad label name "${name}"`);
    if (s[eq + 1] !== '"') throw new Error(`line ${line}: label value not quoted`);
    let j = eq + 2;
    let value = '';
    for (; j < s.length && s[j] !== '"'; j++) {
      if (s[j] === '\\') {
        const n = s[++j];
        if (n === 'n') value += '\n';
        else if (n === '\\' || n === '"') value += n;
        else throw new Error(`line ${line}: bad escape \\${n}`);
      } else value += s[j];
    }
    if (s[j] !== '"') throw new Error(`line ${line}: unterminated label value`);
    if (name in labels) throw new Error(`line ${line}: label ${name} twice`);
    labels[name] = value;
    i = j + 1;
    if (s[i] === ',') i++;
    else if (i < s.length) throw new Error(`line ${line}: expected , between labels`);
  }
  return labels;
}

const familyOf = (sample: string, families: Map<string, Family>) => {
  if (families.has(sample)) return families.get(sample)!;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sample.endsWith(suffix)) {
      const f = families.get(sample.slice(0, -suffix.length));
      if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
    }
  }
  return undefined;
};

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  text
    .slice(0, -1)
    .split('\n')
    .forEach((raw, idx) => {
      const line = idx + 1;
      if (raw === '') return;
      const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
      if (meta) {
        const [, kind, name, rest] = meta;
        if (!NAME.test(name)) throw new Error(`line ${line}: bad metric name ${name}`);
        const f = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
        if (kind === 'TYPE') {
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`line ${line}: bad type ${rest}`);
          if (f.samples.length) throw new Error(`line ${line}: TYPE after samples of ${name}`);
          f.type = rest;
        } else f.help = rest;
        families.set(name, f);
        return;
      }
      if (raw.startsWith('#')) return;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(raw);
      if (!m) throw new Error(`line ${line}: not a sample: ${raw}`);
      const [, name, labelText, value] = m;
      const f = familyOf(name, families);
      if (!f) throw new Error(`line ${line}: sample ${name} without a TYPE`);
      f.samples.push({ name, labels: labelText ? parseLabels(labelText, line) : {}, value: parseValue(value, line) });
    });
  for (const f of families.values()) {
    if (f.type === 'counter') for (const s of f.samples) if (!(s.value >= 0)) throw new Error(`${f.name}: negative counter`);
    if (f.type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of f.samples.filter((x) => x.name.endsWith('_bucket'))) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      const k = JSON.stringify(rest);
      series.set(k, [...(series.get(k) ?? []), s]);
    }
    for (const [k, buckets] of series) {
      for (let i = 1; i < buckets.length; i++)
        if (buckets[i].value < buckets[i - 1].value) throw new Error(`${f.name} ${k}: buckets not cumulative`);
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      const count = f.samples.find((s) => s.name === `${f.name}_count` && JSON.stringify(s.labels) === k);
      if (!inf || !count || inf.value !== count.value) throw new Error(`${f.name} ${k}: +Inf bucket differs from _count`);
    }
  }
  return families;
}

/** The value of the sample with these labels (0 when absent). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const f = familyOf(name, families);
  const s = f?.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}
