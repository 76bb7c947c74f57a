/**
 * The generated parts of docs/people-api.md: the permission table (permissions.ts), the status of
 * each error code (status.ts) and every route with its permission, roles and a curl example.
 * test/people-docs.test.ts keeps the document equal to them; regenerate with
 * `node --import tsx src/people-api/reference.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PERMISSIONS, rolesOf, type Permission } from './permissions.js';
import { PEOPLE_API_STATUS } from './status.js';
import type { PeopleRoute } from './route.js';

export const BEGIN = (name: string) => `<!-- generated:${name} (src/people-api/reference.ts) -->`;
export const END = (name: string) => `<!-- end:${name} -->`;

export function permissionTable(): string {
  const lines = ['| permission | roles |', '| --- | --- |'];
  for (const p of Object.keys(PERMISSIONS) as Permission[]) lines.push(`| \`${p}\` | ${rolesOf(p)} |`);
  return lines.join('\n');
}

export function statusTable(): string {
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(PEOPLE_API_STATUS)) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  const lines = ['| status | codes |', '| --- | --- |'];
  for (const status of [...byStatus.keys()].sort((a, b) => a - b))
    lines.push(
      `| ${status} | ${byStatus
        .get(status)!
        .map((c) => `\`${c}\``)
        .join(', ')} |`,
    );
  return lines.join('\n');
}

const openApiPath = (url: string) => `/v1${url}`;

export function routeIndex(routes: PeopleRoute[]): string {
  const lines = ['| route | permission | roles | what |', '| --- | --- | --- | --- |'];
  for (const r of routes)
    lines.push(
      `| \`${r.method} ${openApiPath(r.url)}\` | \`${r.permission}\` | ${rolesOf(r.permission)} | ${r.summary.replace(/\|/g, '\\|')} |`,
    );
  return lines.join('\n');
}

export function routeExamples(routes: PeopleRoute[]): string {
  const out: string[] = [];
  let tag = '';
  for (const r of routes) {
    if (r.tag !== tag) {
      tag = r.tag;
      out.push(`### ${tag}`, '');
    }
    out.push(
      `#### \`${r.method} ${openApiPath(r.url)}\``,
      '',
      `${r.summary}. Permission \`${r.permission}\` (${rolesOf(r.permission)}).`,
      '',
      '```sh',
      r.curl,
      '```',
      '',
    );
  }
  return out.join('\n').trimEnd();
}

export function generatedSections(routes: PeopleRoute[]): Record<string, string> {
  return { permissions: permissionTable(), statuses: statusTable(), routes: routeIndex(routes), examples: routeExamples(routes) };
}

/** The document with every generated section replaced by its current text. */
export function regenerate(doc: string, routes: PeopleRoute[]): string {
  let out = doc;
  for (const [name, text] of Object.entries(generatedSections(routes))) {
    const b = BEGIN(name);
    const e = END(name);
    const i = out.indexOf(b);
    const j = out.indexOf(e);
    if (i < 0 || j < i) throw new Error(`docs/people-api.md lacks the markers of the generated section "${name}"`);
    out = `${out.slice(0, i + b.length)}\n\n${text}\n\n${out.slice(j)}`;
  }
  return out;
}

export const DOC_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/people-api.md');

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { PEOPLE_ROUTES } = await import('./plugin.js');
  fs.writeFileSync(DOC_PATH, regenerate(fs.readFileSync(DOC_PATH, 'utf8'), PEOPLE_ROUTES));
  process.stdout.write(`wrote ${DOC_PATH}\n`);
}
