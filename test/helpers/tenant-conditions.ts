/**
 * Does a statement say which tenant it concerns? (test/tenant-statements.test.ts) A statement that
 * reads or writes a tenant table must name the tenant: its tenant_id compared with a value (a
 * parameter, a literal, ANY of a parameter), or, for an INSERT … VALUES, tenant_id among
 * the columns it writes. On Citus that condition is what routes the statement to the one node
 * holding the tenant's rows (docs/deployment.md). A join on tenant_id alone (a.tenant_id =
 * b.tenant_id) does not count: it keeps rows of one tenant together without choosing which; nor
 * does a tenant computed by a subquery (Citus cannot route by a value it does not see).
 *
 * This reads the text, not a parse tree: it finds the tables after FROM, JOIN, UPDATE and INTO, and
 * a tenant condition anywhere in the statement. A statement with two tenant tables and a condition
 * on one of them passes (the joins in Queuemate join on tenant_id; the schema test checks the keys).
 */

/** The statement's text as compared: comments, quoting and string literals gone, lower case, one space. */
export function normalizeStatement(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/--[^\n]*/g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/** The tenant tables a statement names after FROM, JOIN, UPDATE or INTO. */
export function tenantTablesOf(statement: string, tenantTables: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  for (const m of statement.matchAll(/\b(?:from|join|update|into)\s+(?:only\s+)?(?:public\.)?([a-z_][a-z0-9_]*)/g))
    if (tenantTables.has(m[1])) found.add(m[1]);
  return [...found];
}

const VALUE = String.raw`(?:\$\d+|\d+)\b`;
/** tenant_id (of any alias) = a value, = ANY(a value), IN (values) */
const TENANT_CONDITION = new RegExp(
  String.raw`(?:^|[^a-z0-9_.])(?:[a-z_][a-z0-9_]*\.)?tenant_id\s*(?:=\s*(?:any\s*\(\s*)?${VALUE}|in\s*\(\s*${VALUE})`,
);
/** INSERT INTO t (…, tenant_id, …) VALUES */
const INSERT_VALUES = /^(?:with\b.*?\)\s*)?insert into [a-z_][a-z0-9_]* \(([^)]*)\) values\b/;

/**
 * Why the statement does not say its tenant (null: it does, or it touches no tenant table).
 */
export function missingTenantCondition(text: string, tenantTables: ReadonlySet<string>): string | null {
  const s = normalizeStatement(text);
  const tables = tenantTablesOf(s, tenantTables);
  if (tables.length === 0) return null;
  if (TENANT_CONDITION.test(s)) return null;
  const insert = INSERT_VALUES.exec(s);
  if (insert && /\btenant_id\b/.test(insert[1]) && tenantTablesOf(s.slice(insert.index + insert[0].length), tenantTables).length === 0)
    return null;
  return `no tenant condition for ${tables.join(', ')}`;
}
