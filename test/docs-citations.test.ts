/**
 * Every citation in the code points at a section that exists: `docs/<file>.md §n` (or §n.m, and the
 * end of a range such as §7.2–7.3) names a numbered heading of that file, and every contract test
 * named `C<n>:` names an item of the checklist in docs/mate-api.md §9. Citations without the docs/
 * path (the old short forms: a document's bare name, or P for the product rules, before the section
 * sign) are refused. src/db/migrations/*.sql keep their old comments: editing an applied migration
 * would change its checksum.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = process.cwd();
const SCANNED = ['src', 'test', 'bench'];

/** The section numbers of a Markdown file: '5', '5.2' from headings such as `## 5. Task life cycle`, `### 5.2 Taking`. */
export function sectionsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s/gm)) out.add(m[1]);
  return out;
}

/** The checklist items (`| C7 |`) of a Markdown file. */
export function checklistOf(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^\|\s*(C\d+)\s*\|/gm)].map((m) => m[1]));
}

interface Docs {
  /** sections by file name under docs/ ('mate-api.md'); a file absent here does not exist */
  sections: Map<string, Set<string>>;
  checklist: Set<string>;
}

function loadDocs(): Docs {
  const sections = new Map<string, Set<string>>();
  for (const name of fs.readdirSync(path.join(ROOT, 'docs'))) {
    if (name.endsWith('.md')) sections.set(name, sectionsOf(fs.readFileSync(path.join(ROOT, 'docs', name), 'utf8')));
  }
  return { sections, checklist: checklistOf(fs.readFileSync(path.join(ROOT, 'docs', 'mate-api.md'), 'utf8')) };
}

const CITATION = /docs\/([\w-]+\.md) §(\d+(?:\.\d+)*)(?:[–-]§?(\d+(?:\.\d+)*))?/g;
const OLD_FORM = /(?<![\w/.-])(?:(?:mate-api|product|state-machine)(?:\.md)? |P)§\d/g;
const TEST_NAME = /\btest\(\s*['"`]((?:C\d+[/, ]*)+):/g;

/** What is wrong with the citations of one file's text, one line per problem (file:line: …). */
export function brokenCitations(file: string, text: string, docs: Docs): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const at = `${file}:${i + 1}`;
    for (const m of line.matchAll(CITATION)) {
      const sections = docs.sections.get(m[1]);
      if (!sections) {
        problems.push(`${at}: ${m[0]} cites docs/${m[1]}, which does not exist`);
        continue;
      }
      for (const n of [m[2], m[3]]) {
        if (n !== undefined && !sections.has(n)) problems.push(`${at}: ${m[0]}: docs/${m[1]} has no heading numbered ${n}`);
      }
    }
    for (const m of line.matchAll(OLD_FORM))
      problems.push(`${at}: an old citation form (${m[0].replace(/ ?§/, ' section ')}): write docs/<file>.md and the section`);
    for (const m of line.matchAll(TEST_NAME)) {
      for (const c of m[1].match(/C\d+/g) ?? []) {
        if (!docs.checklist.has(c)) problems.push(`${at}: the test name cites ${c}, which the checklist of docs/mate-api.md §9 lacks`);
      }
    }
  });
  return problems;
}

function scannedFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(child);
      // this file holds made-up citations on purpose (the last test)
      else if (!/^src\/db\/migrations\/.*\.sql$/.test(child) && child !== 'test/docs-citations.test.ts') out.push(child);
    }
  };
  for (const dir of SCANNED) walk(dir);
  return out;
}

test('every docs/<file>.md §n cited in src, test and bench names a heading, and every C<n>: test a checklist item', () => {
  const docs = loadDocs();
  const files = scannedFiles();
  let citations = 0;
  let checklistTests = 0;
  const problems: string[] = [];
  for (const file of files) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    citations += [...text.matchAll(CITATION)].length;
    checklistTests += [...text.matchAll(TEST_NAME)].length;
    problems.push(...brokenCitations(file, text, docs));
  }
  assert.deepEqual(problems, []);
  // the scan really found the citations (a broken pattern would pass vacuously)
  assert.ok(citations > 80, `only ${citations} citations found`);
  assert.ok(checklistTests > 30, `only ${checklistTests} C<n>: tests found`);
});

test('the docs number their sections and the checklist holds C1 to C21', () => {
  const docs = loadDocs();
  for (const n of ['1', '2', '3', '4', '5', '5.1', '5.2', '5.3', '5.4', '5.5', '5.6', '6', '7', '8', '9']) {
    assert.ok(docs.sections.get('product.md')?.has(n), `docs/product.md §${n}`);
  }
  for (const n of ['1', '2', '3', '4', '5', '6.1', '6.2', '6.3', '6.4', '7', '7.1', '7.9', '7.14', '8', '9']) {
    assert.ok(docs.sections.get('mate-api.md')?.has(n), `docs/mate-api.md §${n}`);
  }
  assert.deepEqual(
    [...docs.checklist],
    Array.from({ length: 21 }, (_, i) => `C${i + 1}`),
  );
});

test('a made-up citation, section, file, checklist item or old form is reported', () => {
  const docs = loadDocs();
  const text = [
    '/** fine: docs/mate-api.md §7.9 and docs/product.md §5.2, docs/mate-api.md §7.2–7.3, docs/state-machine.md §3 */',
    '/** no such section: docs/mate-api.md §42 */',
    '/** no such subsection: docs/product.md §5.9 */',
    '/** no such file: docs/nowhere.md §1 */',
    '/** a range ending nowhere: docs/mate-api.md §7.1–§7.99 */',
    // built from parts, so that the rewrite of old citations (see the report of issue 6) leaves them alone
    `/** old forms: ${['mate-api', '§3'].join(' ')}, ${['product', '§4'].join(' ')} and ${['P', '§5'].join('')} */`,
    "test('C3/C22: a made-up checklist item', () => {});",
    "test('C21: a real one', () => {});",
    '/** not citations: RFC 6749 §3.1, C99 outside a test name */',
  ].join('\n');
  assert.deepEqual(brokenCitations('x.ts', text, docs), [
    'x.ts:2: docs/mate-api.md §42: docs/mate-api.md has no heading numbered 42',
    'x.ts:3: docs/product.md §5.9: docs/product.md has no heading numbered 5.9',
    'x.ts:4: docs/nowhere.md §1 cites docs/nowhere.md, which does not exist',
    'x.ts:5: docs/mate-api.md §7.1–§7.99: docs/mate-api.md has no heading numbered 7.99',
    'x.ts:6: an old citation form (mate-api section 3): write docs/<file>.md and the section',
    'x.ts:6: an old citation form (product section 4): write docs/<file>.md and the section',
    'x.ts:6: an old citation form (P section 5): write docs/<file>.md and the section',
    'x.ts:7: the test name cites C22, which the checklist of docs/mate-api.md §9 lacks',
  ]);
});
