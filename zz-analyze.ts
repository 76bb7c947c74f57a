import fs from 'node:fs';
import { missingTenantCondition, normalizeStatement } from '/work/wt-citus/test/helpers/tenant-conditions.js';
const tables = new Set(fs.readFileSync('/tmp/x/tables.txt', 'utf8').split('\n').filter(Boolean));
const seen = new Map<string, boolean>();
for (const line of fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean)) {
  const s = JSON.parse(line); seen.set(s.sql, (seen.get(s.sql) ?? false) || s.app);
}
let n = 0;
for (const [sql, app] of seen) { if (!app) continue; n++; const w = missingTenantCondition(sql, tables); if (w) console.log('---', w, '\n', normalizeStatement(sql).slice(0, 700)); }
console.log('app statements', n);
