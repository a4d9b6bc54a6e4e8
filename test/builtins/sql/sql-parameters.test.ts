/**
 * Query parameters in ld.ensureReadOnlySqlQuery (runner/builtins/sql/sql-parameters.ts): `?`, `?1`,
 * `:name`, `:1`, `$1`, `@name` are accepted; the parse sees them as the literal 1, while a `?`, `:x`
 * or `$1` inside a string, a quoted name or a comment, PostgreSQL casts, Snowflake paths, array slices,
 * `:=` and `@@` system variables are left as they are.
 */
import t from 'tap';
import { ensureReadOnlySqlQuery } from '../../../runner/builtins/sql/sql-checks.js';
import { lex, PROFILES, type DialectName } from '../../../runner/builtins/sql/sql-lexer.js';
import { textWithoutParameters } from '../../../runner/builtins/sql/sql-parameters.js';
import { call } from './sql-test-helpers.js';

const replaced = (sql: string, dialect: DialectName = 'PostgreSQL') => {
  const r = lex(sql, PROFILES.find((p) => p.dialect === dialect)!);
  if (!r.ok) throw new Error(`${sql} does not lex in ${dialect}`);
  return textWithoutParameters(sql, r.tokens);
};

t.test('each parameter style becomes the literal 1 for the parse', async (t) => {
  t.equal(replaced('select * from t where a = ? and b = ?'), 'select * from t where a = 1 and b = 1');
  t.equal(replaced('select * from t where a = ?1 limit ?2'), 'select * from t where a = 1 limit 1');
  t.equal(replaced('SELECT :name'), 'SELECT 1');
  t.equal(replaced('select * from t where a = :a and b in (:b1, :2)'), 'select * from t where a = 1 and b in (1, 1)');
  t.equal(replaced('select * from t where a = $1 and b = $2::int'), 'select * from t where a = 1 and b = 1::int');
  t.equal(replaced('select * from t where a = $1', 'MySQL'), 'select * from t where a = 1', 'MySQL reads $1 as one word');
  t.equal(replaced('select * from t where a = @p and b = @q', 'T-SQL'), 'select * from t where a = 1 and b = 1');
});

t.test('look-alikes stay as they are', async (t) => {
  t.equal(replaced('select a::int, b::text[] from t'), undefined, 'PostgreSQL casts');
  t.equal(replaced('select v:name::string, v:a.b from t', 'Snowflake'), undefined, 'Snowflake paths');
  t.equal(replaced('select a[1:2], a[lo:hi] from t'), undefined, 'array slices');
  t.equal(replaced('select @v := 1', 'MySQL'), 'select 1 := 1', 'a user variable is one, but := is no parameter');
  t.equal(replaced('select @@version', 'T-SQL'), undefined, 'a system variable');
  t.equal(replaced("select * from t where doc ?| array['a'] and doc ?& array['b']"), undefined, 'JSON operators');
  t.equal(replaced("select '?', ':x', '$1', \"?\" from t -- ? :y $2\n/* :z */"), undefined, 'strings, quoted names, comments');
  t.equal(replaced('select $$ :x ? $1 $$ as s'), undefined, 'a dollar-quoted string');
  t.equal(replaced("select ':x', :y from t"), "select 's', 1 from t", 'only the parameter outside the string');
});

t.test('ensureReadOnlySqlQuery accepts parameters and refuses what they sit next to', async (t) => {
  const reads = [
    'SELECT :name',
    'select * from t where id = :id',
    'select * from t where a = ? and b = ? limit ?',
    'select * from t where a = $1 and b = $2::int',
    'select * from t where x = :1',
    'select * from t where a = @p',
    'select * from t where a = ?1 and b = ?2',
    "select * from t where a = :delete and b = @update and c = ':x; drop table t'",
  ];
  for (const q of reads) t.same(call(ensureReadOnlySqlQuery, [q]), { value: q }, q);
  const ONLY = '(only SELECT, SHOW, DESCRIBE and EXPLAIN)';
  t.same(call(ensureReadOnlySqlQuery, ['select :name; delete from t']), {
    name: 'Error',
    message: `ensureReadOnlySqlQuery: DELETE statements are not allowed ${ONLY}`,
  });
  t.same(call(ensureReadOnlySqlQuery, ['select 1 x:delete from t']), {
    name: 'Error',
    message: `ensureReadOnlySqlQuery: DELETE statements are not allowed ${ONLY}`,
  });
});
