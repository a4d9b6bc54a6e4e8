/**
 * The format conversions as user code calls them: through a real runner (gRPC, worker pool, QuickJS
 * sandbox). Results cross the sandbox boundary; data errors come back as `success: false`, argument
 * errors as guest errors; a huge CSV stops at the memory limit, a slow conversion at the time limit,
 * and the next call works each time.
 */
import { tableToIPC, tableFromArrays } from 'apache-arrow';
import t from 'tap';
import { startTestRunner } from '../../helpers/runner-harness.js';
import { ErrorKind, runCode } from '../http/run-code.js';
import { Duck } from './format-test-helpers.js';

const runner = await startTestRunner();
const duck = await Duck.open();
t.teardown(async () => {
  duck.close();
  await runner.close();
});

t.test('csv2parquet → DuckDB, with and without await', async (t) => {
  const plain = await runCode(runner, 'return ld.csv2parquet(\'a,b,tags\\n1,x,"[1, 2]"\\n2,y,[]\')');
  t.same(plain.error, undefined);
  const r = plain.result as { base64: string; success: boolean };
  t.equal(r.success, true);
  const path = duck.file(r.base64);
  t.same(await duck.describe(path), [
    ['a', 'BIGINT'],
    ['b', 'VARCHAR'],
    ['tags', 'BIGINT[]'],
  ]);
  t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), [
    ['1', 'x', ['1', '2']],
    ['2', 'y', []],
  ]);
  const awaited = await runCode(runner, "const r = await ld.csv2parquet('a\\n1', {compression: 'snappy'}); return r.success");
  t.same(awaited.result, true, 'await works on the plain value');
});

t.test('parquet2csv and json2csv in the sandbox', async (t) => {
  const round = await runCode(
    runner,
    'const p = ld.csv2parquet(\'id,name\\n1,"a, b"\\n2,\'); const c = ld.parquet2csv(p.base64); return [c.success, atob(c.base64)]',
  );
  t.same(round.result, [true, 'id,name\n1,"a, b"\n2,\n']);
  const json = await runCode(runner, "return ld.json2csv([{a: 1, b: {c: [1, 2]}}, {d: 'x,y', a: null}])");
  t.same(json.result, 'a,b,d\n1,"{""c"":[1,2]}",\n,,"x,y"\n');
});

t.test('arrow2parquet takes the bytes of an ArrayBuffer', async (t) => {
  const ipc = Buffer.from(tableToIPC(tableFromArrays({ n: Int32Array.from([1, 2, 3]), s: ['a', 'b', 'c'] }), 'stream')).toString('base64');
  const out = await runCode(
    runner,
    'const s = atob(data.input.ipc); const u = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i); return ld.arrow2parquet(u.buffer, {compression: "lz4"})',
    { ipc },
  );
  t.same(out.error, undefined);
  const path = duck.file(out.result as string);
  t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), [
    [1, 'a'],
    [2, 'b'],
    [3, 'c'],
  ]);
});

t.test('bad input: success false, or a guest error that code can catch', async (t) => {
  const malformed = await runCode(runner, "return ld.csv2parquet('a,b\\n1,\"open')");
  t.same(malformed.result, { base64: '', success: false, error: 'malformed CSV: a quoted field is never closed (its opening quote is on line 2)' });
  const ragged = await runCode(runner, "return ld.csv2parquet('a,b\\n1\\n').error");
  t.same(ragged.result, 'malformed CSV: line 2 has 1 field, but the header has 2 (pass { padShortRows: true } to read missing fields as nulls)');
  const notParquet = await runCode(runner, "return ld.parquet2csv(btoa('definitely not parquet'))");
  t.same(notParquet.result, { base64: '', success: false, error: 'the data is not a Parquet file (it must start and end with "PAR1")' });
  const notArrow = await runCode(
    runner,
    'try { ld.arrow2parquet(new Uint8Array([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16])); return "no error" } catch (e) { return [e.name, e.message, e instanceof Error] }',
  );
  t.same(notArrow.result, [
    'Error',
    'ld.arrow2parquet: the buffer is not a valid Arrow IPC stream (Expected to read 67305985 metadata bytes, but only read 12.)',
    true,
  ]);
  const wrongType = await runCode(runner, 'try { ld.csv2parquet(42); return "no error" } catch (e) { return [e.name, e.message, e instanceof TypeError] }');
  t.same(wrongType.result, ['TypeError', 'ld.csv2parquet(csvText, options?) takes the CSV as a string, got a number', true]);
  const uncaught = await runCode(runner, 'return ld.json2csv([1])');
  t.same(uncaught.error, { kind: ErrorKind.THROWN, name: 'TypeError', message: 'ld.json2csv: item 0 of the array is a number, not an object' });
  const badOption = await runCode(runner, "return ld.csv2parquet('a\\n1', {compression: 'lzo'})");
  t.same(badOption.error?.name, 'RangeError');
  const badDelimiter = await runCode(
    runner,
    "try { ld.csv2parquet('a;b\\n1;2', {delimiter: ';;'}); return 'no error' } catch (e) { return [e.name, e.message, e instanceof RangeError] }",
  );
  t.same(badDelimiter.result, [
    'RangeError',
    "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got ';;' (2 characters)",
    true,
  ]);
  const misspelt = await runCode(runner, "return ld.csv2parquet('a;b\\n1;2', {delimeter: ';'})");
  t.same(misspelt.error, {
    kind: ErrorKind.THROWN,
    name: 'TypeError',
    message: "ld.csv2parquet: unknown option 'delimeter' (the options are compression, delimiter, comment, padShortRows, inferDates)",
  });
  const oneColumn = await runCode(runner, "return ld.csv2parquet('a;b\\n1;2').error");
  t.same(oneColumn.result, "the header has no ',' but 1 semicolon: pass { delimiter: ';' } (or quote the header name to keep one column)");
});

