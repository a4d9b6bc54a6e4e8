/**
 * Date and timestamp columns of ld.csv2parquet (runner/builtins/formats/column-types.ts), read back
 * by DuckDB: which columns become DATE / TIMESTAMP / TIMESTAMPTZ / TIMESTAMP_NS and which stay text,
 * next to what DuckDB's own CSV sniffer decides for the same cells (the same, except where this
 * table says why not); the values at the calendar's edges; a later chunk that changes a column's
 * type; hostile cells; and the `inferDates: false` escape hatch.
 */
import t from 'tap';
import { csvToParquet, emptyStats } from '../../../runner/builtins/formats/csv-to-parquet.js';
import { DEFAULT_DIALECT } from '../../../runner/builtins/formats/csv-dialect.js';
import { csv2parquet, Duck, testContext } from './format-test-helpers.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const duck = await Duck.open();
t.teardown(() => duck.close());

/** Converts and returns the Parquet file's path; fails the test on `success: false`. */
function parquetFile(t: Test, csv: string, options?: unknown): string {
  const r = options === undefined ? csv2parquet(csv) : csv2parquet(csv, options);
  t.equal(r.success, true, `converted${r.error ? `: ${r.error}` : ''}`);
  return duck.file(r.base64);
}

const rowsOf = (path: string) => duck.rows(`SELECT * FROM read_parquet('${path}')`);

