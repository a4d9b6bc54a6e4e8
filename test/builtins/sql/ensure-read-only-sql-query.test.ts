/**
 * ld.ensureReadOnlySqlQuery (spec "SQL checks": the trimmed query if its execution type is listing
 * or information only; statements that modify data are rejected). A corpus across PostgreSQL, MySQL,
 * BigQuery, Snowflake and T-SQL: reads and listings that pass, every kind of write refused with its
 * statement type named, the tricks that hide a write (writable CTEs, SELECT INTO, EXPLAIN ANALYZE,
 * comment and quote styles one dialect has and another has not, T-SQL statements without semicolons),
 * and queries that cannot be proven read-only.
 */
import t from 'tap';
import { ensureReadOnlySqlQuery, MAX_QUERY_LENGTH } from '../../../runner/builtins/sql/sql-checks.js';
import { classifyStatements, parseIn, ParseMeter, PARSER_DIALECTS } from '../../../runner/builtins/sql/sql-parsers.js';
import { call, expected, type Row } from './sql-test-helpers.js';

const ONLY = '(only SELECT, SHOW, DESCRIBE and EXPLAIN)';
const refused = (type: string, context = '') => `ensureReadOnlySqlQuery: ${type} statements are not allowed${context} ${ONLY}`;
const UNVERIFIED =
  'ensureReadOnlySqlQuery: the query could not be verified as read-only: none of the supported SQL dialects (PostgreSQL, MySQL, BigQuery, Snowflake, T-SQL) could parse it';
const IN_WITH = ', even inside a WITH clause';
const UNDER_EXPLAIN = ', even under EXPLAIN';

