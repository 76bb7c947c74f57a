/**
 * The developer view of a process (docs/people-api.md §4): its ProcessKey and ready-to-paste
 * requests that create a task with this process's fields, with curl, the Anymate Python client and
 * the Anymate .NET client in on-premises mode. Credentials are placeholders: they are never shown
 * again after they were created.
 */
import type { FieldType } from '../db/types.js';

export interface DeveloperView {
  processKey: string;
  baseUrl: string;
  clientId: string;
  sampleTask: Record<string, unknown>;
  examples: { curl: string; python: string; dotnet: string };
}

function sampleValue(type: FieldType, options: string[], name: string): unknown {
  switch (type) {
    case 'number':
      return 12.5;
    case 'integer':
      return 42;
    case 'boolean':
      return true;
    case 'date':
      return '2026-01-31';
    case 'datetime':
      return '2026-01-31T09:30:00Z';
    case 'dropdown':
      return options[0] ?? '';
    case 'email':
      return 'someone@example.com';
    default:
      return `${name} value`;
  }
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function pyLiteral(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null) return 'None';
  return JSON.stringify(v);
}

function csLiteral(v: unknown): string {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : `${v}m`;
  return JSON.stringify(v);
}

export function developerView(
  p: { processKey: string; fields: { name: string; type: FieldType; options: string[] }[] },
  baseUrl: string,
  clientId: string,
): DeveloperView {
  const sampleTask: Record<string, unknown> = {};
  for (const f of p.fields) sampleTask[f.name] = sampleValue(f.type, f.options, f.name);
  if (p.fields.length === 0) sampleTask.anyKey = 'any value (this process has no fields: any top-level keys are kept)';
  const key = encodeURIComponent(p.processKey);
  const curl = [
    `TOKEN=$(curl -s -X POST ${baseUrl}/connect/token \\`,
    `  -d grant_type=password -d client_id=${clientId} \\`,
    `  --data-urlencode client_secret="$QM_API_SECRET" \\`,
    `  -d username="$QM_MATE_USERNAME" --data-urlencode password="$QM_MATE_PASSWORD" | jq -r .access_token)`,
    `curl -s -X POST ${baseUrl}/api/CreateTask/${key} \\`,
    `  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify(sampleTask))}`,
    `curl -s ${baseUrl}/api/TakeNext/${key} -H "Authorization: Bearer $TOKEN"`,
  ].join('\n');
  const python = [
    'import os',
    'from anymate import client',
    '',
    `mate = client("${clientId}", os.environ["QM_API_SECRET"], os.environ["QM_MATE_USERNAME"], os.environ["QM_MATE_PASSWORD"])`,
    `mate.set_on_premises_mode("${baseUrl}", "${baseUrl}")`,
    '',
    'new_task = {',
    ...Object.entries(sampleTask).map(([k, v]) => `    ${JSON.stringify(k)}: ${pyLiteral(v)},`),
    '}',
    `print(mate.create_task(new_task, "${p.processKey}"))`,
    `task = mate.take_next("${p.processKey}")`,
  ].join('\n');
  const dotnet = [
    'using Anymate;',
    '',
    'var anymate = new AnymateService(',
    `    "${clientId}",`,
    '    Environment.GetEnvironmentVariable("QM_API_SECRET"),',
    '    Environment.GetEnvironmentVariable("QM_MATE_USERNAME"),',
    '    Environment.GetEnvironmentVariable("QM_MATE_PASSWORD"),',
    `    "${baseUrl}", "${baseUrl}");`,
    '',
    'var newTask = new',
    '{',
    ...Object.entries(sampleTask).map(([k, v]) => `    ${/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : 'field'} = ${csLiteral(v)},`),
    '};',
    `var created = await anymate.CreateTaskAsync(newTask, "${p.processKey}");`,
    `var task = await anymate.TakeNextAsync("${p.processKey}");`,
  ].join('\n');
  return { processKey: p.processKey, baseUrl, clientId, sampleTask, examples: { curl, python, dotnet } };
}