t.test("which columns are dates and timestamps, next to DuckDB's sniffer", async (t) => {
  // [case, cells, our type, DuckDB's read_csv type]
  const cases: [string, string[], string, string][] = [
    ['dates, with nulls', ['2024-02-29', '', '1969-12-31'], 'DATE', 'DATE'],
    ['quoted dates are dates', ['"2024-02-29"', '2024-03-01'], 'DATE', 'DATE'],
    ['a leap day of a common year: text', ['2024-02-29', '2023-02-29'], 'VARCHAR', 'VARCHAR'],
    ['1900 is no leap year: text', ['2000-02-29', '1900-02-29'], 'VARCHAR', 'VARCHAR'],
    ['February 30: text', ['2023-02-30'], 'VARCHAR', 'VARCHAR'],
    ['one cell that is not a date: text', ['2024-01-01', 'n/a', '2024-01-03'], 'VARCHAR', 'VARCHAR'],
    ['date-times with T', ['2024-02-29T12:34:56', '2024-02-29T12:34:56.123'], 'TIMESTAMP', 'TIMESTAMP'],
    ['date-times with a space', ['2024-02-29 12:34:56', '2024-02-29 12:34:56.123456'], 'TIMESTAMP', 'TIMESTAMP'],
    ['no seconds', ['2024-02-29 12:34', '2024-02-29 12:35'], 'TIMESTAMP', 'TIMESTAMP'],
    ['Z', ['2024-02-29T12:34:56Z', '2024-02-29T12:34:56.5Z'], 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMP WITH TIME ZONE'],
    ['offsets', ['2024-02-29 12:34:56+01', '2024-02-29 12:34:56-05:30', ''], 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMP WITH TIME ZONE'],
    ['dates and date-times: text', ['2024-02-29', '2024-02-29 12:34:56'], 'VARCHAR', 'VARCHAR'],
    ['a lowercase t: text', ['2024-02-29t12:34:56'], 'VARCHAR', 'VARCHAR'],
    ['a leap second: text', ['2024-02-29 23:59:60'], 'VARCHAR', 'VARCHAR'],
    // Where the two differ, on purpose:
    // 9 fraction digits: DuckDB cuts them to µs; here the nanoseconds are kept.
    ['nanoseconds', ['2024-02-29 12:34:56.123456789', '2024-02-29 12:34:56'], 'TIMESTAMP_NS', 'TIMESTAMP'],
    // More than 9 fraction digits cannot be kept: text rather than a cut value.
    ['13 fraction digits: text', ['2024-02-29 12:34:56.1234567890123'], 'VARCHAR', 'TIMESTAMP'],
    // Zoned and unzoned: DuckDB reads the unzoned ones in the session's zone; here nothing is guessed.
    ['zoned and unzoned: text', ['2024-02-29 12:34:56', '2024-02-29 12:34:56Z'], 'VARCHAR', 'TIMESTAMP WITH TIME ZONE'],
    // DuckDB reads 24:00:00 as the next midnight; it is no time of day here.
    ['24:00:00: text', ['2024-02-29 24:00:00'], 'VARCHAR', 'TIMESTAMP'],
    // Notations other than ISO 8601's stay text.
    ['slashes: text', ['2024/02/29', '2024/03/01'], 'VARCHAR', 'DATE'],
    ['one-digit months: text', ['2024-2-9'], 'VARCHAR', 'DATE'],
    // Expanded years, as parquet2csv writes them beyond 0000–9999.
    ['a signed year', ['-0044-03-15', '2024-01-01'], 'DATE', 'DATE'],
    ['a + year', ['+10000-01-01', '2024-01-01'], 'DATE', 'VARCHAR'],
    ['six-digit years: text', ['100000-01-01'], 'VARCHAR', 'DATE'],
  ];
  for (const [name, cells, ours, duckType] of cases) {
    const csv = `v\n${cells.join('\n')}\n`;
    t.same(await duck.describe(parquetFile(t, csv)), [['v', ours]], name);
    const path = duck.file(Buffer.from(csv), 'csv');
    t.same(await duck.rows(`SELECT column_type FROM (DESCRIBE SELECT * FROM read_csv('${path}'))`), [[duckType]], `${name}: DuckDB`);
  }
});

t.test('values at the edges of the calendar, as DuckDB reads them', async (t) => {
  const csv = [
    'd,ts,tz',
    '2024-02-29,2024-02-29T23:59:59.999999,2024-02-29T23:59:59.999999Z',
    '1901-12-13,1901-12-13 20:45:52,1901-12-13 20:45:52+00',
    '2038-01-19,2038-01-19 03:14:08,2038-01-19T03:14:08+00:00',
    '0000-01-01,0000-01-01T00:00:00,0001-01-01T00:00:00+01:00',
    '9999-12-31,9999-12-31T23:59:59.999999,9999-12-31T23:59:59.999999-01:00',
    '99999-12-31,,',
    ',"",',
  ].join('\n');
  const path = parquetFile(t, csv);
  t.same(await duck.describe(path), [
    ['d', 'DATE'],
    ['ts', 'TIMESTAMP'],
    ['tz', 'TIMESTAMP WITH TIME ZONE'],
  ]);
  t.same(await duck.rows(`SELECT d::VARCHAR, ts::VARCHAR, epoch_us(tz)::VARCHAR FROM read_parquet('${path}')`), [
    ['2024-02-29', '2024-02-29 23:59:59.999999', String(Date.UTC(2024, 1, 29, 23, 59, 59) * 1000 + 999999)],
    ['1901-12-13', '1901-12-13 20:45:52', String(-(2 ** 31) * 1e6)],
    ['2038-01-19', '2038-01-19 03:14:08', String(2 ** 31 * 1e6)],
    // Year 0 is 1 BC (ISO 8601 and the proleptic Gregorian calendar count a year 0; DuckDB shows it as BC).
    ['0001-01-01 (BC)', '0001-01-01 (BC) 00:00:00', String((-62135596800n - 3600n) * 1_000_000n)],
    ['9999-12-31', '9999-12-31 23:59:59.999999', String((253402300799n + 3600n) * 1_000_000n + 999_999n)],
    ['99999-12-31', null, null],
    [null, null, null],
  ]);
});

t.test('a later chunk changes the type: dates → text, µs → ns, zoned → text, ns → text out of its range', async (t) => {
  const convert = (lines: string[]) => {
    const stats = emptyStats();
    const bytes = csvToParquet(lines.join('\n'), 'snappy', testContext(), stats);
    return { path: duck.file(bytes), stats };
  };
  const many = (n: number, cell: (i: number) => string) => Array.from({ length: n }, (_, i) => cell(i));
  const day = (i: number) => new Date(Date.UTC(2000, 0, 1) + i * 86_400_000).toISOString().slice(0, 10);

  const text = convert(['d', ...many(40_000, day), 'unknown']);
  t.same(text.stats.types, ['string'], 'a text cell after two chunks of dates');
  t.equal(text.stats.restarts, 1);
  t.same(await duck.rows(`SELECT count(*)::INT, max(length(d))::INT, count(*) FILTER (d = 'unknown')::INT FROM read_parquet('${text.path}')`), [
    [40_001, 10, 1],
  ]);
  t.same(await duck.rows(`SELECT d FROM read_parquet('${text.path}') LIMIT 1`), [['2000-01-01']], 'the dates kept as their text');

  const ns = convert(['ts', ...many(40_000, (i) => `${day(i)}T00:00:00.5`), '2200-01-01T00:00:00.000000001']);
  t.same(ns.stats.types, ['timestamp[ns]'], 'one nanosecond fraction after two chunks of µs');
  t.same(
    await duck.rows(`SELECT epoch_ns(min(ts))::VARCHAR, epoch_ns(max(ts))::VARCHAR, count(*)::INT FROM read_parquet('${ns.path}')`),
    [[String(Date.UTC(2000, 0, 1) * 1e6 + 5e8), String(BigInt(Date.UTC(2200, 0, 1)) * 1_000_000n + 1n), 40_001]],
    'every value exact in ns',
  );

  const zones = convert(['ts', ...many(20_000, (i) => `${day(i)}T00:00:00Z`), '2100-01-01T00:00:00']);
  t.same(zones.stats.types, ['string'], 'an unzoned cell in a zoned column');

  const wide = convert(['ts', ...many(20_000, (i) => `${day(i)}T00:00:00.000000001`), '1500-01-01T00:00:00']);
  t.same(wide.stats.types, ['string'], 'a year outside 1677–2262 in a nanosecond column');

  const micro = convert(['ts', ...many(20_000, (i) => `${day(i)}T00:00:00.25`), '1500-01-01T00:00:00']);
  t.same(micro.stats.types, ['timestamp[us]'], 'the same year in a µs column');
  t.equal(micro.stats.restarts, 0, 'costs no restart');
  t.same(await duck.rows(`SELECT min(ts)::VARCHAR FROM read_parquet('${micro.path}')`), [['1500-01-01 00:00:00']]);
});

t.test('hostile cells: very long digit runs and fractions, year 0000 and 99999, in a date column', async (t) => {
  const long = '9'.repeat(2_000_000);
  const path = parquetFile(
    t,
    ['a,b,c,d', `${long},2024-01-01,0000-01-01,2024-01-01T00:00:00.${'1'.repeat(100_000)}`, `2024-01-01,${long}-01-01,99999-12-31,2024-01-01`].join('\n'),
  );
  t.same(await duck.describe(path), [
    ['a', 'VARCHAR'],
    ['b', 'VARCHAR'],
    ['c', 'DATE'],
    ['d', 'VARCHAR'],
  ]);
  t.same(
    await duck.rows(`SELECT length(a)::INT, length(b)::INT, c::VARCHAR, length(d)::INT FROM read_parquet('${path}')`),
    [
      [2_000_000, 10, '0001-01-01 (BC)', 100_020],
      [10, 2_000_006, '99999-12-31', 10],
    ],
    'the text kept whole',
  );
  t.equal(csv2parquet('a\n2024-01-01\n').success, true, 'the next call works');
});

t.test('inferDates: false keeps dates and timestamps as text (and the other types as before)', async (t) => {
  const csv = 'n,d,ts\n1,2024-02-29,2024-02-29T12:34:56Z\n2,,2024-02-29 12:34:56+01\n';
  t.same(await duck.describe(parquetFile(t, csv, { inferDates: false })), [
    ['n', 'BIGINT'],
    ['d', 'VARCHAR'],
    ['ts', 'VARCHAR'],
  ]);
  t.same(await rowsOf(parquetFile(t, csv, { inferDates: false })), [
    ['1', '2024-02-29', '2024-02-29T12:34:56Z'],
    ['2', null, '2024-02-29 12:34:56+01'],
  ]);
  t.same(await duck.describe(parquetFile(t, csv, { inferDates: true })), [
    ['n', 'BIGINT'],
    ['d', 'DATE'],
    ['ts', 'TIMESTAMP WITH TIME ZONE'],
  ]);
  const stats = emptyStats();
  csvToParquet(csv, 'zstd', testContext(), stats, DEFAULT_DIALECT, false);
  t.same(stats.types, ['int64', 'string', 'string'], 'csvToParquet takes it too');
  t.same(
    await duck.describe(parquetFile(t, 'd;x\n2024-01-01;[1]\n', { delimiter: ';' })),
    [
      ['d', 'DATE'],
      ['x', 'BIGINT[]'],
    ],
    'with another delimiter',
  );
  t.same(await duck.describe(parquetFile(t, 'l\n"[""2024-01-01""]"\n')), [['l', 'VARCHAR[]']], 'dates inside a list stay strings');
});
