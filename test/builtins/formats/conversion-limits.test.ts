/**
 * The shape limits of the format conversions (FORMAT_LIMITS in runner/builtins/formats/conversion-guard.ts):
 * a small input that declares a huge table is refused from its shape, before the host allocates for
 * it, with a message that names the limit; the same built-in then converts normal data.
 */
import { tableFromArrays, tableToIPC } from 'apache-arrow';
import t from 'tap';
import { uniqueNames } from '../../../runner/builtins/formats/csv-to-parquet.js';
import { FORMAT_LIMITS, FORMATS } from '../../../runner/builtins/formats/index.js';
import { arrow2parquet, csv2parquet, csvOf, Duck, json2csv, parquet2csv, testContext, thrown } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

t.test('the limits are what the README says', async (t) => {
  t.equal(FORMAT_LIMITS.maxCells, 16 * 1024 * 1024);
  t.equal(FORMAT_LIMITS.maxColumns, 1024);
  t.equal(FORMAT_LIMITS.maxReadCells, 64 * 1024 * 1024);
});

t.test('json2csv: many objects with distinct keys are refused before the table is built', async (t) => {
  // ~70 KB of objects, one distinct key each: 25 million cells (the worker used to run out of heap).
  const sparse = Array.from({ length: 5000 }, (_, i) => ({ [`k${i}`]: 1 }));
  t.same(
    thrown(() => json2csv(sparse)),
    [
      'RangeError',
      'ld.json2csv: 5,000 rows × 5,000 columns is 25,000,000 cells, over the limit of 16,777,216 cells per call; convert the data in smaller parts',
    ],
  );
  t.same(json2csv([{ a: 1 }, { b: 'x' }]), 'a,b\n1,\n,x\n', 'the next call converts');
});

t.test('json2csv: exactly at the cell limit is converted', async (t) => {
  const side = Math.sqrt(FORMAT_LIMITS.maxCells);
  const sparse = Array.from({ length: side }, (_, i) => ({ [`k${i}`]: i }));
  const csv = json2csv(sparse);
  const lines = csv.split('\n');
  t.equal(lines.length, side + 2, 'header, one line per object, and the final line break');
  t.equal(lines[1], `0${','.repeat(side - 1)}`);
  t.equal(lines[side], `${','.repeat(side - 1)}${side - 1}`);
});

t.test("json2csv: the call's deadline is checked while the keys are gathered", async (t) => {
  const rows = Array.from({ length: 70_000 }, (_, i) => ({ id: i }));
  const past = testContext(-1);
  t.same(
    thrown(() => FORMATS.sync!.json2csv!([rows], past)),
    ['Error', "the conversion ran past the call's time limit"],
  );
  const cancelled = new AbortController();
  cancelled.abort();
  t.same(
    thrown(() => FORMATS.sync!.json2csv!([rows], testContext(60_000, cancelled.signal))),
    ['Error', 'the call was cancelled during the conversion'],
  );
});

t.test('csv2parquet: more columns than the limit', async (t) => {
  const wide = (n: number) => `${Array.from({ length: n }, (_, i) => `c${i}`).join(',')}\n${'1,'.repeat(n - 1)}1\n`;
  t.same(csv2parquet(wide(FORMAT_LIMITS.maxColumns + 1)), {
    base64: '',
    success: false,
    error: 'the CSV has 1,025 columns, over the limit of 1,024; split the columns over several files',
  });
  // 20,000 × `a` (40 KB) took 13 s when repeated names were numbered from _1 each time.
  t.same(csv2parquet(`${'a,'.repeat(19_999)}a\n`).error, 'the CSV has 20,000 columns, over the limit of 1,024; split the columns over several files');
  const atLimit = csv2parquet(wide(FORMAT_LIMITS.maxColumns));
  t.equal(atLimit.success, true, 'exactly at the limit is converted');
  const path = duck.file(atLimit.base64);
  t.same(await duck.rows(`SELECT count(*)::INTEGER, sum(c1023)::INTEGER FROM read_parquet('${path}')`), [[1, 1]]);
});

t.test('uniqueNames: repeated names are numbered in linear time, as before', async (t) => {
  const names = uniqueNames(Array.from({ length: 50_000 }, () => 'a'));
  t.equal(names[0], 'a');
  t.equal(names[1], 'a_1');
  t.equal(names[49_999], 'a_49999');
  t.equal(new Set(names).size, 50_000);
  t.same(uniqueNames(['a', 'a_1', 'a', 'a', '']), ['a', 'a_1', 'a_2', 'a_3', 'column4'], 'a taken suffix is skipped');
});

t.test('arrow2parquet: more columns than the limit', async (t) => {
  const columns = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, Int32Array.from([i])]));
  const over = tableToIPC(tableFromArrays(columns(FORMAT_LIMITS.maxColumns + 1)), 'stream');
  t.same(
    thrown(() => arrow2parquet(over)),
    ['Error', 'ld.arrow2parquet: the table has 1,025 columns, over the limit of 1,024; split the columns over several files'],
  );
  const ok = tableToIPC(tableFromArrays({ n: Int32Array.from([1, 2]) }), 'stream');
  const path = duck.file(arrow2parquet(ok));
  t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), [[1], [2]], 'the next call converts');
});

t.test('parquet2csv: a small file that declares a huge table is refused from its footer', async (t) => {
  // DuckDB writes 140 million rows of one value in ~400 KB (run-length encoded); decoding it took
  // 6 s and ~900 MiB of RSS before the output cap stopped it.
  const bomb = duck.path();
  await duck.run(`COPY (SELECT 0::TINYINT AS x, 0::TINYINT AS y FROM range(140000000)) TO '${bomb}' (FORMAT parquet)`);
  t.same(parquet2csv(duck.read(bomb).toString('base64')), {
    base64: '',
    success: false,
    error:
      'the CSV would be larger than the limit of 256 MiB: the file holds 140,000,000 rows × 2 columns (280,000,000 cells, each at least one byte of CSV); convert the data in smaller parts',
  });
  // One row group of 70 million rows: parquet-wasm would decode it in one step (~0.5 GiB).
  const wide = duck.path();
  await duck.run(`COPY (SELECT 0::TINYINT AS x FROM range(70000000)) TO '${wide}' (FORMAT parquet, ROW_GROUP_SIZE 70000000)`);
  t.same(parquet2csv(duck.read(wide).toString('base64')), {
    base64: '',
    success: false,
    error: 'a row group of the file holds 70,000,000 rows × 1 column, over the limit of 67,108,864 cells per row group; write the file with smaller row groups',
  });
  const normal = duck.path();
  await duck.run(`COPY (SELECT i::INTEGER AS i FROM range(3) t(i)) TO '${normal}' (FORMAT parquet)`);
  t.equal(csvOf(parquet2csv(duck.read(normal).toString('base64'))), 'i\n0\n1\n2\n', 'the next call converts');
});
