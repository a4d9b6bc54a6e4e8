/**
 * The SQL lexer behind the SQL checks: each dialect's comment and quoting rules, statement pieces,
 * and the canonical text handed to node-sql-parser.
 */
import t from 'tap';
import { canonicalText, lex, lexAll, PROFILES, type DialectName, type LexResult } from '../../../runner/builtins/sql/sql-lexer.js';

const DIALECTS: DialectName[] = ['PostgreSQL', 'MySQL', 'BigQuery', 'Snowflake', 'T-SQL'];

/** Per dialect: the pieces' source text (first to last token), or the reason lexing failed. */
function readings(sql: string): Record<DialectName, string[] | string> {
  const out = {} as Record<DialectName, string[] | string>;
  for (const r of lexAll(sql)) out[r.profile.dialect] = describe(sql, r);
  return out;
}

function describe(sql: string, r: LexResult): string[] | string {
  if (!r.ok) return r.reason;
  return r.pieces.map((p) => sql.slice(p.tokens[0]!.start, p.tokens[p.tokens.length - 1]!.end));
}

const same = (pieces: string[] | string): Record<DialectName, string[] | string> =>
  Object.fromEntries(DIALECTS.map((d) => [d, pieces])) as Record<DialectName, string[] | string>;

t.test('the profiles are the five dialects, in parser order', async (t) => {
  t.same(
    PROFILES.map((p) => p.dialect),
    DIALECTS,
  );
});

t.test('where every dialect agrees', async (t) => {
  t.same(readings('select 1; select 2'), same(['select 1', 'select 2']));
  t.same(readings("select ';' ; -- x; y\n"), same(["select ';'"]));
  t.same(readings('select 1 /* ; */ ;;'), same(['select 1']));
  t.same(readings("select 'it''s; ok'"), same(["select 'it''s; ok'"]));
  t.same(readings('  -- only\n/* comments */ ; '), same([]));
  t.same(readings("select 'abc"), same('an unterminated string literal'));
  t.same(readings('select /* abc'), same('an unterminated comment'));
  t.same(readings('select 1；select 2'), same(['select 1；select 2']), 'a fullwidth semicolon is punctuation');
});

t.test('where the dialects disagree', async (t) => {
  t.same(
    readings('select 1 # x; y'),
    {
      PostgreSQL: ['select 1 # x', 'y'],
      MySQL: ['select 1'],
      BigQuery: ['select 1'],
      Snowflake: ['select 1 # x', 'y'],
      'T-SQL': ['select 1 # x', 'y'],
    },
    '# comments: MySQL and BigQuery',
  );
  t.same(
    readings('select 1 // x; y'),
    {
      PostgreSQL: ['select 1 // x', 'y'],
      MySQL: ['select 1 // x', 'y'],
      BigQuery: ['select 1 // x', 'y'],
      Snowflake: ['select 1'],
      'T-SQL': ['select 1 // x', 'y'],
    },
    '// comments: Snowflake',
  );
  t.same(
    readings('select 1 --x; y'),
    {
      PostgreSQL: ['select 1'],
      MySQL: ['select 1 --x', 'y'],
      BigQuery: ['select 1'],
      Snowflake: ['select 1'],
      'T-SQL': ['select 1'],
    },
    'MySQL needs a space after --',
  );
  t.same(
    readings('select 1 /* /* */ ; x */ ; y'),
    {
      PostgreSQL: ['select 1', 'y'],
      MySQL: ['select 1', 'x */', 'y'],
      BigQuery: ['select 1', 'x */', 'y'],
      Snowflake: ['select 1', 'x */', 'y'],
      'T-SQL': ['select 1', 'y'],
    },
    'nested comments: PostgreSQL and T-SQL',
  );
  t.same(
    readings('select 1 /*!50000 ; x */'),
    {
      PostgreSQL: ['select 1'],
      MySQL: ['select 1', 'x'],
      BigQuery: ['select 1'],
      Snowflake: ['select 1'],
      'T-SQL': ['select 1'],
    },
    'MySQL runs /*! */',
  );
  t.same(
    readings("select '\\'; x; '"),
    {
      PostgreSQL: 'an unterminated string literal',
      MySQL: ["select '\\'; x; '"],
      BigQuery: ["select '\\'; x; '"],
      Snowflake: ["select '\\'; x; '"],
      'T-SQL': 'an unterminated string literal',
    },
    'backslash escapes: MySQL, BigQuery, Snowflake',
  );
  t.same(
    readings("select E'\\'; x'"),
    {
      PostgreSQL: ["select E'\\'; x'"],
      MySQL: ["select E'\\'; x'"],
      BigQuery: ["select E'\\'; x'"],
      Snowflake: ["select E'\\'; x'"],
      'T-SQL': 'an unterminated string literal',
    },
    "PostgreSQL's E'' strings take backslash escapes",
  );
  t.same(readings('select "a;b"'), same(['select "a;b"']), 'double quotes: a name or a string, the same boundaries');
  t.same(
    readings('select `a;b`'),
    {
      PostgreSQL: ['select `a', 'b`'],
      MySQL: ['select `a;b`'],
      BigQuery: ['select `a;b`'],
      Snowflake: ['select `a', 'b`'],
      'T-SQL': ['select `a', 'b`'],
    },
    'backticks: MySQL and BigQuery',
  );
  t.same(
    readings('select [a;b]'),
    {
      PostgreSQL: ['select [a', 'b]'],
      MySQL: ['select [a', 'b]'],
      BigQuery: ['select [a', 'b]'],
      Snowflake: ['select [a', 'b]'],
      'T-SQL': ['select [a;b]'],
    },
    'brackets: T-SQL',
  );
  t.same(
    readings('select $t$a;b$t$'),
    {
      PostgreSQL: ['select $t$a;b$t$'],
      MySQL: ['select $t$a', 'b$t$'],
      BigQuery: ['select $t$a', 'b$t$'],
      Snowflake: ['select $t$a', 'b$t$'],
      'T-SQL': ['select $t$a', 'b$t$'],
    },
    'tagged dollar quotes: PostgreSQL',
  );
  t.same(
    readings('select $$a;b$$'),
    {
      PostgreSQL: ['select $$a;b$$'],
      MySQL: ['select $$a', 'b$$'],
      BigQuery: ['select $$a', 'b$$'],
      Snowflake: ['select $$a;b$$'],
      'T-SQL': ['select $$a', 'b$$'],
    },
    '$$ quotes: PostgreSQL and Snowflake',
  );
  t.same(
    readings("select '''a;'b''' x"),
    {
      PostgreSQL: 'an unterminated string literal',
      MySQL: 'an unterminated string literal',
      BigQuery: ["select '''a;'b''' x"],
      Snowflake: 'an unterminated string literal',
      'T-SQL': 'an unterminated string literal',
    },
    'triple quotes: BigQuery',
  );
  t.same(
    readings('select 1\n  go  \nselect 2\nGO 3\nselect 3 go'),
    {
      PostgreSQL: ['select 1\n  go  \nselect 2\nGO 3\nselect 3 go'],
      MySQL: ['select 1\n  go  \nselect 2\nGO 3\nselect 3 go'],
      BigQuery: ['select 1\n  go  \nselect 2\nGO 3\nselect 3 go'],
      Snowflake: ['select 1\n  go  \nselect 2\nGO 3\nselect 3 go'],
      'T-SQL': ['select 1', 'select 2', 'select 3 go'],
    },
    'GO lines: T-SQL (a GO inside a line is a name)',
  );
});

