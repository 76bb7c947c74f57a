/**
 * Compares the Kysely table types of src/db/types.ts with a migrated database: the tables, and for
 * each column its nullability, whether an insert may leave it out, its type category and, for text
 * columns with an IN (...) CHECK, the allowed values. The types are read with the TypeScript
 * compiler, the schema from information_schema and pg_constraint.
 */
import path from 'node:path';
import ts from 'typescript';

/** The migrator's own bookkeeping table (src/db/migrator.ts): no code reads it through Kysely. */
const MIGRATOR_TABLE = 'schema_migrations';

export const TYPES_FILE = path.resolve('src/db/types.ts');

// ---------------------------------------------------------------------------------------------
// The database side

export interface DbColumn {
  dataType: string;
  /** Element type of an array column ('_int8' → 'int8'), else null. */
  elementType: string | null;
  nullable: boolean;
  /** A DEFAULT or an identity: an insert may leave the column out. */
  hasDefault: boolean;
  /** A GENERATED ALWAYS AS (...) STORED column: an insert must leave it out. */
  generated: boolean;
  /** The values of an IN (...) CHECK on this column alone, else null. */
  allowed: string[] | null;
}

export type DbSchema = Map<string, Map<string, DbColumn>>;

/** Anything that runs SQL: a pg pool or a pool client inside a transaction. */
export interface Queryable {
  query<R extends Record<string, unknown>>(text: string): Promise<{ rows: R[] }>;
}

export async function readDbSchema(db: Queryable): Promise<DbSchema> {
  const schema: DbSchema = new Map();
  const { rows: tables } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '${MIGRATOR_TABLE}'`,
  );
  for (const t of tables) schema.set(t.table_name, new Map());
  const { rows: checks } = await db.query<{ table_name: string; column_name: string; def: string }>(
    `SELECT rel.relname AS table_name, att.attname AS column_name, pg_get_constraintdef(con.oid) AS def
       FROM pg_constraint con
       JOIN pg_class rel ON rel.oid = con.conrelid
       JOIN pg_namespace ns ON ns.oid = rel.relnamespace
       JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
      WHERE con.contype = 'c' AND ns.nspname = 'public' AND cardinality(con.conkey) = 1`,
  );
  const allowed = new Map<string, string[]>();
  for (const c of checks) {
    const values = allowedValues(c.column_name, c.def);
    if (values) allowed.set(`${c.table_name}.${c.column_name}`, values);
  }
  const { rows: columns } = await db.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    udt_name: string;
    is_nullable: string;
    column_default: string | null;
    is_identity: string;
    is_generated: string;
  }>(
    `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default, is_identity, is_generated
       FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
  );
  for (const c of columns) {
    const table = schema.get(c.table_name);
    if (!table) continue; // a view, or the migrator's table
    table.set(c.column_name, {
      dataType: c.data_type,
      elementType: c.data_type === 'ARRAY' ? c.udt_name.replace(/^_/, '') : null,
      nullable: c.is_nullable === 'YES',
      hasDefault: c.column_default !== null || c.is_identity === 'YES',
      generated: c.is_generated === 'ALWAYS',
      allowed: allowed.get(`${c.table_name}.${c.column_name}`) ?? null,
    });
  }
  return schema;
}

/**
 * The values of `CHECK (col IN ('a', 'b'))`, which PostgreSQL gives back as
 * `CHECK ((col = ANY (ARRAY['a'::text, 'b'::text])))`, or with one value as `CHECK ((col = 'a'::text))`;
 * null for any other CHECK.
 */
export function allowedValues(column: string, def: string): string[] | null {
  const quoted = `'(?:[^']|'')*'::text`;
  const any = new RegExp(`^CHECK \\(\\(${column} = ANY \\(ARRAY\\[(${quoted}(?:, ${quoted})*)\\]\\)\\)\\)$`).exec(def);
  const one = new RegExp(`^CHECK \\(\\(${column} = (${quoted})\\)\\)$`).exec(def);
  const list = any?.[1] ?? one?.[1];
  if (!list) return null;
  return [...list.matchAll(/'((?:[^']|'')*)'::text/g)].map((m) => m[1].replace(/''/g, "'"));
}

