/**
 * ld.arrow2parquet (runner/builtins/formats/arrow-to-parquet.ts), called directly: Arrow IPC streams
 * built with apache-arrow are written with every codec and read back by DuckDB (rows and types, lists
 * as LISTs); the file format is accepted; invalid bytes throw clear errors without growing
 * parquet-wasm's memory; a large conversion gives its wasm memory back.
 */
import * as A from 'apache-arrow';
import t from 'tap';
import { FORMATS, parquetWasmMemoryBytes, PARQUET_WASM_KEEP_BYTES } from '../../../runner/builtins/formats/index.js';
import { COMPRESSIONS } from '../../../runner/builtins/formats/parquet-codecs.js';
import { arrow2parquet, Duck, testContext, thrown } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

function sampleTable(): A.Table {
  const tags = A.vectorFromArray([['a', 'x, y'], [], null], new A.List(new A.Field('item', new A.Utf8(), true)));
  const nums = A.vectorFromArray([[1n, 2n], [9007199254740993n], [null]], new A.List(new A.Field('item', new A.Int64(), true)));
  return new A.Table({
    i32: A.vectorFromArray([1, null, -3], new A.Int32()),
    i64: A.vectorFromArray([9223372036854775807n, 0n, -1n], new A.Int64()),
    f64: A.vectorFromArray([1.5, NaN, null], new A.Float64()),
    b: A.vectorFromArray([true, false, null], new A.Bool()),
    s: A.vectorFromArray(['plain', 'a,"b"\nc', null], new A.Utf8()),
    d: A.vectorFromArray([Date.UTC(2021, 5, 24), null, 0], new A.DateDay()),
    tags,
    nums,
  });
}

const SAMPLE_TYPES = [
  ['i32', 'INTEGER'],
  ['i64', 'BIGINT'],
  ['f64', 'DOUBLE'],
  ['b', 'BOOLEAN'],
  ['s', 'VARCHAR'],
  ['d', 'DATE'],
  ['tags', 'VARCHAR[]'],
  ['nums', 'BIGINT[]'],
];

const SAMPLE_ROWS = [
  [1, '9223372036854775807', 1.5, true, 'plain', '2021-06-24', ['a', 'x, y'], ['1', '2']],
  [null, '0', 'NaN', false, 'a,"b"\nc', null, [], ['9007199254740993']],
  [-3, '-1', null, null, null, '1970-01-01', null, [null]],
];

t.test('every codec: DuckDB reads the rows and types back', async (t) => {
  const stream = A.tableToIPC(sampleTable(), 'stream');
  for (const compression of COMPRESSIONS) {
    const path = duck.file(arrow2parquet(stream, { compression }));
    t.same(await duck.describe(path), SAMPLE_TYPES, `${compression}: types`);
    t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), SAMPLE_ROWS, `${compression}: rows`);
    const codec = compression === 'lz4' ? 'LZ4_RAW' : compression.toUpperCase();
    t.same(await duck.rows(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`), [[codec]], `${compression}: ${codec}`);
  }
});

t.test('an ArrayBuffer-backed view, several batches, and the file format', async (t) => {
  const batches = [sampleTable(), sampleTable()].flatMap((x) => x.batches);
  const twoBatches = A.tableToIPC(new A.Table(batches), 'stream');
  const offset = new Uint8Array(twoBatches.length + 8);
  offset.set(twoBatches, 8);
  const path = duck.file(arrow2parquet(offset.subarray(8)));
  t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet('${path}')`), [[6]], 'a view at an offset, two batches');
  const file = duck.file(arrow2parquet(A.tableToIPC(sampleTable(), 'file')));
  t.same(await duck.rows(`SELECT * FROM read_parquet('${file}')`), SAMPLE_ROWS, 'the Arrow file format (ARROW1) as well');
  const empty = duck.file(arrow2parquet(A.tableToIPC(new A.Table(sampleTable().schema), 'stream')));
  t.same(await duck.describe(empty), SAMPLE_TYPES, 'a schema without rows');
  t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet('${empty}')`), [[0]]);
});

t.test('invalid bytes: a clear Error, and parquet-wasm memory does not grow', async (t) => {
  const before = parquetWasmMemoryBytes();
  const fail = (message: string) => ['Error', `ld.arrow2parquet: ${message}`];
  t.same(
    thrown(() => arrow2parquet(new Uint8Array(0))),
    fail('the buffer is empty (expected an Arrow IPC stream)'),
  );
  t.same(
    thrown(() => arrow2parquet(Uint8Array.from({ length: 16 }, (_, i) => i + 1))),
    fail('the buffer is not a valid Arrow IPC stream (Expected to read 67305985 metadata bytes, but only read 12.)'),
  );
  t.same(
    // A continuation marker and a 2 GiB metadata length: what makes parquet-wasm grow by gigabytes.
    thrown(() => arrow2parquet(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8]))),
    fail('the buffer is not a valid Arrow IPC stream (Expected to read 2147483632 metadata bytes, but only read 8.)'),
  );
  t.same(
    thrown(() => arrow2parquet(Buffer.from('ARROW1\0\0ffffffff'))),
    fail('the buffer is not a valid Arrow IPC stream (malformed message metadata)'),
  );
  t.same(
    thrown(() => arrow2parquet(new Uint8Array(16))),
    fail('the buffer holds no Arrow schema (no columns)'),
  );
  const stream = A.tableToIPC(sampleTable(), 'stream');
  const cut = thrown(() => arrow2parquet(stream.subarray(0, stream.length - 40)));
  t.equal(cut[0], 'Error');
  t.match(cut[1], /^ld\.arrow2parquet: the buffer is not a valid Arrow IPC stream \(Expected to read \d+ bytes for message body, but only read \d+\.\)$/);
  const union = A.makeData({
    type: new A.SparseUnion([0], [new A.Field('i', new A.Int32())]),
    length: 1,
    typeIds: new Int8Array([0]),
    children: [A.makeData({ type: new A.Int32(), length: 1, data: new Int32Array([7]) })],
  });
  t.same(
    thrown(() => arrow2parquet(A.tableToIPC(new A.Table({ u: A.makeVector(union) }), 'stream'))),
    fail('column "u" holds a union (Union<Int32>), which Parquet cannot store'),
    'refused before parquet-wasm, which would panic',
  );
  const interval = A.makeVector(A.makeData({ type: new A.IntervalMonthDayNano(), length: 1, data: new Int32Array([1, 2, 3, 0]) }));
  t.same(
    thrown(() => arrow2parquet(A.tableToIPC(new A.Table({ iv: interval }), 'stream'))),
    fail('writing the Parquet file failed: NYI: Attempting to write an Arrow interval type MonthDayNano to parquet that is not yet implemented'),
  );
  t.ok(parquetWasmMemoryBytes() <= Math.max(before, 16 * 1024 * 1024), `parquet-wasm memory stays small (${parquetWasmMemoryBytes()} bytes)`);
  const path = duck.file(arrow2parquet(stream));
  t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet('${path}')`), [[3]], 'and the next conversion works');
});

