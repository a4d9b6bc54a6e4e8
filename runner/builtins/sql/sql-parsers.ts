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
 * - The grammars backtrack exponentially on some nestings: parses are metered (see PARSE_STEPS_BASE).
 * - The PostgreSQL grammar treats a backslash in '...' as an escape and has no nested comments; the
 *   MySQL grammar always reads `#` as a comment: the checks hand the parsers canonical text from their
 *   own lexer (comments removed, literals replaced) instead.
 */

interface SqlParser {
  astify(sql: string, opt?: { database?: string; trimQuery?: boolean }): unknown;
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

/**
 * The work the grammars may do, counted in steps: a step is one read of the input (`charCodeAt`,
 * `charAt`, `substr` or `substring` of the text); 6–20 million steps take a second.
 *
 * node-sql-parser's grammars are PEG parsers without memoisation: where a rule has alternatives
 * that begin alike, each alternative parses the common part again, so a failing (and sometimes a
 * succeeding) parse takes time exponential in the nesting of such rules. Nested CASTs with a type a
 * grammar does not know (`CAST(CAST(1 AS INTX) AS INTX)`) cost 4–5× more per level in every
 * grammar (7 levels, 106 characters: 21–25 s for the five of them); so do nested parentheses around a syntax error in
 * the PostgreSQL grammar, or `CAST(x AS INT)` in the MySQL and BigQuery grammars. A nesting limit
 * would have to be far too low for real queries to bound that, so the work is metered instead.
 *
 * Queries that parse in linear time read their input 15–90 times per character (the test corpora,
 * TPC-H queries, 30–85 KB generated queries; up to 340 for 32–256 nested parentheses in the
 * Snowflake grammar). One parse may take PARSE_STEPS_BASE plus PARSE_STEPS_PER_CHAR steps
 * per character of its text, and all the parses of one call together CALL_STEPS_BASE plus
 * CALL_STEPS_PER_CHAR per character of the query: a check is then linear in the query's length
 * (~0.1 s at most for a short query, several seconds for a 100 KB one, which the call's deadline
 * bounds too), and a grammar that needs more gives up on the text, which then counts as not parsed.
 */
export const PARSE_STEPS_BASE = 100_000;
export const PARSE_STEPS_PER_CHAR = 500;
export const CALL_STEPS_BASE = 1_000_000;
export const CALL_STEPS_PER_CHAR = 500;
/** Steps between two looks at the clock. */
const CLOCK_EVERY = 1 << 14;

/** The steps one call of a check has left for parsing, and its deadline (performance.now() clock). */
export class ParseMeter {
  left: number;

  constructor(
    queryLength: number,
    readonly deadline: number,
  ) {
    this.left = CALL_STEPS_BASE + CALL_STEPS_PER_CHAR * queryLength;
  }
}

/** How one grammar answered: the statements, a syntax error, over its step budget, or past the deadline. */
export type ParseOutcome =
  | { kind: 'parsed'; statements: unknown[]; steps: number }
  | { kind: 'refused'; steps: number }
  | { kind: 'gave-up'; steps: number }
  | { kind: 'timeout'; steps: number };

class OverBudget extends Error {
  override readonly name = 'OverBudget';
}
class PastDeadline extends Error {
  override readonly name = 'PastDeadline';
}

/**
 * The query text as node-sql-parser's generated parser sees it: a String object whose reads count
 * steps (the parser reads its input only through these four methods, and only through its `input`
 * argument, so the count covers all its work). Over budget or past the deadline, a read throws, which
 * unwinds the parser at once; its state lives inside its parse function, so nothing is left behind.
 */
class MeteredText extends String {
  readonly #text: string;
  readonly #budget: number;
  readonly #deadline: number;
  #steps = 0;

  constructor(text: string, budget: number, deadline: number) {
    super(text);
    this.#text = text;
    this.#budget = budget;
    this.#deadline = deadline;
  }

  get steps(): number {
    return this.#steps;
  }