// ---------------------------------------------------------------------------------------------
// The TypeScript side

/** One side (select or insert) of a column type, split into its union members. */
export interface TypeSide {
  nullable: boolean;
  undefinable: boolean;
  /** Categories of the other members: 'string', 'number', 'boolean', 'Date', 'array<…>', 'object', 'unknown', … */
  kinds: Set<string>;
  /** The string literal members (empty when there are none). */
  literals: string[];
  /** No member at all: `never`. */
  never: boolean;
}

export interface TsColumn {
  /** Declared with `?`. */
  optional: boolean;
  select: TypeSide;
  insert: TypeSide;
  /** The declared type, for messages. */
  text: string;
}

export type TsSchema = Map<string, Map<string, TsColumn>>;

function compilerOptions(): ts.CompilerOptions {
  const configFile = path.resolve('tsconfig.json');
  const { config, error } = ts.readConfigFile(configFile, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  // types: [] leaves out @types/node, which the table types do not use: 2.2 s instead of 5.3 s
  return { ...ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configFile)).options, noEmit: true, types: [] };
}

/**
 * The tables of the `Database` interface of `file`, each column's select and insert types as Kysely
 * derives them (SelectType and InsertType of kysely/util/column-type). `sourceText`, when given,
 * replaces the file's content (to check the comparison against altered types).
 */
export function readTableTypes(file = TYPES_FILE, sourceText?: string): TsSchema {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options, true);
  if (sourceText !== undefined) {
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, language, ...rest) =>
      path.resolve(name) === file ? ts.createSourceFile(name, sourceText, language, true) : getSourceFile(name, language, ...rest);
  }
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file);
  if (!source) throw new Error(`cannot read ${file}`);
  const errors = ts.getPreEmitDiagnostics(program, source);
  if (errors.length) {
    throw new Error(`${file} does not compile:\n${errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('\n')}`);
  }
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const database = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'Database');
  if (!database) throw new Error(`${file} exports no Database interface`);

  const members = (t: ts.Type): ts.Type[] => (t.isUnion() ? t.types : [t]);
  const schema: TsSchema = new Map();
  for (const tableProp of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(database))) {
    const columns = new Map<string, TsColumn>();
    schema.set(tableProp.name, columns);
    for (const columnProp of checker.getPropertiesOfType(checker.getTypeOfSymbol(tableProp))) {
      const declared = checker.getTypeOfSymbol(columnProp);
      const select: ts.Type[] = [];
      const insert: ts.Type[] = [];
      // Kysely's SelectType/InsertType distribute over the union: a ColumnType member gives its
      // type arguments (read from its __select__ and __insert__ brands), any other member itself.
      for (const m of members(declared)) {
        const s = m.flags & ts.TypeFlags.Object ? checker.getPropertyOfType(m, '__select__') : undefined;
        const i = m.flags & ts.TypeFlags.Object ? checker.getPropertyOfType(m, '__insert__') : undefined;
        if (s && i) {
          select.push(...members(checker.getTypeOfSymbol(s)));
          insert.push(...members(checker.getTypeOfSymbol(i)));
        } else {
          select.push(m);
          insert.push(m);
        }
      }
      columns.set(columnProp.name, {
        optional: (columnProp.flags & ts.SymbolFlags.Optional) !== 0,
        select: side(checker, select),
        insert: side(checker, insert),
        text: checker.typeToString(declared),
      });
    }
  }
  return schema;
}

function side(checker: ts.TypeChecker, types: ts.Type[]): TypeSide {
  const result: TypeSide = { nullable: false, undefinable: false, kinds: new Set(), literals: [], never: true };
  for (const t of types) {
    if (t.flags & ts.TypeFlags.Never) continue;
    result.never = false;
    if (t.flags & ts.TypeFlags.Null) result.nullable = true;
    else if (t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)) result.undefinable = true;
    else {
      if (t.isStringLiteral()) result.literals.push(t.value);
      result.kinds.add(kindOf(checker, t));
    }
  }
  return result;
}