t.test('wrong arguments', async (t) => {
  const message = (got: string) => ['TypeError', `ld.arrow2parquet(buffer, options?) takes Arrow IPC stream bytes (an ArrayBuffer or Uint8Array), got ${got}`];
  t.same(
    thrown(() => arrow2parquet()),
    message('undefined'),
  );
  t.same(
    thrown(() => arrow2parquet('QVJST1cx')),
    message('a string'),
  );
  t.same(
    thrown(() => arrow2parquet([1, 2, 3])),
    message('an array'),
  );
  const stream = A.tableToIPC(sampleTable(), 'stream');
  t.same(
    thrown(() => arrow2parquet(stream, { compression: 'lzo' })),
    ['RangeError', 'ld.arrow2parquet: unknown compression "lzo"; use one of uncompressed, snappy, gzip, brotli, lz4, zstd'],
  );
  t.same(
    thrown(() => FORMATS.sync!.arrow2parquet!([stream], testContext(-1))),
    ['Error', "the conversion ran past the call's time limit"],
  );
});

t.test('a large table is written chunk by chunk: parquet-wasm memory stays small', async (t) => {
  const rows = 1_000_000;
  const big = new A.Table({
    a: A.makeVector(Float64Array.from({ length: rows }, (_, i) => i * 1.5)),
    b: A.makeVector(Float64Array.from({ length: rows }, (_, i) => i / 7)),
    c: A.makeVector(BigInt64Array.from({ length: rows }, (_, i) => BigInt(i))),
  });
  const path = duck.file(arrow2parquet(A.tableToIPC(big, 'stream'), { compression: 'uncompressed' }));
  t.ok(parquetWasmMemoryBytes() < PARQUET_WASM_KEEP_BYTES, `${parquetWasmMemoryBytes()} bytes of wasm memory for a 24 MB table`);
  t.same(await duck.rows(`SELECT count(*)::INT, sum(c)::BIGINT::VARCHAR, sum(a)::DOUBLE FROM read_parquet('${path}')`), [
    [rows, String((rows * (rows - 1)) / 2), ((rows * (rows - 1)) / 2) * 1.5],
  ]);
  t.same(
    await duck.rows(`SELECT count(DISTINCT row_group_id)::INT FROM parquet_metadata('${path}')`),
    [[Math.ceil(rows / 65_536)]],
    'row groups of 65,536 rows',
  );
});

t.test('a conversion that grew parquet-wasm past the keep limit gives the instance up', async (t) => {
  // One 80 MB value: its chunk alone needs more wasm memory than is kept.
  const blob = A.makeVector(A.makeData({ type: new A.Binary(), length: 1, valueOffsets: Int32Array.from([0, 80 << 20]), data: new Uint8Array(80 << 20) }));
  const path = duck.file(arrow2parquet(A.tableToIPC(new A.Table({ blob }), 'stream')));
  t.equal(parquetWasmMemoryBytes(), 0, `over ${PARQUET_WASM_KEEP_BYTES} bytes: dropped after the call`);
  t.same(await duck.rows(`SELECT octet_length(blob)::INT FROM read_parquet('${path}')`), [[80 << 20]]);
  const again = duck.file(arrow2parquet(A.tableToIPC(sampleTable(), 'stream')));
  t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet('${again}')`), [[3]], 'a fresh instance serves the next call');
  t.ok(parquetWasmMemoryBytes() > 0 && parquetWasmMemoryBytes() < PARQUET_WASM_KEEP_BYTES, 'and stays small');
});
