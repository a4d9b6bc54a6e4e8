/**
 * Round trips keep column types and values: csv → parquet → csv → parquet, parquet (DuckDB) → csv →
 * parquet, and arrow → parquet → csv → parquet, each Parquet file read by DuckDB. The case that
 * forced it: a float column whose values are whole (`1.0`) used to come back as int64, because
 * parquet2csv wrote `1` (runner/builtins/formats/byte-writer.ts `floatText`).
 *
 * What a CSV cannot carry is checked as such: integer widths come back as int64, float32 as float64,
 * millisecond and second timestamps as microseconds (the same instants).
 *
 * Dates and timestamps (the second case that forced this file: a DATE or TIMESTAMP column came back as
 * text): DATE, TIMESTAMP, TIMESTAMPTZ and TIMESTAMP_NS written by DuckDB come back with the same type
 * and value, and so do the CSVs DuckDB writes itself (space separator, `+00` offsets).
 */
import * as A from 'apache-arrow';
import t from 'tap';
import { arrow2parquet, csv2parquet, csvOf, Duck, parquet2csv } from './format-test-helpers.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const duck = await Duck.open();
t.teardown(() => duck.close());

/** csv2parquet, or a failed test. */
function toParquet(t: Test, csv: string): string {
  const r = csv2parquet(csv);
  t.equal(r.success, true, `csv2parquet${r.error ? `: ${r.error}` : ''}`);
  return r.base64;
}

/** Rows that are in one query and not the other, both ways (0 and 0 when equal as multisets). */
async function difference(a: string, b: string): Promise<unknown[][]> {
  return duck.rows(`SELECT (SELECT count(*) FROM ((${a}) EXCEPT ALL (${b})))::INT, (SELECT count(*) FROM ((${b}) EXCEPT ALL (${a})))::INT`);
}

const EVERY_TYPE_CSV = [
  'i,f,whole,b,d,ts,s,li,lf,ls,lb,nothing',
  '1,1.5,1.0,true,2024-02-29,2024-02-29T12:34:56.789Z,plain,"[1, 2]","[1.0, 2.5]","[""a"", ""x, y""]","[true, false]",',
  '-9223372036854775808,-0.0,2.0,false,1970-01-01,1970-01-01T00:00:00Z,"a, ""quoted"" cell","[9223372036854775807, null]","[NaN, Infinity, -Infinity]","[""say \\""hi\\"""", null]",[null],',
  '9223372036854775807,NaN,-3.0,TRUE,,2024-02-29 12:34:56,"two\nlines",[],[-0.0],[],[],',
  ',Infinity,1e20,,1999-12-31,,007,,"[1e-7, 100.0]","[""""]",,',
  '0,-Infinity,,False,2000-01-01,2000-01-01T00:00:00.123456+01:00,"crlf\r\ninside",[0],,"[""é 😀""]",[true],',
  '42,1e-7,0.0,true,,,"",[-1],[3],"[""[not, a, list]""]",[false],',
].join('\n');

const EVERY_TYPE_TYPES: [string, string][] = [
  ['i', 'BIGINT'],
  ['f', 'DOUBLE'],
  ['whole', 'DOUBLE'],
  ['b', 'BOOLEAN'],
  ['d', 'DATE'],
  // Zoned (`Z`, `+01:00`) and unzoned date-times in one column: text, nothing guessed.
  ['ts', 'VARCHAR'],
  ['s', 'VARCHAR'],
  ['li', 'BIGINT[]'],
  ['lf', 'DOUBLE[]'],
  ['ls', 'VARCHAR[]'],
  ['lb', 'BOOLEAN[]'],
  ['nothing', 'VARCHAR'],
];