function kindOf(checker: ts.TypeChecker, t: ts.Type): string {
  const F = ts.TypeFlags;
  if (t.flags & (F.Any | F.Unknown)) return 'unknown';
  if (t.flags & F.StringLike) return 'string';
  if (t.flags & F.NumberLike) return 'number';
  if (t.flags & F.BooleanLike) return 'boolean';
  if (t.flags & F.BigIntLike) return 'bigint';
  if (t.flags & F.Object) {
    if (checker.isArrayType(t) || checker.isTupleType(t)) {
      const elements = checker.getTypeArguments(t as ts.TypeReference).flatMap((e) => (e.isUnion() ? e.types : [e]));
      return `array<${[...new Set(elements.map((e) => (e.flags & F.Null ? 'null' : kindOf(checker, e))))].sort().join('|')}>`;
    }
    if (t.getSymbol()?.getName() === 'Date') return 'Date';
    return 'object';
  }
  return checker.typeToString(t);
}

// ---------------------------------------------------------------------------------------------
// The comparison

/** What the pg driver returns (select) and accepts (insert) for a PostgreSQL type; null = anything (json). */
function expectedKinds(where: string, dataType: string, elementType: string | null): { select: string[]; insert: string[] } | null {
  const scalar: Record<string, { select: string[]; insert: string[] } | null> = {
    text: { select: ['string'], insert: ['string'] },
    'character varying': { select: ['string'], insert: ['string'] },
    uuid: { select: ['string'], insert: ['string'] },
    smallint: { select: ['number'], insert: ['number'] },
    integer: { select: ['number'], insert: ['number'] },
    // int8 is parsed to a number (src/db/store.ts)
    bigint: { select: ['number'], insert: ['number'] },
    boolean: { select: ['boolean'], insert: ['boolean'] },
    'timestamp with time zone': { select: ['Date'], insert: ['Date', 'string'] },
    // date stays a 'YYYY-MM-DD' string (src/db/store.ts); a Date parameter would shift by the local offset
    date: { select: ['string'], insert: ['string'] },
    // xid8 (a transaction id) has no parser in the driver: text
    xid8: { select: ['string'], insert: ['string'] },
    jsonb: null,
    json: null,
  };
  const udt: Record<string, string> = {
    text: 'text',
    varchar: 'character varying',
    int2: 'smallint',
    int4: 'integer',
    int8: 'bigint',
    bool: 'boolean',
    timestamptz: 'timestamp with time zone',
    date: 'date',
    uuid: 'uuid',
  };
  if (dataType === 'ARRAY') {
    const element = elementType && udt[elementType] ? scalar[udt[elementType]] : undefined;
    if (!element) throw new Error(`${where}: no TypeScript mapping for arrays of ${elementType}: extend test/helpers/schema-drift.ts`);
    return { select: element.select.map((k) => `array<${k}>`), insert: element.insert.map((k) => `array<${k}>`) };
  }
  if (!(dataType in scalar)) throw new Error(`${where}: no TypeScript mapping for ${dataType}: extend test/helpers/schema-drift.ts`);
  return scalar[dataType];
}

const list = (values: Iterable<string>) => [...values].sort().join(', ');