const CORPUS: Row[] = [
  // Reads and listings that pass.
  { dialect: 'PostgreSQL', why: 'parameters and casts', query: 'select a::int, b from t where c = $1', expect: true },
  {
    dialect: 'PostgreSQL',
    why: 'a recursive CTE',
    query: 'WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r',
    expect: true,
  },
  {
    dialect: 'PostgreSQL',
    why: 'DISTINCT ON and JSON operators',
    query: "select distinct on (user_id) data->>'name' from events order by user_id",
    expect: true,
  },
  { dialect: 'PostgreSQL', why: 'a dollar-quoted string', query: 'select $$;$$ as s', expect: true },
  { dialect: 'PostgreSQL', why: 'EXPLAIN ANALYZE of a SELECT', query: 'EXPLAIN ANALYZE SELECT * FROM t WHERE a = 1', expect: true },
  { dialect: 'PostgreSQL', why: 'EXPLAIN with options', query: 'EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1', expect: true },
  { dialect: 'PostgreSQL', why: 'SHOW a setting', query: 'SHOW search_path', expect: true },
  { dialect: 'PostgreSQL', why: 'several reads', query: 'select 1; select 2;', expect: true },
  { dialect: 'MySQL', why: 'backticks and LIMIT offset, count', query: "SELECT `a` FROM `t` WHERE b = 'x\\'y' LIMIT 5, 10", expect: true },
  { dialect: 'MySQL', why: 'SHOW CREATE TABLE lists a definition', query: 'SHOW CREATE TABLE t', expect: true },
  { dialect: 'MySQL', why: 'SHOW FULL TABLES', query: 'SHOW FULL TABLES', expect: true },
  { dialect: 'MySQL', why: 'DESCRIBE a table', query: 'DESCRIBE t', expect: true },
  { dialect: 'MySQL', why: 'DESCRIBE used as EXPLAIN', query: 'describe select * from t', expect: true },
  { dialect: 'MySQL', why: 'EXPLAIN FORMAT=JSON', query: 'EXPLAIN FORMAT=JSON SELECT * FROM t', expect: true },
  { dialect: 'MySQL', why: 'a # comment', query: 'select * from t where a = 1 # note', expect: true },
  { dialect: 'MySQL', why: 'the INSERT() string function', query: "select insert('abc', 1, 1, 'x')", expect: true },
  { dialect: 'BigQuery', why: 'a backquoted path', query: "SELECT * FROM `proj.ds.t` WHERE _PARTITIONTIME > TIMESTAMP('2024-01-01')", expect: true },
  { dialect: 'BigQuery', why: 'UNNEST', query: 'SELECT x FROM UNNEST([3, 1, 2]) AS x', expect: true },
  { dialect: 'BigQuery', why: 'a triple-quoted string', query: "select '''a; delete from t''' as s", expect: true },
  { dialect: 'Snowflake', why: 'a JSON path', query: 'select v:name::string from raw_json', expect: true },
  { dialect: 'Snowflake', why: 'FLATTEN', query: "select * from table(flatten(input => parse_json('[1]')))", expect: true },
  { dialect: 'Snowflake', why: 'DESC TABLE', query: 'DESC TABLE db.s.t', expect: true },
  { dialect: 'Snowflake', why: 'EXPLAIN USING TEXT', query: 'EXPLAIN USING TEXT SELECT 1', expect: true },
  { dialect: 'Snowflake', why: 'SHOW TABLES', query: "SHOW TABLES LIKE 'user%'", expect: true },
  { dialect: 'T-SQL', why: 'TOP, brackets, a table hint', query: 'SELECT TOP 10 [a;b] FROM [dbo].[t] WITH (NOLOCK)', expect: true },
  { dialect: 'T-SQL', why: 'OFFSET FETCH', query: 'select * from t order by a offset 5 rows fetch next 5 rows only', expect: true },
  { dialect: 'T-SQL', why: 'CROSS APPLY', query: 'SELECT * FROM o CROSS APPLY (SELECT TOP 1 * FROM i WHERE i.o = o.id) x', expect: true },
  { dialect: 'T-SQL', why: 'two batches of reads', query: 'select 1\nGO\nselect 2', expect: true },
  { dialect: 'any', why: 'UNION of parenthesised SELECTs', query: '(select 1) union (select 2)', expect: true },
  {
    dialect: 'any',
    why: 'write keywords in strings, quoted names, comments',
    query: 'select 1 as "delete", \'drop table t\' /* update t */ -- insert\n',
    expect: true,
  },
  { dialect: 'any', why: 'qualified names and variables that look like keywords', query: 'select t.update from t where a = @delete', expect: true },
  {
    dialect: 'any',
    why: 'the classic UNION injection still only reads',
    query: "SELECT 1 FROM t WHERE a = '' OR 1=1 UNION SELECT password FROM users",
    expect: true,
  },
  // Reads no grammar parses, proven by their tokens (runner/builtins/sql/sql-token-proof.ts).
  { dialect: 'any', why: 'an aggregate over DISTINCT', query: 'SELECT SUM(DISTINCT x) FROM t', expect: true },
  { dialect: 'any', why: 'an expression in LIMIT', query: 'select 1 limit 1 + 1', expect: true },
  { dialect: 'MySQL', why: 'the null-safe equality', query: 'select a <=> b from t', expect: true },
  { dialect: 'Snowflake', why: 'SELECT * RENAME', query: 'SELECT * RENAME a AS b FROM t', expect: true },
  { dialect: 'BigQuery', why: 'SELECT * REPLACE', query: 'SELECT * REPLACE (1 AS x) FROM o', expect: true },
  { dialect: 'T-SQL', why: 'a MERGE join hint', query: 'SELECT x FROM a INNER MERGE JOIN b ON b.id = a.id', expect: true },
  { dialect: 'T-SQL', why: 'FOR XML after a CASE ... END', query: "select case when a = 1 then 'x' end as c from t for xml path('r')", expect: true },
  // Functions that write, lock or run other statements.
  {
    dialect: 'PostgreSQL',
    why: 'a sequence advances',
    query: "select nextval('s')",
    expect: 'ensureReadOnlySqlQuery: calls to NEXTVAL() are not allowed: it writes, locks or runs other statements (only SELECT, SHOW, DESCRIBE and EXPLAIN)',
  },
  {
    dialect: 'PostgreSQL',
    why: 'an advisory lock in a statement no grammar parses',
    query: 'select sum(distinct pg_advisory_lock(1))',
    expect:
      'ensureReadOnlySqlQuery: calls to PG_ADVISORY_LOCK() are not allowed: it writes, locks or runs other statements (only SELECT, SHOW, DESCRIBE and EXPLAIN)',
  },
  {
    dialect: 'T-SQL',
    why: 'NEXT VALUE FOR',
    query: 'select next value for s',
    expect:
      'ensureReadOnlySqlQuery: calls to NEXT VALUE FOR are not allowed: it writes, locks or runs other statements (only SELECT, SHOW, DESCRIBE and EXPLAIN)',
  },
  { dialect: 'PostgreSQL', why: 'a function that assigns a transaction id', query: 'select txid_current()', expect: writingCall('TXID_CURRENT()') },
  { dialect: 'PostgreSQL', why: 'a quoted function name', query: 'select "setval"(\'s\', 1)', expect: writingCall('SETVAL()') },
  { dialect: 'PostgreSQL', why: 'a quoted, schema-qualified function name', query: 'select "pg_catalog"."setval"(\'s\', 1)', expect: writingCall('SETVAL()') },
  { dialect: 'MySQL', why: 'a backquoted function name', query: "select `get_lock`('x', 10)", expect: writingCall('GET_LOCK()') },
  { dialect: 'T-SQL', why: 'a bracketed function name', query: "select * from [openquery](srv, 'delete from t')", expect: writingCall('OPENQUERY()') },
  { dialect: 'Snowflake', why: 'a quoted sequence method', query: 'select s."nextval"', expect: writingCall('NEXTVAL') },
  { dialect: 'any', why: 'a function named like one that writes, in a string', query: 'select \'nextval(1)\', "setval" from t', expect: true },
  // Writes, each named.
  { dialect: 'any', why: 'INSERT', query: 'INSERT INTO t VALUES (1)', expect: refused('INSERT') },
  { dialect: 'any', why: 'INSERT ... SELECT', query: 'insert into t select * from u', expect: refused('INSERT') },
  { dialect: 'any', why: 'UPDATE', query: 'UPDATE t SET a = 1', expect: refused('UPDATE') },
  { dialect: 'any', why: 'DELETE', query: 'DELETE FROM t', expect: refused('DELETE') },
  { dialect: 'any', why: 'MERGE', query: 'MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE', expect: refused('MERGE') },
  { dialect: 'MySQL', why: 'REPLACE', query: 'REPLACE INTO t VALUES (1)', expect: refused('REPLACE') },
  { dialect: 'any', why: 'CREATE', query: 'CREATE TABLE t (a int)', expect: refused('CREATE') },
  { dialect: 'any', why: 'DROP', query: 'DROP TABLE t', expect: refused('DROP') },
  { dialect: 'any', why: 'ALTER', query: 'ALTER TABLE t ADD b int', expect: refused('ALTER') },
  { dialect: 'any', why: 'TRUNCATE', query: 'TRUNCATE t', expect: refused('TRUNCATE') },
  { dialect: 'any', why: 'GRANT', query: 'GRANT SELECT ON t TO u', expect: refused('GRANT') },
  { dialect: 'any', why: 'REVOKE', query: 'REVOKE SELECT ON t FROM u', expect: refused('REVOKE') },
  { dialect: 'any', why: 'CALL', query: 'CALL p()', expect: refused('CALL') },
  { dialect: 'any', why: 'a JDBC/ODBC call escape', query: '{call p()}', expect: refused('CALL') },
  { dialect: 'T-SQL', why: 'EXEC', query: 'EXEC sp_who', expect: refused('EXEC') },
  {
    dialect: 'T-SQL',
    why: 'a bare procedure name runs it',
    query: 'sp_who',
    expect: `ensureReadOnlySqlQuery: statements starting with SP_WHO are not allowed ${ONLY}`,
  },
  { dialect: 'PostgreSQL', why: 'COPY', query: "COPY t FROM '/tmp/x'", expect: refused('COPY') },
  { dialect: 'any', why: 'SET', query: 'SET search_path = x', expect: refused('SET') },
  { dialect: 'any', why: 'USE', query: 'USE db', expect: refused('USE') },
  { dialect: 'any', why: 'LOCK', query: 'LOCK TABLE t', expect: refused('LOCK') },
  { dialect: 'PostgreSQL', why: 'VACUUM', query: 'VACUUM', expect: refused('VACUUM') },
  { dialect: 'PostgreSQL', why: 'ANALYZE', query: 'ANALYZE t', expect: refused('ANALYZE') },
  { dialect: 'any', why: 'a transaction', query: 'BEGIN', expect: refused('BEGIN') },
  // Writes hidden in reads.
  { dialect: 'PostgreSQL', why: 'a writable CTE', query: 'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d', expect: refused('DELETE', IN_WITH) },
  {
    dialect: 'PostgreSQL',
    why: 'a writable CTE with INSERT',
    query: 'with n as (insert into t values (1) returning id) select id from n',
    expect: refused('INSERT', IN_WITH),
  },
  { dialect: 'any', why: 'WITH ... DELETE', query: 'WITH x AS (SELECT 1) DELETE FROM t', expect: refused('DELETE') },
  { dialect: 'any', why: 'WITH ... UPDATE', query: 'WITH x AS (SELECT 1) UPDATE t SET a = 1', expect: refused('UPDATE') },
  { dialect: 'T-SQL', why: 'SELECT INTO creates a table', query: 'SELECT * INTO t2 FROM t', expect: refused('SELECT ... INTO') },
  { dialect: 'MySQL', why: 'SELECT INTO a variable', query: 'SELECT a INTO @v FROM t', expect: refused('SELECT ... INTO') },
  { dialect: 'MySQL', why: 'SELECT INTO OUTFILE writes a file', query: "SELECT * FROM t INTO OUTFILE '/tmp/x'", expect: refused('SELECT ... INTO') },
  { dialect: 'any', why: 'FOR UPDATE locks rows', query: 'SELECT * FROM t FOR UPDATE', expect: refused('SELECT ... FOR UPDATE') },
  // Locking reads other than FOR UPDATE: they block writers until the transaction ends.
  { dialect: 'PostgreSQL', why: 'FOR SHARE locks rows', query: 'select * from t for share', expect: refused('SELECT ... FOR SHARE') },
  { dialect: 'MySQL', why: 'FOR SHARE NOWAIT (MySQL 8)', query: 'SELECT * FROM t WHERE id = 1 FOR SHARE NOWAIT', expect: refused('SELECT ... FOR SHARE') },
  { dialect: 'PostgreSQL', why: 'FOR NO KEY UPDATE', query: 'select * from t for no key update', expect: refused('SELECT ... FOR NO KEY UPDATE') },
  { dialect: 'PostgreSQL', why: 'FOR KEY SHARE', query: 'select * from t for key share skip locked', expect: refused('SELECT ... FOR KEY SHARE') },
  {
    dialect: 'PostgreSQL',
    why: 'FOR UPDATE OF in a subquery',
    query: 'select * from (select * from t for update of t) x',
    expect: refused('SELECT ... FOR UPDATE'),
  },
  {
    dialect: 'MySQL',
    why: 'LOCK IN SHARE MODE (the MySQL grammar parses it)',
    query: 'SELECT * FROM t WHERE id = 1 LOCK IN SHARE MODE',
    expect: refused('SELECT ... LOCK IN SHARE MODE'),
  },
  ...['UPDLOCK', 'XLOCK', 'HOLDLOCK', 'TABLOCK', 'TABLOCKX', 'PAGLOCK', 'ROWLOCK', 'SERIALIZABLE', 'REPEATABLEREAD', 'READCOMMITTEDLOCK'].map(
    (hint): Row => ({
      dialect: 'T-SQL',
      why: `the ${hint} table hint`,
      query: `SELECT * FROM dbo.t WITH (${hint}) WHERE id = 1`,
      expect: refused(`SELECT ... WITH (${hint})`),
    }),
  ),
  {
    dialect: 'T-SQL',
    why: 'a locking hint after an allowed one',
    query: 'select * from t with (nolock, updlock)',
    expect: refused('SELECT ... WITH (UPDLOCK)'),
  },
  { dialect: 'T-SQL', why: 'hints separated by spaces', query: 'select * from t with (rowlock xlock)', expect: refused('SELECT ... WITH (ROWLOCK)') },
  { dialect: 'T-SQL', why: 'the old hint syntax without WITH', query: 'SELECT * FROM t (TABLOCKX)', expect: refused('SELECT ... WITH (TABLOCKX)') },
  {
    dialect: 'T-SQL',
    why: 'a hint in a joined subquery',
    query: 'select * from a join (select * from b with (holdlock)) c on a.id = c.id',
    expect: refused('SELECT ... WITH (HOLDLOCK)'),
  },
  {
    dialect: 'T-SQL',
    why: 'a hint in a CTE',
    query: 'with x as (select * from t with (serializable)) select * from x',
    expect: refused('SELECT ... WITH (SERIALIZABLE)'),
  },
  {
    dialect: 'T-SQL',
    why: 'a hint given as a query hint',
    query: 'select * from t option (table hint(t, updlock))',
    expect: refused('SELECT ... WITH (UPDLOCK)'),
  },
  { dialect: 'T-SQL', why: 'non-locking hints pass', query: 'SELECT * FROM t WITH (NOLOCK, READPAST, INDEX(ix_a))', expect: true },
  { dialect: 'any', why: 'hint and lock words as names pass', query: 'select t.share, t.for, serializable, x.rowlock from t where share = 1', expect: true },
  { dialect: 'any', why: 'FOR SYSTEM_TIME is no lock', query: 'select * from t for system_time as of current_timestamp', expect: true },
  // Locking reads in any case, split by odd whitespace and comments; the words in strings, quoted names and comments are text.
  { dialect: 'any', why: 'FOR UPDATE around a comment', query: 'SELECT * FROM t FOR/* c */UPDATE', expect: refused('SELECT ... FOR UPDATE') },
  { dialect: 'any', why: 'FOR SHARE over lines', query: 'select * from t\n\tfor\n\tshare', expect: refused('SELECT ... FOR SHARE') },
  {
    dialect: 'MySQL',
    why: 'LOCK IN SHARE MODE around a line comment',
    query: 'SELECT * FROM t LOCK -- c\n IN  SHARE\tMODE',
    expect: refused('SELECT ... LOCK IN SHARE MODE'),
  },
  {
    dialect: 'PostgreSQL',
    why: 'FOR NO KEY UPDATE in mixed case',
    query: 'select * from t For No  Key\nUpdate',
    expect: refused('SELECT ... FOR NO KEY UPDATE'),
  },
  {
    dialect: 'PostgreSQL',
    why: 'FOR KEY SHARE between comments',
    query: 'select * from t for /* a */ key /* b */ share',
    expect: refused('SELECT ... FOR KEY SHARE'),
  },
  { dialect: 'T-SQL', why: 'a hint in mixed case with spaces', query: 'SELECT * FROM t WITH ( UpdLock )', expect: refused('SELECT ... WITH (UPDLOCK)') },
  { dialect: 'T-SQL', why: 'a hint after a comment', query: 'select * from t with (nolock /* x */, tablock)', expect: refused('SELECT ... WITH (TABLOCK)') },
  { dialect: 'T-SQL', why: 'WITH( without a space', query: 'select * from t with(paglock)', expect: refused('SELECT ... WITH (PAGLOCK)') },
  { dialect: 'any', why: 'lock words in strings', query: "select 'FOR UPDATE' as s, 'lock in share mode' as a, 'for key share' as b from t", expect: true },
  { dialect: 'any', why: 'a lock in a string with a doubled quote', query: "select * from t where note = 'x'' for update'", expect: true },
  { dialect: 'PostgreSQL', why: 'lock words as a quoted name', query: 'select "for share" from t', expect: true },
  { dialect: 'T-SQL', why: 'hint words as bracketed names', query: 'select [updlock], [holdlock] from t with (nolock)', expect: true },
  { dialect: 'any', why: 'lock words in comments', query: 'select * from t /* with (xlock) */ -- for update', expect: true },
  { dialect: 'PostgreSQL', why: 'lock words in a dollar quote', query: 'select $$for share$$ as s', expect: true },
  // PostgreSQL and T-SQL read backticks as plain characters, so there the words are keywords (as `delete` is).
  {
    dialect: 'MySQL',
    why: 'lock words in backticks (keywords in other readings)',
    query: 'select `for update` from t',
    expect: refused('SELECT ... FOR UPDATE'),
  },
  { dialect: 'PostgreSQL', why: 'EXPLAIN ANALYZE runs the DELETE', query: 'EXPLAIN ANALYZE DELETE FROM t', expect: refused('DELETE', UNDER_EXPLAIN) },
  { dialect: 'PostgreSQL', why: 'EXPLAIN (options) of an UPDATE', query: 'EXPLAIN (ANALYZE) UPDATE t SET a = 1', expect: refused('UPDATE', UNDER_EXPLAIN) },
  {
    dialect: 'PostgreSQL',
    why: 'EXPLAIN ANALYZE of a writable CTE',
    query: 'explain analyze with d as (delete from t returning *) select * from d',
    expect: refused('DELETE', IN_WITH),
  },
  // Injection shapes.
  { dialect: 'any', why: 'a stacked DROP', query: 'select 1; drop table t', expect: refused('DROP') },
  { dialect: 'any', why: 'the classic quote-breaking injection', query: "select * from t where a = '1'; drop table t; --'", expect: refused('DROP') },
  { dialect: 'any', why: 'stacked statements behind comments', query: 'select 1 /* a */; /* b */ delete from t -- c', expect: refused('DELETE') },
  { dialect: 'PostgreSQL', why: 'a backslash ends the string in PostgreSQL', query: "select '\\'; drop table t; --'", expect: refused('DROP') },
  { dialect: 'PostgreSQL', why: 'a dollar quote MySQL reads as names', query: 'select $$x; drop table t; $$', expect: refused('DROP') },
  { dialect: 'MySQL', why: '# is an operator in PostgreSQL', query: 'select 1 # x; drop table t', expect: refused('DROP') },
  { dialect: 'MySQL', why: '--1 is not a comment in MySQL', query: 'select 1 --1; truncate t', expect: refused('TRUNCATE') },
  { dialect: 'MySQL', why: 'MySQL runs /*! ... */', query: 'select 1 /*!; drop table t */', expect: refused('DROP') },
  {
    dialect: 'MySQL',
    why: 'MySQL runs what comes before an unterminated quote',
    query: "select * from t where a = '1' /*!; DROP TABLE users */ --'",
    expect: refused('DROP'),
  },
  { dialect: 'Snowflake', why: '// is a comment in Snowflake only', query: 'select 1 // x; delete from t', expect: refused('DELETE') },
  {
    dialect: 'T-SQL',
    why: 'nested comments hide INTO from the others',
    query: 'select a /* /* */ from t -- */ into t2 from t',
    expect: refused('SELECT ... INTO'),
  },
  { dialect: 'T-SQL', why: 'no semicolon needed', query: 'select 1 drop table t', expect: refused('DROP') },
  { dialect: 'T-SQL', why: 'EXEC after a SELECT', query: "select * from t exec xp_cmdshell 'dir'", expect: refused('EXEC') },
  { dialect: 'T-SQL', why: 'WAITFOR after a SELECT', query: "select 1 waitfor delay '0:0:10'", expect: refused('WAITFOR') },
  { dialect: 'T-SQL', why: 'a GO line', query: 'select 1\nGO\ndrop table t', expect: refused('DROP') },
  { dialect: 'T-SQL', why: 'a label after a separator', query: 'select 1; x: delete from t', expect: refused('DELETE') },
  { dialect: 'any', why: 'a fullwidth semicolon is no separator, DROP is still a write', query: 'select 1；drop table t', expect: refused('DROP') },
  { dialect: 'any', why: 'a leading comment', query: '/* read */ delete from t', expect: refused('DELETE') },
  { dialect: 'any', why: 'a leading line comment', query: '-- select\ndelete from t', expect: refused('DELETE') },
  // Not provable: refused.
  { dialect: 'PostgreSQL', why: 'VALUES (no grammar parses it: proven by its tokens)', query: 'values (1), (2)', expect: true },
  { dialect: 'T-SQL', why: 'a PRINT after a read no grammar parses', query: "values (1), (2) print 'x'", expect: UNVERIFIED },
  {
    dialect: 'any',
    why: 'a stray string after a read',
    query: "select 1; 'x'",
    expect: UNVERIFIED.replace('read-only:', 'read-only (statement 2):'),
  },
  {
    dialect: 'any',
    why: 'absurd nesting is not parsed',
    query: `select ${'('.repeat(300)}1${')'.repeat(300)}`,
    expect: 'ensureReadOnlySqlQuery: the query could not be verified as read-only: it nests parentheses more than 256 deep',
  },
  { dialect: 'any', why: 'the empty string', query: '', expect: 'ensureReadOnlySqlQuery: the query is empty' },
  { dialect: 'any', why: 'only comments', query: '-- nothing\n/* here */;', expect: 'ensureReadOnlySqlQuery: the query is empty' },
  {
    dialect: 'any',
    why: 'an unterminated string',
    query: "select 'abc",
    expect: { name: 'SyntaxError', message: 'ensureReadOnlySqlQuery: the query is not valid SQL: it has an unterminated string literal' },
  },
];

