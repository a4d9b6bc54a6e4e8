/**
 * ld.parquet2csv (runner/builtins/formats/parquet-to-csv.ts), called directly: Parquet written by
 * DuckDB (LIST, int32/int64, double, boolean, varchar, date, timestamp, and the rarer types) gives an
 * exact expected CSV; files with many row groups; round trips through csv2parquet; hostile input
 * (not base64, not Parquet, truncated, corrupt) gives `success: false` and leaves the converter working.
 */
import t from 'tap';
import { ByteWriter } from '../../../runner/builtins/formats/byte-writer.js';
import { ConversionInputError } from '../../../runner/builtins/formats/conversion-guard.js';
import { FORMATS, parquetWasmMemoryBytes } from '../../../runner/builtins/formats/index.js';
import { emptyParquetStats, parquetToCsv } from '../../../runner/builtins/formats/parquet-to-csv.js';
import { csv2parquet, csvOf, Duck, parquet2csv, testContext, thrown } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

/** Has DuckDB write `sql`'s result as Parquet; returns the file as base64. */
async function duckParquet(sql: string, options = ''): Promise<string> {
  const path = duck.path();
  await duck.run(`COPY (${sql}) TO '${path}' (FORMAT PARQUET${options})`);
  return duck.read(path).toString('base64');
}

t.test('a DuckDB file with LIST columns and the common types gives the exact CSV', async (t) => {
  const file = await duckParquet(`SELECT * FROM (VALUES
    (1::INTEGER, 10::BIGINT, 1.5::DOUBLE, true, 'plain', DATE '2021-06-24', TIMESTAMP '2021-06-24 11:14:52.123456', TIMESTAMPTZ '2021-06-24 11:14:52+00',
     [1, 2]::BIGINT[], ['urgent', 'x, y', 'say "hi"']::VARCHAR[], [1, NULL]::INTEGER[]),
    (NULL, -9223372036854775808, -0.0, false, 'a,b"c' || chr(10) || 'd', DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59', NULL,
     []::BIGINT[], []::VARCHAR[], NULL),
    (-2, 9223372036854775807, 1e300, NULL, '', NULL, NULL, TIMESTAMPTZ '2000-01-01 00:00:00.5+00',
     NULL, [NULL, '']::VARCHAR[], [3]::INTEGER[])
  ) t(i32, i64, f64, b, s, d, ts, tstz, li, ls, li32)`);
  t.equal(
    csvOf(parquet2csv(file)),
    [
      'i32,i64,f64,b,s,d,ts,tstz,li,ls,li32',
      '1,10,1.5,true,plain,2021-06-24,2021-06-24T11:14:52.123456,2021-06-24T11:14:52Z,"[1, 2]","[""urgent"", ""x, y"", ""say \\""hi\\""""]","[1, null]"',
      ',-9223372036854775808,0.0,false,"a,b""c\nd",1969-12-31,1969-12-31T23:59:59,,[],[],',
      '-2,9223372036854775807,1e+300,,"",,,2000-01-01T00:00:00.5Z,,"[null, """"]",[3]',
      '',
    ].join('\n'),
  );
});

t.test('the rarer DuckDB types have a text form', async (t) => {
  const file = await duckParquet(
    `SELECT 123.456::DECIMAL(18,3) d18, -0.05::DECIMAL(4,2) d4, 12345678901234567890.5::DECIMAL(38,1) d38,
      '550e8400-e29b-41d4-a716-446655440000'::UUID u, '\\xAA\\xBB'::BLOB bl, TIME '13:45:01.25' tm, 1.1::FLOAT fl,
      7::TINYINT ti, 300::SMALLINT si, 18446744073709551615::UBIGINT ub, {'a': 1, 'b': 'x'} st, MAP {'k': 1, 'l': 2} mp,
      [[1, 2], [3]] nl, TIMESTAMP_NS '2021-01-01 00:00:00.123456789' tns, TIMESTAMP_MS '2021-01-01 00:00:00.123' tms,
      [DATE '2021-01-01'] ld, [{'x': 1.5}] lst, 'a'::ENUM('a', 'b') e, INTERVAL 1 DAY iv`,
  );
  t.equal(
    csvOf(parquet2csv(file)),
    'd18,d4,d38,u,bl,tm,fl,ti,si,ub,st,mp,nl,tns,tms,ld,lst,e,iv\n' +
      '123.456,-0.05,12345678901234567890.5,550e8400-e29b-41d4-a716-446655440000,qrs=,13:45:01.25,1.1,7,300,18446744073709551615,' +
      '"{""a"": 1, ""b"": ""x""}","{""k"": 1, ""l"": 2}","[[1, 2], [3]]",2021-01-01T00:00:00.123456789,2021-01-01T00:00:00.123,' +
      '"[""2021-01-01""]","[{""x"": 1.5}]",a,"{""days"": 1, ""milliseconds"": 0}"\n',
  );
});

