/**
 * The log test's scanner (issue 7): every line of every `*.log` file in a directory is searched for
 * every secret listed in its `secrets.txt` (one a line, written by the test helpers, see
 * test/helpers/log-sink.ts) and for anything that looks like a bearer token (a JWT `eyJ…`, a
 * personal access token `qmp_…`). One pass over the files with one combined regular expression.
 * Secrets shorter than MIN_SECRET characters are skipped (they would match ordinary words).
 *
 * Run alone: `node --import tsx scripts/log-scan.ts DIR` (exit 1 on any hit). scripts/test.ts calls
 * scanLogs after the suite.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const MIN_SECRET = 8;
const TOKEN_PATTERNS = [/eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/.source, /qmp_[A-Za-z0-9_-]{8,}/.source];

export interface LogHit {
  file: string;
  line: number;
  match: string;
}

export interface LogScan {
  files: number;
  lines: number;
  /** distinct secrets searched for */
  secrets: number;
  /** distinct secrets too short to search for */
  skipped: number;
  hits: LogHit[];
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Shows where a secret was found without printing it whole. */
function masked(s: string): string {
  return s.length <= 8 ? `${s.slice(0, 2)}…` : `${s.slice(0, 4)}…${s.slice(-2)} (${s.length} chars)`;
}

export function scanLogs(dir: string): LogScan {
  const secretsFile = path.join(dir, 'secrets.txt');
  const all = new Set(fs.existsSync(secretsFile) ? fs.readFileSync(secretsFile, 'utf8').split('\n').filter(Boolean) : []);
  const secrets = [...all].filter((s) => s.length >= MIN_SECRET);
  // longest first, so a secret containing another is reported whole
  secrets.sort((a, b) => b.length - a.length);
  const re = new RegExp([...secrets.map(escape), ...TOKEN_PATTERNS].join('|'), 'g');
  const result: LogScan = { files: 0, lines: 0, secrets: secrets.length, skipped: all.size - secrets.length, hits: [] };
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.log')) continue;
    result.files++;
    const lines = fs.readFileSync(path.join(dir, name), 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    result.lines += lines.length;
    lines.forEach((text, i) => {
      for (const m of text.matchAll(re)) result.hits.push({ file: name, line: i + 1, match: masked(m[0]) });
    });
  }
  return result;
}

/** The report's lines: the figures, then each hit as file:line. */
export function describeScan(scan: LogScan): string[] {
  const out = [
    `log scan: ${scan.lines} log lines in ${scan.files} files, ${scan.secrets} secrets checked` +
      (scan.skipped > 0 ? ` (${scan.skipped} shorter than ${MIN_SECRET} characters skipped)` : '') +
      `, ${scan.hits.length} found`,
  ];
  for (const h of scan.hits.slice(0, 50)) out.push(`  ${h.file}:${h.line}: ${h.match}`);
  if (scan.hits.length > 50) out.push(`  … and ${scan.hits.length - 50} more`);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: log-scan.ts DIR');
    process.exit(2);
  }
  const scan = scanLogs(dir);
  for (const line of describeScan(scan)) console.error(line);
  process.exit(scan.hits.length > 0 ? 1 : 0);
}
