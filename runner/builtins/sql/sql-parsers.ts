import { createRequire } from 'node:module';
import type { DialectName } from './sql-lexer.js';

/**
 * node-sql-parser, one grammar per dialect, loaded on first use (each grammar is 200–300 KB of
 * generated code; a worker that never checks SQL never loads them). The package's per-dialect builds
 * (`node-sql-parser/build/<dialect>.js`) hold the same Parser as the main entry, with one grammar.
 *
 * Known gaps of node-sql-parser 5.4.0 that the checks work around or document:
 * - EXPLAIN parses in MySQL only (`EXPLAIN ANALYZE` nowhere, issue #2668): the checks strip an EXPLAIN
 *   prefix themselves and check the explained statement.
 * - SHOW/DESCRIBE support varies by dialect: both are recognised from their keyword.
 * - The T-SQL grammar reads unknown statements (`SHOW TABLES`, `EXPLAIN SELECT 1`) as
 *   `{stmt: {type: 'assign'}}` procedure statements: such results prove nothing.
 * - Writable CTEs (`WITH d AS (DELETE ... RETURNING *)`), MERGE, standalone VALUES/TABLE, `FOR SHARE`
 *   and MATCH_RECOGNIZE parse in no dialect.
 * - The PostgreSQL grammar treats a backslash in '...' as an escape and has no nested comments; the
 *   MySQL grammar always reads `#` as a comment: the checks hand the parsers canonical text from their
 *   own lexer (comments removed, literals replaced) instead.
 */

interface SqlParser {
  astify(sql: string, opt?: { database?: string }): unknown;
}

export interface ParserDialect {
  readonly name: DialectName;
  /** The `database` option and the build file name. */
  readonly id: 'postgresql' | 'mysql' | 'bigquery' | 'snowflake' | 'transactsql';
}

/** The order in which dialects are tried. */
export const PARSER_DIALECTS: readonly ParserDialect[] = [
  { name: 'PostgreSQL', id: 'postgresql' },
  { name: 'MySQL', id: 'mysql' },
  { name: 'BigQuery', id: 'bigquery' },
  { name: 'Snowflake', id: 'snowflake' },
  { name: 'T-SQL', id: 'transactsql' },
];

const require = createRequire(import.meta.url);
const loaded = new Map<string, SqlParser>();

function parserFor(d: ParserDialect): SqlParser {
  let p = loaded.get(d.id);
  if (!p) {
    const mod = require(`node-sql-parser/build/${d.id}.js`) as { Parser: new () => SqlParser };
    p = new mod.Parser();
    loaded.set(d.id, p);
  }
  return p;
}

/** The statements `sql` parses to in one dialect, or undefined when that grammar refuses it. */
export function parseIn(d: ParserDialect, sql: string): unknown[] | undefined {
  let ast: unknown;
  try {
    ast = parserFor(d).astify(sql, { database: d.id });
  } catch {
    // A syntax error, or (for very deep nesting) a stack overflow inside the grammar.
    return undefined;
  }
  if (ast === undefined || ast === null) return undefined;
  return Array.isArray(ast) ? ast : [ast];
}

/** Whether every parsed statement is a real statement node (not the T-SQL grammar's procedure wrapper). */
export function isPlainStatementList(statements: readonly unknown[]): boolean {
  return statements.length > 0 && statements.every((s) => isRecord(s) && typeof s.type === 'string');
}

export type Classification = { kind: 'read' } | { kind: 'write'; type: string } | { kind: 'unknown' };

/** Statement types by AST `type`, as named in error messages. */
const AST_TYPE_NAMES: Readonly<Record<string, string>> = {
  insert: 'INSERT',
  replace: 'REPLACE',
  update: 'UPDATE',
  delete: 'DELETE',
  merge: 'MERGE',
  create: 'CREATE',
  drop: 'DROP',
  alter: 'ALTER',
  truncate: 'TRUNCATE',
  rename: 'RENAME',
  grant: 'GRANT',
  revoke: 'REVOKE',
  call: 'CALL',
  exec: 'EXEC',
  execute: 'EXECUTE',
  set: 'SET',
  use: 'USE',
  lock: 'LOCK',
  unlock: 'UNLOCK',
  transaction: 'transaction control',
  declare: 'DECLARE',
  load_data: 'LOAD DATA',
};

const NESTED_WRITE_TYPES = new Set(Object.keys(AST_TYPE_NAMES).filter((t) => t !== 'set' && t !== 'use'));

/** Read-only means: every statement is a SELECT (no INTO, no FOR UPDATE, nothing writing inside), SHOW or DESCRIBE. */
export function classifyStatements(statements: readonly unknown[]): Classification {
  let unknown = false;
  for (const s of statements) {
    const c = classifyStatement(s);
    if (c.kind === 'write') return c;
    if (c.kind === 'unknown') unknown = true;
  }
  return unknown ? { kind: 'unknown' } : { kind: 'read' };
}

function classifyStatement(stmt: unknown): Classification {
  if (!isRecord(stmt) || typeof stmt.type !== 'string') return { kind: 'unknown' };
  switch (stmt.type) {
    case 'show':
    case 'desc':
      return { kind: 'read' };
    case 'explain':
      return classifyStatement(stmt.expr);
    case 'select':
      return findWriteInside(stmt) ?? { kind: 'read' };
    default:
      return { kind: 'write', type: AST_TYPE_NAMES[stmt.type] ?? stmt.type.toUpperCase() };
  }
}

/** Walks a SELECT's tree for INTO, FOR UPDATE and nested data-modifying statements (writable CTEs). */
function findWriteInside(root: Record<string, unknown>): Classification | undefined {
  const stack: unknown[] = [root];
  let visited = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    if (++visited > 1_000_000) return { kind: 'unknown' };
    if (Array.isArray(node)) {
      for (const v of node) if (v !== null && typeof v === 'object') stack.push(v);
      continue;
    }
    if (!isRecord(node)) continue;
    if (node !== root && typeof node.type === 'string' && NESTED_WRITE_TYPES.has(node.type)) {
      return { kind: 'write', type: AST_TYPE_NAMES[node.type]! };
    }
    const into = node.into;
    if (isRecord(into) && (into.type === 'into' || (into.expr !== undefined && into.expr !== null))) {
      return { kind: 'write', type: 'SELECT ... INTO' };
    }
    const locking = node.locking_read;
    if (locking !== undefined && locking !== null && /update/i.test(JSON.stringify(locking))) {
      return { kind: 'write', type: 'SELECT ... FOR UPDATE' };
    }
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') stack.push(v);
  }
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