t.test('csv → parquet → csv → parquet: the same types and values, and the second CSV equals the first', async (t) => {
  const p1 = duck.file(toParquet(t, EVERY_TYPE_CSV));
  t.same(await duck.describe(p1), EVERY_TYPE_TYPES, 'the first Parquet file');
  const csv1 = csvOf(parquet2csv(duck.read(p1)));
  const p2 = duck.file(toParquet(t, csv1));
  t.same(await duck.describe(p2), EVERY_TYPE_TYPES, 'the second Parquet file has the same types');
  t.same(await difference(`SELECT * FROM read_parquet('${p1}')`, `SELECT * FROM read_parquet('${p2}')`), [[0, 0]], 'and the same rows');
  t.equal(csvOf(parquet2csv(duck.read(p2))), csv1, 'parquet2csv of both is the same text: a fixed point after one trip');
  t.equal(
    csv1,
    [
      'i,f,whole,b,d,ts,s,li,lf,ls,lb,nothing',
      '1,1.5,1.0,true,2024-02-29,2024-02-29T12:34:56.789Z,plain,"[1, 2]","[1.0, 2.5]","[""a"", ""x, y""]","[true, false]",',
      '-9223372036854775808,-0.0,2.0,false,1970-01-01,1970-01-01T00:00:00Z,"a, ""quoted"" cell","[9223372036854775807, null]","[NaN, Infinity, -Infinity]","[""say \\""hi\\"""", null]",[null],',
      '9223372036854775807,NaN,-3.0,true,,2024-02-29 12:34:56,"two\nlines",[],[-0.0],[],[],',
      ',Infinity,100000000000000000000.0,,1999-12-31,,007,,"[1e-7, 100.0]","[""""]",,',
      '0,-Infinity,,false,2000-01-01,2000-01-01T00:00:00.123456+01:00,"crlf\r\ninside",[0],,"[""é 😀""]",[true],',
      '42,1e-7,0.0,true,,,,[-1],[3.0],"[""[not, a, list]""]",[false],',
      '',
    ].join('\n'),
    'canonical text: whole floats with .0, -0.0 keeps its sign, dates and strings unchanged, "" read as null',
  );
  t.same(await duck.rows(`SELECT signbit(f) FROM read_parquet('${p2}') WHERE i = -9223372036854775808`), [[true]], '-0.0 is still negative zero');
  t.same(await duck.rows(`SELECT signbit(lf[1]) FROM read_parquet('${p2}') WHERE i = 9223372036854775807`), [[true]], 'in a list too');
  t.same(await duck.rows(`SELECT signbit(whole) FROM read_parquet('${p2}') WHERE i = 42`), [[false]], 'and 0.0 is positive');
  t.same(
    await duck.rows(`SELECT isnan(f), isinf(f), lf::VARCHAR FROM read_parquet('${p2}') WHERE i = -9223372036854775808`),
    [[false, false, '[nan, inf, -inf]']],
    'NaN and ±Infinity list items are floats',
  );
});