  #step(): void {
    const n = ++this.#steps;
    if (n > this.#budget) throw new OverBudget();
    if ((n & (CLOCK_EVERY - 1)) === 0 && performance.now() > this.#deadline) throw new PastDeadline();
  }

  override charCodeAt(i: number): number {
    this.#step();
    return this.#text.charCodeAt(i);
  }

  override charAt(i: number): string {
    this.#step();
    return this.#text.charAt(i);
  }

  override substr(from: number, length?: number): string {
    this.#step();
    return this.#text.substr(from, length);
  }

  override substring(start: number, end?: number): string {
    this.#step();
    return this.#text.substring(start, end);
  }

  override toString(): string {
    return this.#text;
  }

  override valueOf(): string {
    return this.#text;
  }
}

/**
 * What one grammar makes of `sql`, within PARSE_STEPS_BASE + PARSE_STEPS_PER_CHAR × its length
 * steps and what the call has left, and before the call's deadline (checked every few thousand steps).
 */
export function parseIn(d: ParserDialect, sql: string, meter: ParseMeter): ParseOutcome {
  const parser = parserFor(d);
  const budget = Math.max(0, Math.min(PARSE_STEPS_BASE + PARSE_STEPS_PER_CHAR * sql.length, meter.left));
  const text = new MeteredText(sql, budget, meter.deadline);
  let outcome: ParseOutcome;
  try {
    // trimQuery: false, or the parser would parse `sql.trim()`, a plain string, unmetered.
    const ast = parser.astify(text as unknown as string, { database: d.id, trimQuery: false });
    outcome =
      ast === undefined || ast === null
        ? { kind: 'refused', steps: text.steps }
        : { kind: 'parsed', statements: Array.isArray(ast) ? ast : [ast], steps: text.steps };
  } catch (err) {
    if (err instanceof OverBudget) outcome = { kind: 'gave-up', steps: budget };
    else if (err instanceof PastDeadline) outcome = { kind: 'timeout', steps: text.steps };
    // A syntax error, or (for very deep nesting) a stack overflow inside the grammar.
    else outcome = { kind: 'refused', steps: text.steps };
  }
  meter.left -= Math.min(outcome.steps, budget);
  return outcome;
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

/**
 * T-SQL table hints that take or hold locks a plain read does not: update and exclusive locks
 * (UPDLOCK, XLOCK, TABLOCKX), shared locks held to the end of the transaction (HOLDLOCK and its
 * synonym SERIALIZABLE, REPEATABLEREAD; TABLOCK with them), shared locks where the database would
 * read a snapshot (READCOMMITTEDLOCK), and lock granularity (ROWLOCK, PAGLOCK). NOLOCK,
 * READUNCOMMITTED, READPAST, NOWAIT, SNAPSHOT, READCOMMITTED and index hints stay allowed.
 */
export const LOCKING_HINTS: ReadonlySet<string> = new Set([
  'updlock',
  'xlock',
  'holdlock',
  'serializable',
  'repeatableread',
  'readcommittedlock',
  'tablock',
  'tablockx',
  'rowlock',
  'paglock',
]);

const NESTED_WRITE_TYPES = new Set(Object.keys(AST_TYPE_NAMES).filter((t) => t !== 'set' && t !== 'use'));

/** Read-only means: every statement is a SELECT (no INTO, no locking read, nothing writing inside), SHOW or DESCRIBE. */
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

/** Walks a SELECT's tree for INTO, locking reads (FOR UPDATE, LOCK IN SHARE MODE, WITH (UPDLOCK)) and nested data-modifying statements (writable CTEs). */
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
    // BigQuery's `SELECT * REPLACE (expr AS col)` is a column of type 'replace' around the `*`.
    const starReplace = node.type === 'replace' && isRecord(node.expr) && node.expr.type === 'column_ref';
    if (node !== root && typeof node.type === 'string' && NESTED_WRITE_TYPES.has(node.type) && !starReplace) {
      return { kind: 'write', type: AST_TYPE_NAMES[node.type]! };
    }
    const into = node.into;
    if (isRecord(into) && (into.type === 'into' || (into.expr !== undefined && into.expr !== null))) {
      return { kind: 'write', type: 'SELECT ... INTO' };
    }
    const locking = node.locking_read;
    if (locking !== undefined && locking !== null && locking !== '') {
      const text = JSON.stringify(locking);
      const type = /update/i.test(text) ? 'FOR UPDATE' : /share\s+mode/i.test(text) ? 'LOCK IN SHARE MODE' : /share/i.test(text) ? 'FOR SHARE' : 'FOR UPDATE';
      return { kind: 'write', type: `SELECT ... ${type}` };
    }
    // T-SQL: FROM t WITH (UPDLOCK) parses to table_hint: {keyword: 'with', expr: [{expr: {value: 'updlock'}}]}.
    if (node.table_hint !== undefined && node.table_hint !== null) {
      const hint = (
        JSON.stringify(node.table_hint)
          .toLowerCase()
          .match(/[a-z]+/g) ?? []
      ).find((w) => LOCKING_HINTS.has(w));
      if (hint) return { kind: 'write', type: `SELECT ... WITH (${hint.toUpperCase()})` };
    }
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') stack.push(v);
  }
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