t.test('a reading that breaks off keeps the pieces before the break', async (t) => {
  const mysql = PROFILES[1]!;
  const r = lex("select 1; drop table t; select 'x", mysql);
  t.equal(r.ok, false);
  if (r.ok) return;
  t.equal(r.reason, 'an unterminated string literal');
  t.same(
    r.pieces.map((p) => p.tokens.map((k) => k.text).join(' ')),
    ['select 1', 'drop table t'],
  );
  t.same(
    r.rest?.tokens.map((k) => k.text),
    ['select'],
    'the broken piece',
  );
  const atStart = lex("select 1; '", mysql);
  t.same(atStart.ok ? 'ok' : [atStart.pieces.length, atStart.rest], [1, undefined], 'nothing after the last separator but the quote');
});

t.test('tokens', async (t) => {
  const r = lex("SELECT N'x', E'y', U&'z', r'w' FROM [Dbo].t", PROFILES[0]!);
  t.ok(r.ok);
  if (!r.ok) return;
  t.same(
    r.tokens.map((k) => [k.kind, k.text]),
    [
      ['word', 'select'],
      ['string', "N'x'"],
      ['punct', ','],
      ['string', "E'y'"],
      ['punct', ','],
      ['string', "U&'z'"],
      ['punct', ','],
      ['word', 'r'],
      ['string', "'w'"],
      ['word', 'from'],
      ['punct', '['],
      ['word', 'dbo'],
      ['punct', ']'],
      ['punct', '.'],
      ['word', 't'],
    ],
    'PostgreSQL: prefixes it knows join their string, words are lower-cased',
  );
});

t.test('canonical text for the parsers', async (t) => {
  const text = (sql: string, dialect: DialectName) => {
    const r = lexAll(sql).find((x) => x.profile.dialect === dialect)!;
    if (!r.ok) throw new Error(r.reason);
    return canonicalText(sql, r.pieces[0]!.tokens);
  };
  t.equal(text("select E'\\'' /* c */ , $x$;$x$ -- d\n from \"we;ird\"", 'PostgreSQL'), "select 's' , 's'\nfrom \"we_ird\"");
  t.equal(text("select 1 # c\n, 'a\\'b', `x``y` from t", 'MySQL'), "select 1\n, 's', `x__y` from t");
  t.equal(text('select 1 /*!50000 , 2 */ from t', 'MySQL'), 'select 1 , 2 from t');
  t.equal(text("select [a]]b], N'x' from t", 'T-SQL'), "select [a__b], 's' from t");
});