t.test('parquet (DuckDB) → csv → parquet: every type comes back as the type csv2parquet gives it, values equal', async (t) => {
  const source = duck.path();
  await duck.run(`COPY (SELECT * FROM (VALUES
      (1::BIGINT, 1.0::DOUBLE, 2.5::DOUBLE, true, 'plain', [1.0, 2.0]::DOUBLE[], [1, NULL]::BIGINT[], ['a', 'x, y']::VARCHAR[], [true, NULL]::BOOLEAN[],
       DATE '2024-02-29', TIMESTAMP '2024-02-29 12:34:56.789012', 1.5::FLOAT, 7::INTEGER),
      ((-9223372036854775808)::BIGINT, '-0.0'::DOUBLE, 'nan'::DOUBLE, false, 'a,"b"' || chr(10) || 'c', ['nan', 'inf', '-0.0']::DOUBLE[], []::BIGINT[], ['say "hi"', '']::VARCHAR[], []::BOOLEAN[],
       DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', 3.0::FLOAT, (-2147483648)::INTEGER),
      (NULL, 1e20::DOUBLE, 'inf'::DOUBLE, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (9223372036854775807::BIGINT, -7.0::DOUBLE, '-inf'::DOUBLE, true, '', [1e300]::DOUBLE[], [9223372036854775807]::BIGINT[], [NULL]::VARCHAR[], [false]::BOOLEAN[],
       DATE '1900-01-01', TIMESTAMP '2262-04-11 23:47:16', 0.1::FLOAT, 0::INTEGER)
    ) t(i, whole, f, b, s, lwhole, li, ls, lb, d, ts, fl, i32)) TO '${source}' (FORMAT PARQUET)`);
  const csv = csvOf(parquet2csv(duck.read(source)));
  const back = duck.file(toParquet(t, csv));
  t.same(await duck.describe(back), [
    ['i', 'BIGINT'],
    ['whole', 'DOUBLE'],
    ['f', 'DOUBLE'],
    ['b', 'BOOLEAN'],
    ['s', 'VARCHAR'],
    ['lwhole', 'DOUBLE[]'],
    ['li', 'BIGINT[]'],
    ['ls', 'VARCHAR[]'],
    ['lb', 'BOOLEAN[]'],
    ['d', 'DATE'],
    ['ts', 'TIMESTAMP'],
    ['fl', 'DOUBLE'],
    ['i32', 'BIGINT'],
  ]);
  // What CSV keeps exactly is compared as is, float32 at float32 precision. An empty string is read back as null (csv2parquet's rule for an
  // empty cell, quoted or not), so s is compared with that rule applied; inside a list it stays ''.
  const same = (from: string) =>
    `SELECT i, whole, f, b, ${from === source ? "nullif(s, '')" : 's'}, lwhole, li, ls, lb,
       d, ts, fl::FLOAT, i32::BIGINT FROM read_parquet('${from}')`;
  t.same(await difference(same(source), same(back)), [[0, 0]], 'the same rows');
  t.same(
    await duck.rows(`SELECT whole::VARCHAR, signbit(whole) FROM read_parquet('${back}') ORDER BY i NULLS LAST`),
    [
      ['-0.0', true],
      ['1.0', false],
      ['-7.0', true],
      ['1e+20', false],
    ],
    'the whole floats are doubles, -0.0 included',
  );
  t.match(csv, /^i,whole,f,b,s,lwhole,li,ls,lb,d,ts,fl,i32\n1,1\.0,2\.5,true,plain,"\[1\.0, 2\.0\]",/, 'whole floats are written 1.0, in lists too');
});

t.test('a float column of whole values past one chunk (fast row writer) stays float64', async (t) => {
  const source = duck.path();
  await duck.run(`COPY (SELECT i::BIGINT AS id, (i % 1000)::DOUBLE AS whole, [i::DOUBLE] AS items FROM range(40000) r(i)) TO '${source}' (FORMAT PARQUET)`);
  const back = duck.file(toParquet(t, csvOf(parquet2csv(duck.read(source)))));
  t.same(await duck.describe(back), [
    ['id', 'BIGINT'],
    ['whole', 'DOUBLE'],
    ['items', 'DOUBLE[]'],
  ]);
  t.same(await difference(`SELECT * FROM read_parquet('${source}')`, `SELECT * FROM read_parquet('${back}')`), [[0, 0]]);
});

