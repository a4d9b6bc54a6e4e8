/**
 * importFfiBatch (runner/builtins/formats/arrow-ffi.ts) reads parquet-wasm's decoded batches straight
 * from wasm memory: the columns it gives write the same CSV as the same batches through IPC, for
 * every type it reads; it reads only schemas it knows (ffiReadable) and gives undefined for a batch
 * that does not look like the schema (the caller then goes through IPC).
 */
import t from 'tap';
import type { Data, DataType, Field, Schema, Table } from 'apache-arrow';
import { csvCellWriter } from '../../../runner/builtins/formats/arrow-csv-cells.js';
import { ffiReadable, importFfiBatch } from '../../../runner/builtins/formats/arrow-ffi.js';
import { ByteWriter } from '../../../runner/builtins/formats/byte-writer.js';
import { ColumnPlan, planColumn, writeRows } from '../../../runner/builtins/formats/csv-rows.js';
import { arrowLib, parquetWasmLib } from '../../../runner/builtins/formats/format-libs.js';
import { writeParquetFromIpc } from '../../../runner/builtins/formats/parquet-writer.js';

const A = arrowLib();

const vector = (values: unknown[], type: unknown) => A.vectorFromArray(values as never[], type as never);
const item = (type: unknown) => new A.Field('item', type as DataType, true) as Field;
const pick = <T>(xs: T[], n: number): T[] => Array.from({ length: n }, (_, i) => xs[(i * 5 + 1) % xs.length]!);

function csvOfBatches(schema: Schema, batches: { columns: Data[]; rows: number }[]): string {
  const writers = schema.fields.map((f) => csvCellWriter(f.type, f));
  const plans = schema.fields.map(() => new ColumnPlan());
  const out = new ByteWriter(1024);
  for (const b of batches) {
    for (const [i, c] of b.columns.entries()) planColumn(c, writers[i]!, plans[i]);
    writeRows(out, plans, b.rows);
  }
  return out.bytes().toString('utf8');
}

/** A Parquet file of `table` written by parquet-wasm, read back both ways. */
function bothWays(table: Table, batchSize: number): { schema: Schema; ffi: string | undefined; ipc: string } {
  const file = writeParquetFromIpc(A.tableToIPC(table, 'stream'), 'snappy');
  const pw = parquetWasmLib();
  const schema = A.tableFromIPC(pw.readSchema(file).intoIPCStream()).schema;
  const viaIpc = A.tableFromIPC(pw.readParquet(file, { batchSize }).intoIPCStream());
  const ipc = csvOfBatches(
    schema,
    viaIpc.batches.map((b) => ({ columns: b.data.children, rows: b.numRows })),
  );
  const stream = pw.readParquet(file, { batchSize }).intoFFI();
  try {
    const addrs = stream.arrayAddrs();
    const memory = pw.wasmMemory().buffer;
    const batches = [...addrs].map((addr) => importFfiBatch(memory, addr, stream.schemaAddr(), schema));
    return { schema, ffi: batches.every((b) => b) ? csvOfBatches(schema, batches as { columns: Data[]; rows: number }[]) : undefined, ipc };
  } finally {
    stream.drop();
  }
}