t.test('nulls and empty strings', async (t) => {
  const one = await duckParquet(`SELECT * FROM (VALUES (NULL::VARCHAR), (''), ('x')) t(lone)`);
  t.equal(csvOf(parquet2csv(one)), 'lone\n""\n""\nx\n', 'a single column writes a null as "" so the line is not blank');
  const two = await duckParquet(`SELECT * FROM (VALUES (NULL::VARCHAR, 1), ('', 2)) t(s, n)`);
  t.equal(csvOf(parquet2csv(two)), 's,n\n,1\n"",2\n', 'otherwise a null is an empty cell and an empty string is ""');
  const header = await duckParquet(`SELECT 1 AS "a,b", 2 AS "say ""x"""`);
  t.equal(csvOf(parquet2csv(header)), '"a,b","say ""x"""\n1,2\n', 'header names are quoted like cells');
  const none = await duckParquet(`SELECT 1::INTEGER a, 'x' b WHERE false`);
  t.equal(csvOf(parquet2csv(none)), 'a,b\n', 'no rows: the header alone');
});

t.test('many row groups, same CSV as DuckDB writes', async (t) => {
  const sql = `SELECT i, 'v' || i AS s, i * 0.5 AS h, i % 3 = 0 AS b FROM range(50000) t(i)`;
  const file = await duckParquet(sql, ', ROW_GROUP_SIZE 2048');
  const path = duck.file(file);
  const groups = (await duck.rows(`SELECT count(DISTINCT row_group_id)::INT FROM parquet_metadata('${path}')`))[0]![0] as number;
  t.ok(groups > 10, `${groups} row groups`);
  const csvPath = duck.path('csv');
  await duck.run(`COPY (${sql}) TO '${csvPath}' (HEADER, DELIMITER ',')`);
  t.equal(csvOf(parquet2csv(file)), duck.read(csvPath).toString('utf8'));
});

t.test('a DuckDB file read a few row groups at a time gives the CSV DuckDB writes', async (t) => {
  const sql = `SELECT i, 'some text ' || i AS s, [i, i * 2] AS l, i * 1.5 AS d FROM range(300000) t(i)`;
  const file = await duckParquet(sql, ', ROW_GROUP_SIZE 30000');
  const csvPath = duck.path('csv');
  await duck.run(`COPY (SELECT i, s, l::VARCHAR AS l, d FROM (${sql})) TO '${csvPath}' (HEADER, DELIMITER ',')`);
  const stats = emptyParquetStats();
  const ours = parquetToCsv(Buffer.from(file, 'base64'), testContext(), stats).toString('utf8');
  t.ok(stats.reads > 2, `${stats.reads} reads of ${stats.rowGroups} row groups`);
  t.ok(stats.wasmBytes < 64 * 1024 * 1024, `parquet-wasm memory ${stats.wasmBytes} bytes`);
  // Not t.equal: a diff of two 10 MB strings takes minutes. The first differing line says enough.
  const theirs = duck.read(csvPath).toString('utf8');
  const a = ours.split('\n');
  const b = theirs.split('\n');
  const at = a.findIndex((line, k) => line !== b[k]);
  t.same(at < 0 ? 'same' : [at, a[at], b[at]], 'same', `${a.length} lines`);
  t.equal(a.length, b.length);
});