t.test('arrow → parquet → csv → parquet: the same types where CSV can carry them', async (t) => {
  const table = new A.Table({
    whole: A.vectorFromArray([1, 2, -0, null], new A.Float64()),
    f: A.vectorFromArray([0.1, NaN, Infinity, 1e21], new A.Float64()),
    i64: A.vectorFromArray([1n, -9223372036854775808n, null, 0n], new A.Int64()),
    i16: A.vectorFromArray([1, null, -32768, 0], new A.Int16()),
    f32: A.vectorFromArray([1, 0.5, null, 16777217], new A.Float32()),
    b: A.vectorFromArray([true, false, null, true], new A.Bool()),
    s: A.vectorFromArray(['x', 'a,"b"\r\nc', null, '[1, 2]'], new A.Utf8()),
    d: A.vectorFromArray([Date.UTC(2024, 1, 29), null, 0, Date.UTC(1969, 11, 31)], new A.DateDay()),
    lf: A.vectorFromArray([[1, 2], [], null, [0.5, -0]], new A.List(new A.Field('item', new A.Float64(), true))),
    ls: A.vectorFromArray([['a'], ['x, y', null], [], null], new A.List(new A.Field('item', new A.Utf8(), true))),
  });
  const first = duck.file(arrow2parquet(A.tableToIPC(table, 'stream')));
  t.same(await duck.describe(first), [
    ['whole', 'DOUBLE'],
    ['f', 'DOUBLE'],
    ['i64', 'BIGINT'],
    ['i16', 'SMALLINT'],
    ['f32', 'FLOAT'],
    ['b', 'BOOLEAN'],
    ['s', 'VARCHAR'],
    ['d', 'DATE'],
    ['lf', 'DOUBLE[]'],
    ['ls', 'VARCHAR[]'],
  ]);
  const csv = csvOf(parquet2csv(duck.read(first)));
  t.equal(
    csv,
    [
      'whole,f,i64,i16,f32,b,s,d,lf,ls',
      '1.0,0.1,1,1,1.0,true,x,2024-02-29,"[1.0, 2.0]","[""a""]"',
      '2.0,NaN,-9223372036854775808,,0.5,false,"a,""b""\r\nc",,[],"[""x, y"", null]"',
      '-0.0,Infinity,,-32768,,,,1970-01-01,,[]',
      ',1e+21,0,0,16777216.0,true,"[1, 2]",1969-12-31,"[0.5, -0.0]",',
      '',
    ].join('\n'),
  );
  const back = duck.file(toParquet(t, csv));
  t.same(await duck.describe(back), [
    ['whole', 'DOUBLE'],
    ['f', 'DOUBLE'],
    ['i64', 'BIGINT'],
    ['i16', 'BIGINT'],
    ['f32', 'DOUBLE'],
    ['b', 'BOOLEAN'],
    ['s', 'VARCHAR'],
    ['d', 'DATE'],
    ['lf', 'DOUBLE[]'],
    ['ls', 'VARCHAR[]'],
  ]);
  // The text '[1, 2]' in a string column stays a string: the column has other text too.
  const same = (path: string) => `SELECT whole, f, i64, i16::BIGINT, f32::FLOAT, b, s, d, lf, ls FROM read_parquet('${path}')`;
  t.same(await difference(same(first), same(back)), [[0, 0]], 'the same rows');
});

t.test('parquet (DuckDB) DATE / TIMESTAMP / TIMESTAMPTZ / TIMESTAMP_NS → csv → parquet: the same types and instants', async (t) => {
  const source = duck.path();
  // Leap days, before 1970 and after 2038, the first and last day DuckDB's DATE shows with four
  // digits, µs and ns fractions, zones other than UTC (stored as the UTC instant), nulls.
  await duck.run(`COPY (SELECT * FROM (VALUES
      (DATE '2024-02-29', TIMESTAMP '2024-02-29 12:34:56.789012', TIMESTAMPTZ '2024-02-29 12:34:56.5+01', TIMESTAMP_NS '2021-01-01 00:00:00.123456789', TIMESTAMP_NS '2021-01-01 00:00:00.5', TIMESTAMP_MS '2021-01-01 00:00:00.123', TIMESTAMP_S '2021-01-01 00:00:01'),
      (DATE '2000-02-29', TIMESTAMP '1969-12-31 23:59:59.999999', TIMESTAMPTZ '1900-01-01 00:00:00-05:30', TIMESTAMP_NS '1969-12-31 23:59:59.999999999', TIMESTAMP_NS '1970-01-01 00:00:00', TIMESTAMP_MS '1969-12-31 23:59:59.999', TIMESTAMP_S '1900-01-01 00:00:00'),
      (DATE '0001-01-01', TIMESTAMP '0001-01-01 00:00:00', TIMESTAMPTZ '2100-12-31 23:59:59.999999+00', TIMESTAMP_NS '2200-06-30 12:00:00.000000001', NULL, NULL, TIMESTAMP_S '2100-01-01 00:00:00'),
      (DATE '9999-12-31', TIMESTAMP '9999-12-31 23:59:59.999999', TIMESTAMPTZ '2038-01-19 03:14:08+00', TIMESTAMP_NS '1700-01-01 00:00:00.000000001', TIMESTAMP_NS '2262-04-11 23:47:16', TIMESTAMP_MS '2500-01-01 00:00:00.001', NULL),
      (DATE '1969-12-31', TIMESTAMP '2038-01-19 03:14:08.000001', NULL, NULL, NULL, TIMESTAMP_MS '1600-02-29 00:00:00', TIMESTAMP_S '1600-02-29 00:00:00'),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    ) t(d, ts, tz, ns, ns_coarse, ms, s)) TO '${source}' (FORMAT PARQUET)`);
  t.same(await duck.describe(source), [
    ['d', 'DATE'],
    ['ts', 'TIMESTAMP'],
    ['tz', 'TIMESTAMP WITH TIME ZONE'],
    ['ns', 'TIMESTAMP_NS'],
    ['ns_coarse', 'TIMESTAMP_NS'],
    ['ms', 'TIMESTAMP'],
    ['s', 'TIMESTAMP'],
  ]);
  const csv = csvOf(parquet2csv(duck.read(source)));
  t.equal(
    csv.split('\n')[1],
    '2024-02-29,2024-02-29T12:34:56.789012,2024-02-29T11:34:56.5Z,2021-01-01T00:00:00.123456789,2021-01-01T00:00:00.5,2021-01-01T00:00:00.123,2021-01-01T00:00:01',
    'the texts parquet2csv writes',
  );
  const back = duck.file(toParquet(t, csv));
  t.same(
    await duck.describe(back),
    [
      ['d', 'DATE'],
      ['ts', 'TIMESTAMP'],
      ['tz', 'TIMESTAMP WITH TIME ZONE'],
      ['ns', 'TIMESTAMP_NS'],
      // No value needs more than µs: read back as µs, the unit of DuckDB's TIMESTAMP.
      ['ns_coarse', 'TIMESTAMP'],
      ['ms', 'TIMESTAMP'],
      ['s', 'TIMESTAMP'],
    ],
    'the same types (a ns column whose fractions fit µs comes back in µs)',
  );
  t.same(await difference(`SELECT * FROM read_parquet('${source}')`, `SELECT * FROM read_parquet('${back}')`), [[0, 0]], 'the same values');
  t.same(
    await duck.rows(`SELECT epoch_ns(ns)::VARCHAR, epoch_us(tz)::VARCHAR FROM read_parquet('${back}') WHERE d = DATE '2000-02-29'`),
    [['-1', '-2208969000000000']],
    'one nanosecond before 1970, and 1900-01-01 00:00 at -05:30 as its UTC instant',
  );
  t.same(
    await duck.rows(`SELECT count(*)::INT FROM read_parquet('${back}') WHERE d IS NULL AND ts IS NULL AND tz IS NULL AND ns IS NULL`),
    [[1]],
    'empty cells are nulls',
  );
  t.equal(csvOf(parquet2csv(duck.read(back))), csv, 'and the second CSV equals the first');
});