t.test('the columns read through FFI write the same CSV as through IPC', async (t) => {
  const n = 3000;
  const table = new A.Table({
    i8: vector(pick([-128, 127, null, 0], n), new A.Int8()),
    i16: vector(pick([-32768, 5, null], n), new A.Int16()),
    i32: vector(pick([-2147483648, 2147483647, null], n), new A.Int32()),
    i64: vector(pick([2n ** 62n, -1n, null, 0n], n), new A.Int64()),
    u8: vector(pick([255, 0, null], n), new A.Uint8()),
    u16: vector(pick([65535, null], n), new A.Uint16()),
    u32: vector(pick([4294967295, null, 1], n), new A.Uint32()),
    u64: vector(pick([18446744073709551615n, null, 3n], n), new A.Uint64()),
    f32: vector(pick([1.5, null, -0.25], n), new A.Float32()),
    f64: vector(pick([0.1, null, 1e300, NaN], n), new A.Float64()),
    b: vector(pick([true, false, null], n), new A.Bool()),
    s: vector(pick(['a,b', 'say "hi"', '', null, '東京'], n), new A.Utf8()),
    ls: vector(pick(['large', null], n), new A.LargeUtf8()),
    bin: vector(pick([new Uint8Array([1, 2, 3]), null, new Uint8Array(0)], n), new A.Binary()),
    fsb: vector(pick([new Uint8Array([1, 2, 3, 4]), null], n), new A.FixedSizeBinary(4)),
    d32: vector(pick([new Date(Date.UTC(2020, 1, 29)), null], n), new A.DateDay()),
    ts: vector(pick([Date.UTC(2021, 5, 24, 11, 14, 52, 123), null], n), new A.TimestampMillisecond('UTC')),
    tsn: vector(pick([Date.UTC(1969, 11, 31, 23, 59, 59), null], n), new A.TimestampMillisecond()),
    li: vector(pick([[1n, null, 3n], [], null], n), new A.List(item(new A.Int64()))),
    ll: vector(pick([['x, y', null], [], null], n), new A.List(item(new A.Utf8()))),
    lf: vector(pick([[0.5], null], n), new A.List(item(new A.Float64()))),
    lb: vector(pick([[true, null], null], n), new A.List(item(new A.Bool()))),
    nested: vector(pick([[[1, 2], [3]], null, []], n), new A.List(item(new A.List(item(new A.Int32()))))),
    fsl: vector(pick([[1.5, 2.5], null], n), new A.FixedSizeList(2, item(new A.Float64()))),
    st: vector(
      pick([{ a: 1, b: 'x' }, null, { a: null, b: null }], n),
      new A.Struct([new A.Field('a', new A.Int32(), true), new A.Field('b', new A.Utf8(), true)] as Field[]),
    ),
  });
  for (const batchSize of [1024, 65536]) {
    const { schema, ffi, ipc } = bothWays(table, batchSize);
    t.ok(ffiReadable(schema), `every type is read through FFI (${schema.fields.map((f) => String(f.type)).join(', ')})`);
    t.equal(ipc.split('\n').length, n + 1, `${n} rows`);
    t.equal(ffi, ipc, `batches of ${batchSize}`);
  }
});

t.test('types without a plain C layout are left to IPC', async (t) => {
  const dict = new A.Dictionary(new A.Utf8(), new A.Int32());
  const map = new A.Map_(
    new A.Field('entries', new A.Struct([new A.Field('key', new A.Utf8(), false), new A.Field('value', new A.Int32(), true)] as Field[]), false) as Field,
  );
  for (const type of [dict, map, new A.Null(), new A.IntervalDayTime(), new A.List(item(dict))] as DataType[]) {
    t.notOk(ffiReadable(new A.Schema([new A.Field('x', type, true)] as Field[])), String(type));
  }
  t.ok(ffiReadable(new A.Schema([new A.Field('x', new A.Int64(), true)] as Field[])));
});

t.test('a batch that does not look like the schema gives undefined', async (t) => {
  const table = new A.Table({ a: vector([1n, 2n], new A.Int64()), s: vector(['x', null], new A.Utf8()) });
  const file = writeParquetFromIpc(A.tableToIPC(table, 'stream'), 'zstd');
  const pw = parquetWasmLib();
  const stream = pw.readParquet(file).intoFFI();
  try {
    const addr = stream.arrayAddrs()[0]!;
    const memory = pw.wasmMemory().buffer;
    const schemaOf = (...types: DataType[]) => new A.Schema(types.map((ty, i) => new A.Field(`c${i}`, ty, true)) as Field[]);
    t.ok(importFfiBatch(memory, addr, stream.schemaAddr(), schemaOf(new A.Int64(), new A.Utf8())), 'as written');
    t.equal(importFfiBatch(memory, addr, stream.schemaAddr(), schemaOf(new A.Int32(), new A.Utf8())), undefined, 'another int width');
    t.equal(importFfiBatch(memory, addr, stream.schemaAddr(), schemaOf(new A.Int64(), new A.LargeUtf8())), undefined, 'large utf8');
    t.equal(importFfiBatch(memory, addr, stream.schemaAddr(), schemaOf(new A.Int64())), undefined, 'fewer columns');
  } finally {
    stream.drop();
  }
});
