/**
 * ld.validateSqlQuery and ld.ensureReadOnlySqlQuery through a real runner: synchronous, the trimmed
 * query back, refusals thrown as real guest errors (catchable, with the exact message), hostile input
 * from data.input, and the sandbox still serving after every refusal.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind } from '../../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner } from '../../helpers/runner-harness.js';

const runner = await startTestRunner();
t.teardown(() => runner.close());

interface Outcome {
  result: JsonValue | undefined;
  error: { kind: ErrorKind; name: string; message: string } | undefined;
}

async function run(code: string, input: Record<string, JsonValue> = {}): Promise<Outcome> {
  const res = await runner.grpc.execute({ code, input });
  return {
    result: res.result === undefined ? undefined : toJson(ValueSchema, res.result),
    error: res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message },
  };
}

const thrown = (name: string, message: string): Outcome => ({ result: undefined, error: { kind: ErrorKind.THROWN, name, message } });
const ONLY = '(only SELECT, SHOW, DESCRIBE and EXPLAIN)';

t.test('the spec examples', async (t) => {
  t.same(await run("return ld.validateSqlQuery(' select 1 ')"), { result: 'select 1', error: undefined });
  t.same(await run("return ld.ensureReadOnlySqlQuery('\\n SELECT * FROM t WHERE a = 1;\\n')"), { result: 'SELECT * FROM t WHERE a = 1;', error: undefined });
  t.same(
    await run("return [typeof ld.validateSqlQuery('select 1'), typeof ld.ensureReadOnlySqlQuery('show tables')]"),
    { result: ['string', 'string'], error: undefined },
    'both are synchronous',
  );
  t.same(
    await run("return ld.validateSqlQuery('select 1; select 2')"),
    thrown('Error', 'validateSqlQuery: the query must hold exactly one statement, but it holds 2'),
  );
  t.same(await run("return ld.ensureReadOnlySqlQuery('delete from t')"), thrown('Error', `ensureReadOnlySqlQuery: DELETE statements are not allowed ${ONLY}`));
  t.same(await run('return ld.validateSqlQuery(42)'), thrown('TypeError', 'validateSqlQuery(query) takes a string, got a number'));
  t.same(await run('return ld.ensureReadOnlySqlQuery()'), thrown('TypeError', 'ensureReadOnlySqlQuery(query) takes a string, got nothing'));
  t.same(
    await run('return ld.validateSqlQuery("select \'abc")'),
    thrown('SyntaxError', 'validateSqlQuery: the query is not valid SQL: it has an unterminated string literal'),
  );
});

t.test('refusals are real guest errors the code can catch', async (t) => {
  const code = `
    const out = [];
    for (const q of data.input.queries) {
      try { out.push(['ok', ld.ensureReadOnlySqlQuery(q)]); }
      catch (e) { out.push([e instanceof Error, e.constructor === Error || e instanceof TypeError || e instanceof SyntaxError, e.name, e.message]); }
    }
    return out;`;
  const queries = [
    "select * from users where name = ''; drop table users; --'",
    'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d',
    'select * into t2 from t',
    'EXPLAIN ANALYZE DELETE FROM t',
    'select 1 drop table t',
    'select 2',
  ];
  t.same(await run(code, { queries }), {
    result: [
      [true, true, 'Error', `ensureReadOnlySqlQuery: DROP statements are not allowed ${ONLY}`],
      [true, true, 'Error', `ensureReadOnlySqlQuery: DELETE statements are not allowed, even inside a WITH clause ${ONLY}`],
      [true, true, 'Error', `ensureReadOnlySqlQuery: SELECT ... INTO statements are not allowed ${ONLY}`],
      [true, true, 'Error', `ensureReadOnlySqlQuery: DELETE statements are not allowed, even under EXPLAIN ${ONLY}`],
      [true, true, 'Error', `ensureReadOnlySqlQuery: DROP statements are not allowed ${ONLY}`],
      ['ok', 'select 2'],
    ],
    error: undefined,
  });
});

t.test('hostile input from data.input, and the sandbox keeps serving', async (t) => {
  const refused = (type: string) => thrown('Error', `ensureReadOnlySqlQuery: ${type} statements are not allowed ${ONLY}`);
  const code = "return ld.ensureReadOnlySqlQuery(`select * from t where a = '` + data.input.value + `'`)";
  const query = (value: string) => `select * from t where a = '${value}'`;
  const cases: [string, Outcome][] = [
    ["1'; DROP TABLE users; --", refused('DROP')],
    ["1' /*!; DROP TABLE users */ --", refused('DROP')],
    ["1\\'; DROP TABLE users; #", refused('DROP')],
    ["1'; WAITFOR DELAY '0:0:10'--", refused('WAITFOR')],
    ["1' INTO OUTFILE '/tmp/x' --", refused('SELECT ... INTO')],
    ["x' UNION SELECT password FROM users --", { result: query("x' UNION SELECT password FROM users --"), error: undefined }],
    [`x${'('.repeat(400)}`, { result: query(`x${'('.repeat(400)}`), error: undefined }],
    ['\u0000; drop table t', { result: query('\u0000; drop table t'), error: undefined }],
    ["'".repeat(5000), { result: query("'".repeat(5000)), error: undefined }],
  ];
  for (const [value, outcome] of cases) {
    t.same(await run(code, { value }), outcome, JSON.stringify(value.slice(0, 40)));
  }
  t.same(await run("return ld.validateSqlQuery('select 1')"), { result: 'select 1', error: undefined }, 'still serving');
  const status = await runner.grpc.getPoolStatus();
  t.equal(Number(status.workersReplaced), 0, 'no worker was replaced');
});

t.test('an oversized query is refused quickly', async (t) => {
  const started = performance.now();
  t.same(
    await run("return ld.ensureReadOnlySqlQuery('select ' + 'x'.repeat(200000))"),
    thrown('RangeError', 'ensureReadOnlySqlQuery: the query is 200007 characters long, over the limit of 100000'),
  );
  t.ok(performance.now() - started < 5000, 'well within the call time');
  t.same(await run("return ld.ensureReadOnlySqlQuery('show tables')"), { result: 'show tables', error: undefined }, 'still serving');
});