t.test('decoded batches are read from wasm memory (FFI) unless the schema has a type without a plain layout', async (t) => {
  const plain = await duckParquet(`SELECT i, 'v' || i AS s, [i, NULL] AS l, {'a': i} AS st FROM range(5000) t(i)`, ', ROW_GROUP_SIZE 1000');
  const stats = emptyParquetStats();
  const csv = parquetToCsv(Buffer.from(plain, 'base64'), testContext(), stats).toString('utf8');
  t.equal(stats.ffiReads, stats.reads, `${stats.reads} reads, all through FFI`);
  t.equal(csv.split('\n')[4999 + 1], '4999,v4999,"[4999, null]","{""a"": 4999}"');
  const withMap = await duckParquet(`SELECT i, MAP {'k': i} AS m FROM range(3) t(i)`);
  const mapStats = emptyParquetStats();
  t.equal(parquetToCsv(Buffer.from(withMap, 'base64'), testContext(), mapStats).toString('utf8'), 'i,m\n0,"{""k"": 0}"\n1,"{""k"": 1}"\n2,"{""k"": 2}"\n');
  t.equal(mapStats.ffiReads, 0, 'a map column: through IPC');
});

t.test('a batch FFI does not take is read again through IPC, with the same CSV', async (t) => {
  // Several reads, each of a file cut down to its row groups.
  const file = Buffer.from(await duckParquet(`SELECT i, 'some text ' || i AS s, [i, NULL] AS l FROM range(300000) t(i)`, ', ROW_GROUP_SIZE 30000'), 'base64');
  const expected = parquetToCsv(file, testContext()).toString('utf8');
  const ffi = await import('../../../runner/builtins/formats/arrow-ffi.js');
  const url = (path: string) => new URL(path, import.meta.url).href;
  const { parquetToCsv: refusingFfi } = await t.mockImport<typeof import('../../../runner/builtins/formats/parquet-to-csv.js')>(
    url('../../../runner/builtins/formats/parquet-to-csv.js'),
    { [url('../../../runner/builtins/formats/arrow-ffi.js')]: { ...ffi, importFfiBatch: () => undefined } },
  );
  const stats = emptyParquetStats();
  t.equal(refusingFfi(file, testContext(), stats).toString('utf8'), expected);
  t.equal(stats.ffiReads, 0);
  t.ok(stats.reads > 1, `${stats.reads} reads`);
});

t.test('DuckDB lists → CSV → csv2parquet gives the same table and types back', async (t) => {
  const sql = `SELECT i AS id, [i, -i, NULL]::BIGINT[] AS nums, ['t' || (i % 5), 'x, y', 'q"' || i]::VARCHAR[] AS tags,
    i / 7 AS ratio, i % 2 = 0 AS even, 'name ' || i AS name FROM range(3000) t(i)`;
  const back = csv2parquet(csvOf(parquet2csv(await duckParquet(sql))));
  t.equal(back.success, true);
  const path = duck.file(back.base64);
  t.same(await duck.describe(path), [
    ['id', 'BIGINT'],
    ['nums', 'BIGINT[]'],
    ['tags', 'VARCHAR[]'],
    ['ratio', 'DOUBLE'],
    ['even', 'BOOLEAN'],
    ['name', 'VARCHAR'],
  ]);
  t.same(await duck.rows(`SELECT count(*)::INT FROM ((SELECT * FROM read_parquet('${path}')) EXCEPT ALL (${sql}))`), [[0]], 'nothing only in the round trip');
  t.same(await duck.rows(`SELECT count(*)::INT FROM ((${sql}) EXCEPT ALL (SELECT * FROM read_parquet('${path}')))`), [[0]], 'nothing lost');
});

t.test('csv2parquet → parquet2csv: cells come back, lists as bracketed lists', async (t) => {
  const csv = 'id,name,score,ok,tags,nums,empty\n1,"a, b",1.50,TRUE,"[""x"",""y, z""]","[1,2]",\n2,"say ""hi""",2,false,[],[ ],\n';
  t.equal(
    csvOf(parquet2csv(csv2parquet(csv).base64)),
    'id,name,score,ok,tags,nums,empty\n1,"a, b",1.5,true,"[""x"", ""y, z""]","[1, 2]",\n2,"say ""hi""",2.0,false,[],[],\n',
    'text is canonical: 1.50 → 1.5, 2 in a float column → 2.0, TRUE → true, list spacing',
  );
});

