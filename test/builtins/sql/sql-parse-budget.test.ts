/**
 * The SQL checks stay linear in the query's length (runner/builtins/sql/sql-parsers.ts, PARSE_STEPS_*):
 * node-sql-parser's PEG grammars backtrack exponentially on nested CASTs (8 levels, 127 characters:
 * 13 s to a minute over the five grammars), so each parse is metered in reads of its input and gives
 * up over its budget; the call's deadline is checked inside a parse, not only between parses.
 *
 * A SELECT the grammars give up on is still accepted when its tokens prove it reads
 * (runner/builtins/sql/sql-token-proof.ts); the "too complex" refusal is for those whose tokens do
 * not (here: a T-SQL PRINT after the SELECT, which the token proof does not allow).
 *
 * Nothing here asserts on elapsed time: without the budget the nested cases below take minutes to
 * hours, so this file would run into tap's timeout instead of passing.
 */
import t from 'tap';
import { ensureReadOnlySqlQuery, validateSqlQuery } from '../../../runner/builtins/sql/sql-checks.js';
import {
  CALL_STEPS_BASE,
  CALL_STEPS_PER_CHAR,
  PARSE_STEPS_BASE,
  PARSE_STEPS_PER_CHAR,
  parseIn,
  ParseMeter,
  PARSER_DIALECTS,
} from '../../../runner/builtins/sql/sql-parsers.js';
import type { BuiltinContext } from '../../../runner/builtins/guest-boundary.js';
import { call } from './sql-test-helpers.js';

/** `SELECT CAST(CAST(1 AS <type>) AS <type>)`, nested `levels` deep. */
const nestedCasts = (levels: number, type: string) => `SELECT ${'CAST('.repeat(levels)}1${` AS ${type})`.repeat(levels)}`;
const TOO_COMPLEX =
  'ensureReadOnlySqlQuery: the query could not be verified as read-only: it is too complex for the SQL parsers (over their budget of 500 steps per character; nested expressions such as CAST(CAST(...)) make them backtrack); simplify or un-nest it';

const UNVERIFIED =
  'ensureReadOnlySqlQuery: the query could not be verified as read-only: none of the supported SQL dialects (PostgreSQL, MySQL, BigQuery, Snowflake, T-SQL) could parse it';

const ctx = (ms: number) => ({ deadline: performance.now() + ms }) as BuiltinContext;

/** Nesting forms, `levels` deep, and whether a grammar parses them (or the token proof accepts them). */
const NESTINGS: { name: string; query: (levels: number) => string; parsed: boolean }[] = [
  { name: 'CASTs to a type no grammar knows', query: (n) => nestedCasts(n, 'INTX'), parsed: false },
  { name: 'CASTs to INT (MySQL and BigQuery backtrack, PostgreSQL does not)', query: (n) => nestedCasts(n, 'INT'), parsed: true },
  { name: 'CASTs to VARCHAR(10)', query: (n) => nestedCasts(n, 'VARCHAR(10)'), parsed: true },
  { name: 'parentheses', query: (n) => `SELECT ${'('.repeat(n)}1${')'.repeat(n)}`, parsed: true },
  { name: 'parentheses around a syntax error', query: (n) => `SELECT ${'('.repeat(n)}1 +${')'.repeat(n)}`, parsed: false },
  { name: 'function calls', query: (n) => `SELECT ${'coalesce(nullif('.repeat(n)}a${', 0), 1)'.repeat(n)} FROM t`, parsed: true },
  { name: 'searched CASE', query: (n) => `SELECT ${'CASE WHEN a > 0 THEN '.repeat(n)}1${' ELSE 0 END'.repeat(n)} FROM t`, parsed: true },
  { name: 'simple CASE', query: (n) => `SELECT ${'CASE a WHEN 1 THEN '.repeat(n)}1${' END'.repeat(n)} FROM t`, parsed: true },
  { name: 'subqueries', query: (n) => `SELECT * FROM ${'(SELECT * FROM '.repeat(n)}t${') x'.repeat(n)}`, parsed: true },
];

t.test('nestings 8, 12 and 20 deep are answered: accepted, or refused as too complex when the tokens prove nothing', async (t) => {
  for (const { name, query, parsed } of NESTINGS) {
    for (const levels of [8, 12, 20]) {
      const q = query(levels);
      // Every form reads, so the token proof accepts what the grammars give up on.
      t.same(call(ensureReadOnlySqlQuery, [q], ctx(60_000)), { value: q }, `ensureReadOnlySqlQuery, ${levels} levels of ${name}`);
      // With a PRINT after it the tokens prove nothing: a grammar that failed on the form gave up on it.
      const got = call(ensureReadOnlySqlQuery, [`${q} print 'x'`], ctx(60_000));
      const allowed = parsed ? [UNVERIFIED, TOO_COMPLEX] : [TOO_COMPLEX];
      t.ok('message' in got && allowed.includes(got.message), `the same, then PRINT: ${JSON.stringify(got)}`);
      t.same(call(validateSqlQuery, [q], ctx(60_000)), { value: q }, `validateSqlQuery, ${levels} levels of ${name}: one statement`);
    }
  }
});

