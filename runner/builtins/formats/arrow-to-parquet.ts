import { type BuiltinContext, GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import type { Field, RecordBatch, Table } from 'apache-arrow';
import { checkDeadline, describeValue, FORMAT_LIMITS, libraryMessage, MiB, tooManyColumns } from './conversion-guard.js';
import { arrowLib, releaseParquetWasmIfLarge } from './format-libs.js';
import { compressionOption, type CompressionName } from './parquet-codecs.js';
import { ParquetStitcher } from './parquet-stitcher.js';
import { ParquetWriteError, writeParquetFromIpc } from './parquet-writer.js';

/**
 * `ld.arrow2parquet(buffer, options?)` → the Parquet file as a base64 string (spec "Format
 * conversions"). `buffer` holds Arrow IPC data (an ArrayBuffer or Uint8Array): the stream format
 * the spec names, and, as a convenience, the file format (`ARROW1`, Feather v2) too.
 * `options.compression` as for csv2parquet (default zstd).
 *
 * The spec's result has no `success` field, so every failure throws: a TypeError for a buffer that
 * is not bytes or bad options, a RangeError for an unknown compression, and an Error with a clear
 * message for bytes that are not Arrow IPC, a table with no columns or more than
 * FORMAT_LIMITS.maxColumns, a type Parquet cannot hold, an input over the size cap, or running past
 * the call's time limit.
 *
 * The bytes are parsed by apache-arrow first and re-encoded, chunk by chunk, before parquet-wasm sees
 * them: parquet-wasm trusts the lengths inside the stream, and 16 bytes of crafted garbage make it
 * grow its memory by gigabytes (format notes, pitfall 2), while apache-arrow refuses them cheaply.
 * Re-encoding a 100 MB stream costs about 60 ms.
 */
export const arrow2parquet: SyncBuiltin = (args, ctx) => {
  const input = args[0];
  if (!(input instanceof Uint8Array)) {
    throw new GuestFacingError(
      'TypeError',
      `ld.arrow2parquet(buffer, options?) takes Arrow IPC stream bytes (an ArrayBuffer or Uint8Array), got ${describeValue(input)}`,
    );
  }
  const compression = compressionOption('ld.arrow2parquet', args[1]);
  try {
    const parquet = arrowToParquet(input, compression, ctx);
    return Buffer.from(parquet.buffer, parquet.byteOffset, parquet.byteLength).toString('base64');
  } finally {
    releaseParquetWasmIfLarge();
  }
};

/** The conversion itself: Arrow IPC bytes → Parquet bytes; throws GuestFacingErrors. */
export function arrowToParquet(input: Uint8Array, compression: CompressionName, ctx: BuiltinContext): Uint8Array {
  const fail = (message: string) => new GuestFacingError('Error', `ld.arrow2parquet: ${message}`);
  if (input.byteLength === 0) throw fail('the buffer is empty (expected an Arrow IPC stream)');
  if (input.byteLength > FORMAT_LIMITS.maxArrowBytes) {
    throw fail(`the buffer is ${(input.byteLength / MiB).toFixed(1)} MiB, over the limit of ${FORMAT_LIMITS.maxArrowBytes / MiB} MiB`);
  }
  const A = arrowLib();
  let table: Table;
  try {
    table = A.tableFromIPC(input);
  } catch (err) {
    // apache-arrow's own messages are clear ("Expected to read … metadata bytes"); a TypeError is
    // malformed metadata tripping over its internals.
    throw fail(`the buffer is not a valid Arrow IPC stream (${err instanceof TypeError ? 'malformed message metadata' : libraryMessage(err)})`);
  }
  if (table.schema.fields.length === 0) throw fail('the buffer holds no Arrow schema (no columns)');
  const tooWide = tooManyColumns(table.schema.fields.length);
  if (tooWide) throw fail(`the table has ${tooWide}`);
  for (const field of table.schema.fields) {
    const union = findUnion(field);
    // parquet-wasm panics on a union instead of returning an error.
    if (union) throw fail(`column ${JSON.stringify(field.name)} holds a union (${union}), which Parquet cannot store`);
  }
  // Chunks of up to CHUNK_ROWS rows, each written as its own small Parquet file and joined (see
  // parquet-stitcher.ts): parquet-wasm then holds one chunk at a time, not the whole table.
  const out = new ParquetStitcher(input.byteLength);
  let chunks = 0;
  const write = (batches: RecordBatch[]) => {
    checkDeadline(ctx);
    chunks++;
    let ipc: Uint8Array;
    try {
      ipc = A.tableToIPC(new A.Table(table.schema, batches), 'stream');
    } catch (err) {
      throw fail(`the buffer is not a valid Arrow IPC stream (${libraryMessage(err)})`);
    }
    try {
      out.add(writeParquetFromIpc(ipc, compression));
    } catch (err) {
      if (err instanceof ParquetWriteError) throw fail(`writing the Parquet file failed: ${err.message}`);
      throw err;
    }
  };
  let pending: RecordBatch[] = [];
  let pendingRows = 0;
  for (const batch of table.batches) {
    for (let at = 0; at < batch.numRows; ) {
      const take = Math.min(batch.numRows - at, CHUNK_ROWS - pendingRows);
      pending.push(at === 0 && take === batch.numRows ? batch : batch.slice(at, at + take));
      pendingRows += take;
      at += take;
      if (pendingRows === CHUNK_ROWS) {
        write(pending);
        pending = [];
        pendingRows = 0;
      }
    }
  }
  // A table without rows still needs one (empty) file for its schema.
  if (pendingRows > 0 || chunks === 0) write(pending);
  return out.finish();
}

const CHUNK_ROWS = 65_536;

/** The first union type in a field's type tree, by name. */
function findUnion(field: Field): string | undefined {
  const T = arrowLib().Type;
  const id = field.type.typeId;
  if (id === T.Union || id === T.DenseUnion || id === T.SparseUnion) return String(field.type);
  for (const child of field.type.children ?? []) {
    const found = findUnion(child);
    if (found) return found;
  }
  return undefined;
}