/** The refusal of a call to a function that writes, locks or runs other statements. */
function writingCall(call: string): string {
  return `ensureReadOnlySqlQuery: calls to ${call} are not allowed: it writes, locks or runs other statements (only SELECT, SHOW, DESCRIBE and EXPLAIN)`;
}

t.test('the corpus', async (t) => {
  t.ok(CORPUS.length >= 40, `${CORPUS.length} queries`);
  for (const d of ['PostgreSQL', 'MySQL', 'BigQuery', 'Snowflake', 'T-SQL'] as const) {
    t.ok(CORPUS.filter((r) => r.dialect === d).length >= 3, `at least 3 queries written for ${d}`);
  }
  for (const row of CORPUS) {
    t.same(call(ensureReadOnlySqlQuery, [row.query]), expected(row), `${row.dialect}: ${row.why}: ${JSON.stringify(row.query)}`);
  }
});

t.test('returns exactly the trimmed query', async (t) => {
  t.same(call(ensureReadOnlySqlQuery, ['\n  select 1; select 2;  ']), { value: 'select 1; select 2;' });
});

t.test('the argument must be a string, of bounded length', async (t) => {
  t.same(call(ensureReadOnlySqlQuery, []), { name: 'TypeError', message: 'ensureReadOnlySqlQuery(query) takes a string, got nothing' });
  t.same(call(ensureReadOnlySqlQuery, [undefined]), { name: 'TypeError', message: 'ensureReadOnlySqlQuery(query) takes a string, got undefined' });
  t.same(call(ensureReadOnlySqlQuery, [true]), { name: 'TypeError', message: 'ensureReadOnlySqlQuery(query) takes a string, got a boolean' });
  t.same(call(ensureReadOnlySqlQuery, [{}]), { name: 'TypeError', message: 'ensureReadOnlySqlQuery(query) takes a string, got an object' });
  t.same(call(ensureReadOnlySqlQuery, ['x'.repeat(MAX_QUERY_LENGTH + 1)]), {
    name: 'RangeError',
    message: `ensureReadOnlySqlQuery: the query is ${MAX_QUERY_LENGTH + 1} characters long, over the limit of ${MAX_QUERY_LENGTH}`,
  });
});