t.test('hostile input: success false with a clear error, and the converter keeps working', async (t) => {
  const good = csv2parquet('a,b\n1,x\n2,y').base64;
  const goodBytes = Buffer.from(good, 'base64');
  const fail = (error: string) => ({ base64: '', success: false, error });
  t.same(parquet2csv('not base64!!'), fail('the input is not valid base64'));
  t.same(parquet2csv('QUJD='), fail('the input is not valid base64'), 'padding in the wrong place');
  t.same(parquet2csv('QUJDR'), fail('the input is not valid base64 (truncated)'));
  t.same(parquet2csv(''), fail('the data is not a Parquet file (it must start and end with "PAR1")'));
  t.same(parquet2csv(Buffer.from('hello, world, this is CSV').toString('base64')), fail('the data is not a Parquet file (it must start and end with "PAR1")'));
  const hugeFooter = Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(8), Buffer.from([0xff, 0xff, 0xff, 0x7f]), Buffer.from('PAR1')]);
  t.same(parquet2csv(hugeFooter.toString('base64')), fail('the Parquet file is truncated (its footer is longer than the file)'));
  const badFooter = Buffer.concat([Buffer.from('PAR1'), Buffer.from([0xff, 0xff]), Buffer.from([2, 0, 0, 0]), Buffer.from('PAR1')]);
  t.same(parquet2csv(badFooter.toString('base64')), fail('the Parquet footer is corrupt (unknown type 15)'));
  const noGroups = Buffer.concat([Buffer.from('PAR1'), Buffer.from([0x15, 0x02, 0x00]), Buffer.from([3, 0, 0, 0]), Buffer.from('PAR1')]);
  t.same(parquet2csv(noGroups.toString('base64')), fail('the Parquet footer is corrupt (no row_groups)'));
  // A real file with its data pages overwritten: the footer is fine, the pages are not.
  const smashed = Buffer.from(goodBytes);
  smashed.fill(0x5a, 4, 60);
  const r = parquet2csv(smashed.toString('base64'));
  t.equal(r.success, false, 'corrupt pages');
  t.match(r.error, /^the Parquet file could not be read: ./, String(r.error));
  const cut = Buffer.concat([goodBytes.subarray(0, 40), goodBytes.subarray(goodBytes.length - 300)]);
  const r2 = parquet2csv(cut.toString('base64'));
  t.equal(r2.success, false, 'cut out of the middle');
  t.match(r2.error, /^the Parquet (file could not be read|footer is corrupt|file is truncated)/, String(r2.error));
  t.equal(csvOf(parquet2csv(good)), 'a,b\n1,x\n2,y\n', 'a good file still converts');
  t.equal(csvOf(parquet2csv(goodBytes)), 'a,b\n1,x\n2,y\n', 'bytes are accepted as well as base64');
  t.equal(csvOf(parquet2csv(` ${good.slice(0, 10)}\n${good.slice(10)}\n`)), 'a,b\n1,x\n2,y\n', 'whitespace in base64 is ignored');
  t.ok(parquetWasmMemoryBytes() < 64 * 1024 * 1024, `parquet-wasm holds ${parquetWasmMemoryBytes()} bytes`);
});

t.test('wrong arguments throw a TypeError', async (t) => {
  t.same(
    thrown(() => parquet2csv()),
    ['TypeError', 'ld.parquet2csv(base64Parquet) takes the Parquet file as a base64 string, got undefined'],
  );
  t.same(
    thrown(() => parquet2csv({ base64: 'x' })),
    ['TypeError', 'ld.parquet2csv(base64Parquet) takes the Parquet file as a base64 string, got an object'],
  );
});

t.test('the call deadline stops a conversion', async (t) => {
  const file = csv2parquet('a\n1').base64;
  t.same(
    thrown(() => FORMATS.sync!.parquet2csv!([file], testContext(-1))),
    ['Error', "the conversion ran past the call's time limit"],
  );
});

t.test('the output cap', async (t) => {
  const w = new ByteWriter(16, 100, 'the CSV would be larger than the limit');
  w.ascii('x'.repeat(100));
  w.checkLimit();
  t.equal(w.pos, 100, 'up to the limit');
  w.ascii('y');
  t.throws(() => w.checkLimit(), new ConversionInputError('the CSV would be larger than the limit'));
  t.throws(() => w.ascii('z'.repeat(2 * 1024 * 1024)), new ConversionInputError('the CSV would be larger than the limit'), 'a write far past it');
});