t.test('csv2parquet dialect options from user code: a tab-separated file with comments and a short row', async (t) => {
  const code =
    "const tsv = '# exported\\nid\\tname\\tscore\\n1\\tAda\\t2.0\\n# skipped\\n2\\tGrace\\n';" +
    " return ld.csv2parquet(tsv, {delimiter: '\\t', comment: '#', padShortRows: true})";
  const r = (await runCode(runner, code)).result as { base64: string; success: boolean };
  t.equal(r.success, true);
  const path = duck.file(r.base64);
  t.same(await duck.describe(path), [
    ['id', 'BIGINT'],
    ['name', 'VARCHAR'],
    ['score', 'DOUBLE'],
  ]);
  t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), [
    ['1', 'Ada', 2],
    ['2', 'Grace', null],
  ]);
  const back = await runCode(runner, `return atob(ld.parquet2csv(${JSON.stringify(r.base64)}).base64)`);
  t.equal(back.result, 'id,name,score\n1,Ada,2.0\n2,Grace,\n', 'the float column reads back as 2.0');
});

t.test('a huge CSV beyond the memory limit: a clear error, and the sandbox still serves', async (t) => {
  const res = await runner.grpc.execute({
    code: "const csv = 'id,name,score\\n' + '12345,some name,1.5\\n'.repeat(2e6); return ld.csv2parquet(csv).success",
    limits: { memoryBytes: BigInt(32 * 1024 * 1024), timeoutMs: 20_000 },
  });
  t.same(res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message }, {
    kind: ErrorKind.MEMORY_LIMIT,
    name: 'MemoryLimitError',
    message: 'the code used more than its 32 MiB memory limit',
  });
  const next = await runCode(runner, "return ld.csv2parquet('a\\n1').success");
  t.same(next.result, true, 'the next call converts');
});

t.test('a conversion past the time limit stops, and the next call works', async (t) => {
  const slow = await runCode(
    runner,
    // About 13 MB, which converts in 0.5–1 s here: the conversion's deadline checks stop it early.
    "const csv = 'a,b,c,d\\n' + '123456,1.25,text value,\"[1, 2]\"\\n'.repeat(400000); return ld.csv2parquet(csv).success",
    {},
    { timeoutMs: 300 },
  );
  t.equal(slow.error?.kind, ErrorKind.TIMEOUT, `${slow.error?.name}: ${slow.error?.message}`);
  // Either stop may win on a loaded machine: the conversion's own deadline check, or the worker's hard stop.
  t.equal(slow.error?.name, 'TimeoutError');
  t.match(slow.error?.message, /^the code ran longer than its 300 ms limit( \(it was stuck in a built-in and its worker was stopped\))?$/);
  t.ok(slow.ms < 3000, `stopped after ${Math.round(slow.ms)} ms`);
  const next = await runCode(runner, "return ld.csv2parquet('a\\n1').success");
  t.same(next.result, true, 'the next call converts');
});

t.test('json2csv of a small array that declares a huge table: a RangeError in the sandbox, and the worker stays', async (t) => {
  // 5,000 objects with one distinct key each: 25 million cells; building them ran the worker out of heap.
  const huge = await runCode(
    runner,
    "const rows = []; for (let i = 0; i < 5000; i++) rows.push({['k' + i]: 1}); try { ld.json2csv(rows); return 'no error' } catch (e) { return [e.name, e.message, e instanceof RangeError] }",
  );
  t.same(huge.result, [
    'RangeError',
    'ld.json2csv: 5,000 rows × 5,000 columns is 25,000,000 cells, over the limit of 16,777,216 cells per call; convert the data in smaller parts',
    true,
  ]);
  const next = await runCode(runner, "return ld.json2csv([{a: 1}, {b: 'x'}])");
  t.same(next.result, 'a,b\n1,\n,x\n', 'the next call converts');
  const wide = await runCode(runner, "return ld.csv2parquet('a,'.repeat(5000) + 'a\\n').error");
  t.same(wide.result, 'the CSV has 5,001 columns, over the limit of 1,024; split the columns over several files');
});