t.test("DuckDB's own CSV (space separator, +00 offsets) → csv2parquet: the types DuckDB's sniffer gives, the same values", async (t) => {
  await duck.run(`CREATE TABLE dated AS SELECT * FROM (VALUES
      (DATE '2024-02-29', TIMESTAMP '2024-02-29 12:34:56.789', TIMESTAMPTZ '2024-02-29 12:34:56.5+01', TIMESTAMP '1969-07-20 20:17:40'),
      (DATE '1901-12-13', TIMESTAMP '2040-01-01 00:00:00', TIMESTAMPTZ '1901-12-13 20:45:52+00', TIMESTAMP '2000-01-01 00:00:00.000001'),
      (NULL, NULL, NULL, NULL)
    ) t(d, ts, tz, local)`);
  const csvPath = duck.path('csv');
  await duck.run(`COPY dated TO '${csvPath}' (FORMAT CSV, HEADER)`);
  const text = duck.read(csvPath).toString('utf8');
  t.match(text, /2024-02-29 12:34:56\.789,2024-02-29 11:34:56\.5\+00,/, "DuckDB's CSV has a space separator and a +00 offset");
  const ours = duck.file(toParquet(t, text));
  const sniffed = await duck.rows(`DESCRIBE SELECT * FROM read_csv('${csvPath}')`);
  t.same(
    await duck.describe(ours),
    sniffed.map((r) => [r[0], r[1]]),
    "the same types as DuckDB's CSV sniffer",
  );
  t.same(await duck.describe(ours), [
    ['d', 'DATE'],
    ['ts', 'TIMESTAMP'],
    ['tz', 'TIMESTAMP WITH TIME ZONE'],
    ['local', 'TIMESTAMP'],
  ]);
  t.same(await difference('SELECT * FROM dated', `SELECT * FROM read_parquet('${ours}')`), [[0, 0]], 'the same values as the table');
});
