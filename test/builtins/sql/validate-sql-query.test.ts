/**
 * ld.validateSqlQuery (spec "SQL checks": the trimmed query if it is non-empty and holds a single
 * statement; otherwise an error). A corpus across PostgreSQL, MySQL, BigQuery, Snowflake and T-SQL:
 * queries that must pass (semicolons in strings, quoted names, comments and dollar quotes are text),
 * stacked statements and the tricks that hide them (a comment or quote style one dialect has and
 * another has not; T-SQL needs no semicolons), empty and unterminated input.
 */
import t from 'tap';
import { MAX_QUERY_LENGTH, validateSqlQuery } from '../../../runner/builtins/sql/sql-checks.js';
import { call, expected, type Row } from './sql-test-helpers.js';

const two = (readers = '') => `validateSqlQuery: the query must hold exactly one statement, but it holds 2${readers}`;
const EMPTY = 'validateSqlQuery: the query is empty';

const CORPUS: Row[] = [
  // PostgreSQL
  { dialect: 'PostgreSQL', why: 'a plain query', query: "SELECT id, name FROM users WHERE created_at > now() - interval '7 days'", expect: true },
  { dialect: 'PostgreSQL', why: 'a trailing semicolon', query: 'select a::text from t;', expect: true },
  { dialect: 'PostgreSQL', why: 'a semicolon in a dollar quote', query: 'select $$a;b$$', expect: true },
  { dialect: 'PostgreSQL', why: 'a tagged dollar quote', query: 'select $tag$ a; b $tag$ as s', expect: true },
  {
    dialect: 'PostgreSQL',
    why: 'a tagged dollar quote holding statements is refused: the other dialects read them as code',
    query: 'select $fn$ begin; select 1; end $fn$ as body',
    expect: 'validateSqlQuery: the query must hold exactly one statement, but it holds 3 (as MySQL, BigQuery, Snowflake and T-SQL read it)',
  },
  { dialect: 'PostgreSQL', why: 'an escape string', query: "select E'it\\'s; fine' as s", expect: true },
  { dialect: 'PostgreSQL', why: 'a semicolon in a quoted identifier', query: 'select "a;b" from "t;u"', expect: true },
  {
    dialect: 'PostgreSQL',
    why: 'a recursive CTE',
    query: 'WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r',
    expect: true,
  },
  { dialect: 'PostgreSQL', why: 'two statements', query: 'select 1; select 2', expect: two() },
  { dialect: 'PostgreSQL', why: 'a stacked DROP', query: 'select * from users; drop table users', expect: two() },
  {
    dialect: 'PostgreSQL',
    why: 'a backslash that ends a string in PostgreSQL (MySQL reads one string)',
    query: "select '\\'; drop table t; --'",
    expect: two(' (as PostgreSQL and T-SQL read it)'),
  },
  {
    dialect: 'PostgreSQL',
    why: 'a dollar quote that MySQL reads as names around a DROP',
    query: 'select $$x; drop table t; $$',
    expect: two(' (as MySQL, BigQuery and T-SQL read it)'),
  },
  // MySQL
  { dialect: 'MySQL', why: 'backticks and a backslash escape', query: "SELECT `id` FROM `users` WHERE name = 'O\\'Brien; Jr'", expect: true },
  { dialect: 'MySQL', why: 'a # comment at the end', query: 'select * from t where a = 1 # trailing comment', expect: true },
  { dialect: 'MySQL', why: 'a double-quoted string', query: 'select "a;b" as s', expect: true },
  { dialect: 'MySQL', why: 'LIMIT offset, count', query: 'SELECT * FROM t LIMIT 5, 10', expect: true },
  { dialect: 'MySQL', why: '--1 is not a comment in MySQL', query: 'select 1 --1; drop table t', expect: two(' (as MySQL reads it)') },
  { dialect: 'MySQL', why: 'MySQL runs the content of /*! */', query: 'select 1 /*!; drop table t */', expect: two(' (as MySQL reads it)') },
  {
    dialect: 'MySQL',
    why: 'MySQL runs the statements before an unterminated quote',
    query: "select * from t where a = '1' /*!; DROP TABLE users */ --'",
    expect: two(' (as MySQL reads it)'),
  },
  {
    dialect: 'MySQL',
    why: 'a # comment holding a statement for other dialects',
    query: 'select 1 # note; with a semicolon',
    expect: two(' (as PostgreSQL, Snowflake and T-SQL read it)'),
  },
  // BigQuery
  { dialect: 'BigQuery', why: 'a backquoted project path', query: 'SELECT * FROM `proj.ds.t` WHERE x = 1', expect: true },
  { dialect: 'BigQuery', why: 'a triple-quoted string', query: "select '''a;b''' as s", expect: true },
  { dialect: 'BigQuery', why: 'a raw string', query: "select r'C:\\;x' as p", expect: true },
  {
    dialect: 'BigQuery',
    why: '# hides a DROP from BigQuery only',
    query: 'select 1 # x; drop table t',
    expect: two(' (as PostgreSQL, Snowflake and T-SQL read it)'),
  },
  // Snowflake
  { dialect: 'Snowflake', why: 'a JSON path and a // comment', query: 'select v:name::string from raw // trailing comment', expect: true },
  { dialect: 'Snowflake', why: 'a $$ string', query: 'select $$;$$ as s', expect: true },
  { dialect: 'Snowflake', why: 'QUALIFY', query: 'SELECT * FROM t QUALIFY ROW_NUMBER() OVER (ORDER BY a) = 1', expect: true },
  {
    dialect: 'Snowflake',
    why: '// hides a DROP from Snowflake only',
    query: 'select 1 // x; drop table t',
    expect: two(' (as PostgreSQL, MySQL, BigQuery and T-SQL read it)'),
  },
  // T-SQL
  { dialect: 'T-SQL', why: 'brackets, TOP and a table hint', query: 'SELECT TOP 10 [a;b] FROM [dbo].[t] WITH (NOLOCK)', expect: true },
  { dialect: 'T-SQL', why: 'a national string', query: "select N'x;y' as s", expect: true },
  { dialect: 'T-SQL', why: 'a procedure call is one statement', query: 'exec sp_who', expect: true },
  { dialect: 'T-SQL', why: 'no semicolon needed before DROP', query: 'select 1 drop table t', expect: two(' (as T-SQL reads it)') },
  { dialect: 'T-SQL', why: 'no semicolon needed before SELECT', query: 'select 1 select 2', expect: two(' (as T-SQL reads it)') },
  { dialect: 'T-SQL', why: 'a GO line ends a batch', query: 'select 1\nGO\nselect 2', expect: two(' (as T-SQL reads it)') },
  { dialect: 'T-SQL', why: 'WAITFOR after a SELECT', query: "select 1 waitfor delay '0:0:10'", expect: two(' (as T-SQL reads it)') },
  { dialect: 'T-SQL', why: 'EXEC after a SELECT', query: "select 1 exec xp_cmdshell 'dir'", expect: two(' (as T-SQL reads it)') },
  // Injection shapes and edge cases in every dialect
  { dialect: 'any', why: 'the classic quote-breaking injection', query: "select * from t where a = '1'; drop table t; --'", expect: two() },
  { dialect: 'any', why: 'stacked statements behind comments', query: 'select 1 /* a */; /* b */ delete from t -- c', expect: two() },
  { dialect: 'any', why: 'a semicolon in a block comment', query: 'select 1 /*;*/', expect: true },
  { dialect: 'any', why: 'a semicolon in a line comment', query: 'select 1; -- drop table t', expect: true },
  { dialect: 'any', why: 'a semicolon in a string', query: "select ';' as s", expect: true },
  { dialect: 'any', why: 'empty statements are ignored', query: 'select 1;;', expect: true },
  { dialect: 'any', why: 'leading and trailing separators', query: ' ;select 1; /* c */ ; ', expect: true },
  { dialect: 'any', why: 'surrounding whitespace is trimmed', query: '\n\t  select 1  \n', expect: true },
  { dialect: 'any', why: 'a fullwidth semicolon is text', query: 'select a；b from t', expect: true },
  { dialect: 'any', why: 'a Greek question mark is text', query: 'select a\u037eb from t', expect: true },
  { dialect: 'any', why: 'a fullwidth semicolon does not hide a T-SQL statement', query: 'select 1；drop table t', expect: two(' (as T-SQL reads it)') },
  { dialect: 'any', why: 'non-ASCII names', query: 'select prénom from café', expect: true },
  { dialect: 'any', why: 'a statement and a stray string', query: "select 1; 'x'", expect: two() },
  { dialect: 'any', why: 'the empty string', query: '', expect: EMPTY },
  { dialect: 'any', why: 'only whitespace', query: '  \n\t ', expect: EMPTY },
  { dialect: 'any', why: 'only a comment', query: '-- only a comment', expect: EMPTY },
  { dialect: 'any', why: 'only comments and semicolons', query: '/* a */ ; /* b */ ;;', expect: EMPTY },
  { dialect: 'any', why: 'a string is not a statement', query: "'just a string'", expect: 'validateSqlQuery: the query holds no SQL statement' },
  {
    dialect: 'any',
    why: 'an unterminated string',
    query: "select 'abc",
    expect: { name: 'SyntaxError', message: 'validateSqlQuery: the query is not valid SQL: it has an unterminated string literal' },
  },
  {
    dialect: 'any',
    why: 'an unterminated comment',
    query: 'select 1 /* open',
    expect: { name: 'SyntaxError', message: 'validateSqlQuery: the query is not valid SQL: it has an unterminated comment' },
  },
  {
    dialect: 'any',
    why: 'an unterminated quoted name',
    query: 'select "abc',
    expect: { name: 'SyntaxError', message: 'validateSqlQuery: the query is not valid SQL: it has an unterminated quoted identifier' },
  },
];