function compareColumn(where: string, db: DbColumn, col: TsColumn): string[] {
  const problems: string[] = [];
  const say = (what: string) => problems.push(`${where}: ${what} (typed ${col.text})`);
  const { select, insert } = col;

  if (col.optional) say('declared optional (`?`); a selected row always has every column: use ColumnType for an insert default');
  else if (select.undefinable) say('select type admits undefined; a selected row always has every column');

  // nullability of what a select returns. unknown/any hides null: a nullable column must say `| null`.
  if (db.nullable && !select.nullable) say('nullable in the database, but its select type does not admit null');
  if (!db.nullable && select.nullable) say('NOT NULL in the database, but its select type admits null');
  if (!db.nullable && select.kinds.has('unknown')) say('NOT NULL in the database, but typed unknown/any, which admits null');

  // insert: Kysely lets an insert leave a column out when its insert type admits undefined or null
  const insertOptional = insert.undefinable || insert.nullable;
  if (db.generated) {
    if (!insert.never) say('a generated column, which an insert cannot set, but its insert type is not never');
  } else if (insert.never) {
    if (!db.hasDefault) say('has no default, but its insert type is never, so no insert can set it');
  } else {
    if (db.hasDefault && !insertOptional)
      say('has a default or identity in the database, but its insert type requires a value: add undefined to the insert type');
    // (an insert type admitting null is reported below)
    if (!db.hasDefault && !db.nullable && insert.undefinable)
      say('NOT NULL without a default in the database, but its insert type lets an insert leave it out');
    if (!db.nullable && insert.nullable) say('NOT NULL in the database, but its insert type admits null');
    if (db.nullable && !insert.nullable) say('nullable in the database, but its insert type does not admit null');
  }

  // type category
  const expected = expectedKinds(where, db.dataType, db.elementType);
  const dbType = db.dataType === 'ARRAY' ? `${db.elementType}[]` : db.dataType;
  if (expected) {
    const wrongSelect = [...select.kinds].filter((k) => !expected.select.includes(k));
    if (wrongSelect.length || (select.kinds.size === 0 && !select.never))
      say(`${dbType} in the database reads as ${list(expected.select)}, but the select type has ${list(wrongSelect) || 'no value type'}`);
    if (select.never) say(`${dbType} in the database, but its select type is never`);
    const wrongInsert = [...insert.kinds].filter((k) => !expected.insert.includes(k));
    if (wrongInsert.length)
      say(`${dbType} in the database takes ${list(expected.insert)} on insert, but the insert type has ${list(wrongInsert)}`);
  }

  // allowed values of a text column
  if (db.allowed) {
    const allowed = new Set(db.allowed);
    const typed = new Set(select.literals);
    if (select.kinds.size !== 1 || !select.kinds.has('string') || select.literals.length === 0)
      say(`the database allows only ${list(allowed)}: type it as that literal union`);
    else if (typed.size !== allowed.size || [...typed].some((v) => !allowed.has(v)))
      say(`the database allows ${list(allowed)}, but the select type allows ${list(typed)}`);
    const insertOutside = insert.literals.filter((v) => !allowed.has(v));
    if (insertOutside.length) say(`the database allows ${list(allowed)}, but the insert type also allows ${list(insertOutside)}`);
    if (insert.kinds.has('string') && insert.literals.length === 0)
      say(`the database allows only ${list(allowed)}, but the insert type takes any string`);
  } else if (select.literals.length > 0 && expected !== null) {
    say(`typed as the literals ${list(select.literals)}, but the database accepts any text: add a CHECK or type it as string`);
  }
  return problems;
}

/** Every disagreement, one message each, naming the table and column; empty when they agree. */
export function compareSchema(db: DbSchema, types: TsSchema): string[] {
  const problems: string[] = [];
  for (const table of [...new Set([...db.keys(), ...types.keys()])].sort()) {
    const dbColumns = db.get(table);
    const tsColumns = types.get(table);
    if (!tsColumns) {
      problems.push(`${table}: a table in the database, but Database has no property for it`);
      continue;
    }
    if (!dbColumns) {
      problems.push(`${table}: Database types it, but the database has no such table`);
      continue;
    }
    for (const column of [...new Set([...dbColumns.keys(), ...tsColumns.keys()])]) {
      const dbColumn = dbColumns.get(column);
      const tsColumn = tsColumns.get(column);
      if (!tsColumn) problems.push(`${table}.${column}: a column in the database, but missing from the table's type`);
      else if (!dbColumn) problems.push(`${table}.${column}: in the table's type, but the database has no such column`);
      else problems.push(...compareColumn(`${table}.${column}`, dbColumn, tsColumn));
    }
  }
  return problems;
}