t.test('30 levels of CASTs no grammar knows the type of: the grammars give up, the tokens decide', async (t) => {
  const q = nestedCasts(30, 'INTX');
  t.same(call(ensureReadOnlySqlQuery, [q], ctx(60_000)), { value: q });
  t.same(call(ensureReadOnlySqlQuery, [`${q} print 'x'`], ctx(60_000)), { name: 'Error', message: TOO_COMPLEX });
  t.same(call(ensureReadOnlySqlQuery, [`${q} into t2`], ctx(60_000)), {
    name: 'Error',
    message: 'ensureReadOnlySqlQuery: SELECT ... INTO statements are not allowed (only SELECT, SHOW, DESCRIBE and EXPLAIN)',
  });
});

t.test('nested parentheses around a syntax error, 40 deep (PostgreSQL grammar backtracks)', async (t) => {
  const query = `select ${'('.repeat(40)}1 +${')'.repeat(40)}`;
  t.same(call(ensureReadOnlySqlQuery, [query], ctx(60_000)), { value: query }, 'malformed, but it only reads');
  t.same(call(ensureReadOnlySqlQuery, [`${query} print 'x'`], ctx(60_000)), { name: 'Error', message: TOO_COMPLEX });
});

t.test('validateSqlQuery: the grammars settle junk pieces within the budget', async (t) => {
  // MySQL reads `$$a;b$$` as `$$a` and a junk piece `b$$`: validate asks the grammars, which give up.
  const query = `${nestedCasts(8, 'INTX')}, $$a;b$$`;
  t.same(call(validateSqlQuery, [query], ctx(60_000)), {
    name: 'Error',
    message: 'validateSqlQuery: the query must hold exactly one statement, but it holds 2 (as MySQL, BigQuery and T-SQL read it)',
  });
  t.same(call(validateSqlQuery, [`${nestedCasts(8, 'INT')}, $$a;b$$`], ctx(60_000)), { value: `${nestedCasts(8, 'INT')}, $$a;b$$` });
});

t.test('one parse: within its budget, metered, and the call budget is shared', async (t) => {
  const postgres = PARSER_DIALECTS[0]!;
  const query = nestedCasts(12, 'INTX');
  const meter = new ParseMeter(query.length, Number.POSITIVE_INFINITY);
  t.equal(meter.left, CALL_STEPS_BASE + CALL_STEPS_PER_CHAR * query.length);
  const outcome = parseIn(postgres, query, meter);
  const budget = PARSE_STEPS_BASE + PARSE_STEPS_PER_CHAR * query.length;
  t.same(outcome, { kind: 'gave-up', steps: budget });
  t.equal(meter.left, CALL_STEPS_BASE + CALL_STEPS_PER_CHAR * query.length - budget, 'the steps are taken from the call');
  meter.left = 10;
  t.same(parseIn(postgres, 'select 1', meter), { kind: 'gave-up', steps: 10 }, 'a call out of steps parses nothing more');
  t.equal(meter.left, 0);
});

t.test('the deadline is checked inside a parse', async (t) => {
  // ~60 KB that PostgreSQL parses in a few hundred milliseconds.
  const query = 'select * from t where ' + Array.from({ length: 4000 }, (_, i) => `a${i} = ${i}`).join(' or ');
  const full = parseIn(PARSER_DIALECTS[0]!, query, new ParseMeter(query.length, Number.POSITIVE_INFINITY));
  t.equal(full.kind, 'parsed', `a whole parse takes ${full.steps} steps`);
  // A deadline already past: the parse stops at its first look at the clock, long before the end.
  const cut = parseIn(PARSER_DIALECTS[0]!, query, new ParseMeter(query.length, performance.now() - 1));
  t.equal(cut.kind, 'timeout');
  t.ok(cut.steps < full.steps / 2, `stopped after ${cut.steps} steps`);
  t.same(call(ensureReadOnlySqlQuery, [query], ctx(-1)), {
    name: 'Error',
    message: 'ensureReadOnlySqlQuery: the call ran out of time while checking the query',
  });
});

t.test('real queries use a small part of the budget in every grammar, and are metered', async (t) => {
  const queries = [
    "select l_returnflag, sum(l_extendedprice * (1 - l_discount)) as disc, avg(l_quantity) from lineitem where l_shipdate <= date '1998-12-01' group by l_returnflag order by l_returnflag",
    "select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as share from (select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation from part, supplier, lineitem, orders, nation n2 where p_partkey = l_partkey and s_suppkey = l_suppkey and o_orderdate between date '1995-01-01' and date '1996-12-31') as all_nations group by o_year order by o_year",
    'select * from t where ' + Array.from({ length: 500 }, (_, i) => `a${i} = ${i}`).join(' or '),
    `select ${'('.repeat(36)}1${')'.repeat(36)}`,
  ];
  for (const d of PARSER_DIALECTS) {
    for (const q of queries) {
      const outcome = parseIn(d, q, new ParseMeter(q.length, Number.POSITIVE_INFINITY));
      t.ok(outcome.steps > 0, `${d.name} reads its input through the metered text (${outcome.steps} steps)`);
      t.ok(outcome.steps < (PARSE_STEPS_PER_CHAR * q.length) / 1.4, `${d.name}: ${(outcome.steps / q.length).toFixed(0)} steps per character, ${outcome.kind}`);
    }
  }
});