t.test('the corpus', async (t) => {
  t.ok(CORPUS.length >= 40, `${CORPUS.length} queries`);
  for (const d of ['PostgreSQL', 'MySQL', 'BigQuery', 'Snowflake', 'T-SQL'] as const) {
    t.ok(CORPUS.filter((r) => r.dialect === d).length >= 4, `at least 4 queries written for ${d}`);
  }
  for (const row of CORPUS) {
    t.same(call(validateSqlQuery, [row.query]), expected(row), `${row.dialect}: ${row.why}: ${JSON.stringify(row.query)}`);
  }
});

t.test('returns exactly the trimmed query', async (t) => {
  t.equal((call(validateSqlQuery, ['  select 1;  \n']) as { value: unknown }).value, 'select 1;', 'the semicolon stays, the whitespace goes');
  t.equal((call(validateSqlQuery, ['\u00a0select 1\ufeff']) as { value: unknown }).value, 'select 1', 'Unicode spaces and a BOM are trimmed too');
});

t.test('the argument must be a string', async (t) => {
  const typeError = (got: string) => ({ name: 'TypeError', message: `validateSqlQuery(query) takes a string, got ${got}` });
  t.same(call(validateSqlQuery, []), typeError('nothing'));
  t.same(call(validateSqlQuery, [null]), typeError('null'));
  t.same(call(validateSqlQuery, [42]), typeError('a number'));
  t.same(call(validateSqlQuery, [{ query: 'select 1' }]), typeError('an object'));
  t.same(call(validateSqlQuery, [['select 1']]), typeError('an array'));
  t.same(call(validateSqlQuery, [new Uint8Array([1])]), typeError('binary data'));
});

t.test('a query over the length limit is refused before parsing', async (t) => {
  const atLimit = `select '${'a'.repeat(MAX_QUERY_LENGTH - 9)}'`;
  t.equal(atLimit.length, MAX_QUERY_LENGTH);
  t.same(call(validateSqlQuery, [atLimit]), { value: atLimit }, 'exactly at the limit');
  t.same(call(validateSqlQuery, [`${atLimit} `]), {
    name: 'RangeError',
    message: `validateSqlQuery: the query is ${MAX_QUERY_LENGTH + 1} characters long, over the limit of ${MAX_QUERY_LENGTH}`,
  });
});

t.test('a query past the deadline stops before the parsers', async (t) => {
  // The MySQL reading has a junk piece (`b$$`), so the grammars are asked; the deadline has passed.
  const past = { deadline: performance.now() - 1 } as Parameters<typeof call>[2];
  t.same(call(validateSqlQuery, ['select $$a;b$$'], past), {
    name: 'Error',
    message: 'validateSqlQuery: the call ran out of time while checking the query',
  });
});
