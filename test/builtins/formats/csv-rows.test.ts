/**
 * writeRows (runner/builtins/formats/csv-rows.ts), the fast row loop of parquet2csv, writes exactly
 * the bytes of the per-cell writers of arrow-csv-cells.ts (which define every type's text): for each
 * fast column kind with its edge values, nulls, sliced data (offsets), batches longer than one room
 * check, and near the output cap, where it falls back to writing cell by cell.
 */
import t from 'tap';
import type { Data, DataType, Field, Table } from 'apache-arrow';
import { csvCellWriter, isValid } from '../../../runner/builtins/formats/arrow-csv-cells.js';
import { ByteWriter } from '../../../runner/builtins/formats/byte-writer.js';
import { ConversionInputError } from '../../../runner/builtins/formats/conversion-guard.js';
import { ColumnPlan, planColumn, writeRows } from '../../../runner/builtins/formats/csv-rows.js';
import { arrowLib } from '../../../runner/builtins/formats/format-libs.js';

const A = arrowLib();

/** The CSV rows of a table through the per-cell writers: what parquet2csv wrote before writeRows. */
function reference(table: Table, out = new ByteWriter(1024)): Buffer {
  const fields = table.schema.fields;
  const writers = fields.map((f) => csvCellWriter(f.type, f));
  for (const batch of table.batches) {
    const cols = batch.data.children;
    for (let r = 0; r < batch.numRows; r++) {
      for (let c = 0; c < cols.length; c++) {
        if (c) out.byte(44);
        if (isValid(cols[c]!, r)) writers[c]!(out, cols[c]!, r);
        else if (cols.length === 1) out.ascii('""');
      }
      out.byte(10);
    }
    out.checkLimit();
  }
  return Buffer.from(out.bytes());
}

function fast(table: Table, out = new ByteWriter(1024)): Buffer {
  const fields = table.schema.fields;
  const writers = fields.map((f) => csvCellWriter(f.type, f));
  const plans = fields.map(() => new ColumnPlan());
  for (const batch of table.batches) {
    const cols: Data[] = batch.data.children;
    for (let c = 0; c < cols.length; c++) planColumn(cols[c]!, writers[c]!, plans[c]);
    writeRows(out, plans, batch.numRows);
    out.checkLimit();
  }
  return Buffer.from(out.bytes());
}

function vector(values: unknown[], type: DataType) {
  return A.vectorFromArray(values as never[], type as never);
}

function listType(item: DataType): DataType {
  return new A.List(new A.Field('item', item, true) as Field) as unknown as DataType;
}

const FLOATS = [
  0,
  -0,
  0.1,
  1.5,
  -2.25,
  123456.789,
  1e21,
  1e-7,
  1e-6,
  4e9,
  3999999999.5,
  2 ** 53,
  2 ** 31,
  NaN,
  Infinity,
  -Infinity,
  5e-324,
  0.30000000000000004,
  1 / 3,
  100,
  1e6 + 0.000001,
  -0.000123,
  99.99,
  null,
];
const INT64 = [
  0n,
  1n,
  -1n,
  2147483647n,
  -2147483647n,
  -2147483648n,
  -2147483649n,
  4294967295n,
  -4294967296n,
  9n,
  10n,
  99n,
  100n,
  2n ** 31n,
  2n ** 31n - 1n,
  -(2n ** 31n),
  2n ** 32n,
  2n ** 53n,
  2n ** 53n - 1n,
  -(2n ** 53n),
  1000000000n,
  999999999n,
  -1000000001n,
  12345678901234n,
  9223372036854775807n,
  -9223372036854775808n,
  null,
];
const TEXT = [
  '',
  'plain',
  'a,b',
  'say "hi"',
  'line\nbreak',
  'cr\r',
  'x'.repeat(100),
  `long with, comma ${'y'.repeat(50)}`,
  `"${'q'.repeat(40)}"`,
  'Zürich',
  '東京',
  null,
  `quote late ${'z'.repeat(30)}"`,
  `${'n'.repeat(30)}\n`,
  'exactly twenty-four byt',
  'exactly twenty-five byte',
];
const pick = <T>(xs: T[], n: number): T[] => Array.from({ length: n }, (_, i) => xs[(i * 7 + 3) % xs.length]!);