t.test('the deadline is checked between parser attempts', async (t) => {
  const past = { deadline: performance.now() - 1 } as Parameters<typeof call>[2];
  t.same(call(ensureReadOnlySqlQuery, ['select 1'], past), {
    name: 'Error',
    message: 'ensureReadOnlySqlQuery: the call ran out of time while checking the query',
  });
  t.same(call(ensureReadOnlySqlQuery, ['delete from t'], past), { name: 'Error', message: refused('DELETE') }, 'a write is refused without parsing');
});

t.test('a locking read the grammars parse is a write in their verdict too', async (t) => {
  const verdict = (dialect: string, query: string) => {
    const d = PARSER_DIALECTS.find((p) => p.name === dialect)!;
    const outcome = parseIn(d, query, new ParseMeter(query.length, Number.POSITIVE_INFINITY));
    return outcome.kind === 'parsed' ? classifyStatements(outcome.statements) : outcome.kind;
  };
  t.same(verdict('MySQL', 'select * from t lock in share mode'), { kind: 'write', type: 'SELECT ... LOCK IN SHARE MODE' });
  t.same(verdict('MySQL', 'select * from t for update nowait'), { kind: 'write', type: 'SELECT ... FOR UPDATE' });
  t.same(verdict('T-SQL', 'select * from t with (updlock)'), { kind: 'write', type: 'SELECT ... WITH (UPDLOCK)' });
  t.same(verdict('T-SQL', 'select * from t with (nolock, holdlock)'), { kind: 'write', type: 'SELECT ... WITH (HOLDLOCK)' });
  t.same(verdict('T-SQL', 'select * from t with (nolock)'), { kind: 'read' });
});
