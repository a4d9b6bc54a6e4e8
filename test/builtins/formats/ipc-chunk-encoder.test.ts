/**
 * IpcChunkEncoder (runner/builtins/formats/ipc-chunk-encoder.ts) writes the same bytes as
 * apache-arrow's tableToIPC for a one-batch table, batch after batch into its reused buffer.
 */
import t from 'tap';
import { arrowLib } from '../../../runner/builtins/formats/format-libs.js';
import { IpcChunkEncoder } from '../../../runner/builtins/formats/ipc-chunk-encoder.js';

t.test('same bytes as tableToIPC, for every batch in turn', async (t) => {
  const A = arrowLib();
  const schema = new A.Schema([
    new A.Field('i', new A.Int64(), true),
    new A.Field('s', new A.Utf8(), true),
    new A.Field('b', new A.Bool(), true),
    new A.Field('l', new A.List(new A.Field('item', new A.Float64(), true)), true),
  ]);
  const encoder = new IpcChunkEncoder(schema);
  for (const rows of [3, 1000, 1, 17]) {
    const table = new A.Table({
      i: A.vectorFromArray(
        Array.from({ length: rows }, (_, k) => (k % 5 === 0 ? null : BigInt(k))),
        new A.Int64(),
      ),
      s: A.vectorFromArray(
        Array.from({ length: rows }, (_, k) => (k % 3 === 0 ? null : `v${k}`.repeat(k % 4))),
        new A.Utf8(),
      ),
      b: A.vectorFromArray(
        Array.from({ length: rows }, (_, k) => k % 2 === 0),
        new A.Bool(),
      ),
      l: A.vectorFromArray(
        Array.from({ length: rows }, (_, k) => (k % 7 === 0 ? null : [k / 2, k])),
        new A.List(new A.Field('item', new A.Float64(), true)),
      ),
    });
    const batch = new A.RecordBatch(schema, table.batches[0]!.data);
    const expected = A.tableToIPC(new A.Table(schema, [batch]), 'stream');
    t.same(Buffer.from(encoder.encode(batch)), Buffer.from(expected), `${rows} rows`);
  }
});