t.test('every fast kind, with edge values and nulls, writes the per-cell bytes', async (t) => {
  const n = 200;
  const table = new A.Table({
    s: vector(pick(TEXT, n), new A.Utf8()),
    i64: vector(pick(INT64, n), new A.Int64()),
    f64: vector(pick(FLOATS, n), new A.Float64()),
    i8: vector(pick([-128, 127, 0, -1, null], n), new A.Int8()),
    i16: vector(pick([-32768, 32767, 5], n), new A.Int16()),
    i32: vector(pick([-2147483648, 2147483647, 0, 10, null], n), new A.Int32()),
    u32: vector(pick([4294967295, 2147483648, 0, 7], n), new A.Uint32()),
    u8: vector(pick([255, 0], n), new A.Uint8()),
    b: vector(pick([true, false, null], n), new A.Bool()),
    li: vector(pick([[1n, null, -3n], [], null, [2n ** 60n], [5n], [-(2n ** 53n), 2n ** 53n]], n), listType(new A.Int64())),
    lf: vector(pick([[1.5, null, NaN], [], null, [0.1], [1e21, -0]], n), listType(new A.Float64())),
    ls: vector(pick([['a', 'x, y', 'say "hi"', 'back\\slash', 'ctl\u0001', 'tab\t', 'nl\n'], [], null, [null], [''], ['東京']], n), listType(new A.Utf8())),
    // Through their cell writers (no fast kind).
    d: vector(pick([new Date(Date.UTC(2021, 5, 24)), null], n), new A.DateDay()),
    l32: vector(pick([[1, 2], null, []], n), listType(new A.Int32())),
    lb: vector(pick([[true, null], []], n), listType(new A.Bool())),
    u64: vector(pick([18446744073709551615n, 0n], n), new A.Uint64()),
    f32: vector(pick([1.1, null], n), new A.Float32()),
  });
  const expected = reference(table);
  t.equal(fast(table).toString('utf8'), expected.toString('utf8'));
  // Sliced: the bitmaps keep an offset.
  for (const from of [1, 3, 8, 13]) {
    const sliced = table.slice(from, from + 150);
    t.equal(fast(sliced).toString('utf8'), reference(sliced).toString('utf8'), `sliced at ${from}`);
  }
});

t.test('doubles: the shortest text, as the cell writer finds it, for decimals of every length', async (t) => {
  let seed = 3;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const values: number[] = [1e-6, 0.0000015, 9.999999e-7, 3999999999.999999, 4e9 - 1, 2.675, 1.1, 0.5, -1234.5678, 1e-6 * 3, 0.1 + 0.2];
  for (let i = 0; i < 20_000; i++) {
    const digits = Math.floor(rand() * 9);
    const scale = 10 ** Math.floor(rand() * 10);
    const v = Math.round(rand() * scale * 10 ** digits) / 10 ** digits;
    values.push(rand() < 0.5 ? v : -v, rand() * scale, (rand() - 0.5) * 1e-5);
  }
  const table = new A.Table({
    f: vector(values, new A.Float64()),
    l: vector(
      values.map((v) => [v, v / 3]),
      listType(new A.Float64()),
    ),
  });
  t.equal(fast(table).toString('utf8'), reference(table).toString('utf8'));
});

t.test('a single column writes a null as ""', async (t) => {
  const cases: [DataType, unknown[]][] = [
    [new A.Utf8(), ['x', null, '']],
    [new A.Int64(), [1n, null, 2n]],
    [new A.Float64(), [1.5, null, 2]],
  ];
  for (const [type, values] of cases) {
    const table = new A.Table({ only: vector(values, type) });
    t.equal(fast(table).toString('utf8'), reference(table).toString('utf8'), String(type));
  }
  const allNull = new A.Table({ only: vector([null, null], new A.Utf8()) });
  t.equal(fast(allNull).toString('utf8'), '""\n""\n');
});

t.test('long batches (several room checks), and text chunks with and without any character to quote', async (t) => {
  const n = 10_000;
  const plainText = Array.from({ length: n }, (_, i) => (i % 11 === 0 ? null : `word${i}`.repeat(1 + (i % 9))));
  const table = new A.Table({
    plain: vector(plainText, new A.Utf8()),
    mixed: vector(pick(TEXT, n), new A.Utf8()),
    id: vector(
      Array.from({ length: n }, (_, i) => BigInt(i * 7919 - 5000)),
      new A.Int64(),
    ),
  });
  t.equal(fast(table).toString('utf8'), reference(table).toString('utf8'));
});

t.test('near the output cap: cell by cell, the same bytes and the same error', async (t) => {
  // 4000 rows of 350 bytes: the worst case of one room check (2 × the text) is past the cap plus
  // its slack, the text itself is not.
  const rows = Array.from({ length: 4000 }, (_, i) => `${String(i).padStart(6, '0')}${'t'.repeat(344)}`);
  const table = new A.Table({ s: vector(rows, new A.Utf8()) });
  const limit = 1_500_000;
  const message = 'the CSV would be larger than the limit';
  const ours = fast(table, new ByteWriter(16, limit, message));
  t.equal(ours.length, 4000 * 351);
  t.ok(ours.equals(reference(table, new ByteWriter(16, limit, message))));
  t.throws(() => fast(table, new ByteWriter(16, 1_000_000, message)), new ConversionInputError(message), 'over the cap');
  t.throws(() => reference(table, new ByteWriter(16, 1_000_000, message)), new ConversionInputError(message), 'as before');
});
