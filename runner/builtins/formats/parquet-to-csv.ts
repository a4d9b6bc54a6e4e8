import type { Data, Schema } from 'apache-arrow';
import { GuestFacingError } from '../../sandbox/guest-facing-error.js';
import type { BuiltinContext, SyncBuiltin } from '../builtin.js';
import { csvCellWriter, isValid, type CellWriter } from './arrow-csv-cells.js';
import { ByteWriter } from './byte-writer.js';
import { checkDeadline, ConversionInputError, describeValue, FORMAT_LIMITS, libraryMessage, MiB } from './conversion-guard.js';
import { arrowLib, discardParquetWasm, parquetWasmLib, parquetWasmMemoryBytes, releaseParquetWasmIfLarge } from './format-libs.js';
import { readParquetFooter, type RowGroupInfo } from './parquet-footer.js';
import { ParquetStitcher } from './parquet-stitcher.js';

/**
 * `ld.parquet2csv(base64Parquet)` → `{base64, success}`: the CSV, base64-encoded (spec "Format
 * conversions"). Any Parquet file parquet-wasm reads is accepted (written by csv2parquet, DuckDB,
 * pyarrow, …); every Arrow type has a text form, see arrow-csv-cells.ts: nulls are empty cells, list
 * columns are written back as bracketed lists (`[1, 2]`, `["a", "b"]`, which csv2parquet reads back as
 * lists), timestamps as ISO 8601. The CSV has a header row, `,` between fields, `\n` after every
 * record, and quotes only the fields that need it.
 *
 * Failures: input that is not base64, not Parquet, corrupt or unreadable, or a CSV over the output
 * cap gives `{base64: '', success: false, error}`; an argument that is not a string (or bytes)
 * throws a TypeError, and running past the call's time limit throws an Error.
 *
 * The file is decoded a few row groups at a time, and each record batch is written straight into one
 * byte buffer, so the decoded Arrow data of the whole file never sits in memory at once.
 */
export const parquet2csv: SyncBuiltin = (args, ctx) => {
  const input = args[0];
  if (typeof input !== 'string' && !(input instanceof Uint8Array)) {
    throw new GuestFacingError('TypeError', `ld.parquet2csv(base64Parquet) takes the Parquet file as a base64 string, got ${describeValue(input)}`);
  }
  try {
    const file = typeof input === 'string' ? decodeBase64(input) : input;
    const csv = parquetToCsv(file, ctx);
    return { base64: csv.toString('base64'), success: true };
  } catch (err) {
    if (err instanceof ConversionInputError) return { base64: '', success: false, error: err.message };
    throw err;
  } finally {
    releaseParquetWasmIfLarge();
  }
};

/** What a conversion did, for the bench and the tests. */
export interface ParquetConversionStats {
  rowGroups: number;
  reads: number;
  batches: number;
  rows: number;
  csvBytes: number;
  wasmBytes: number;
  /** Milliseconds in parquet-wasm (decode + IPC out), apache-arrow (IPC in), and writing CSV. */
  decodeMs: number;
  ipcMs: number;
  writeMs: number;
}

export function emptyParquetStats(): ParquetConversionStats {
  return { rowGroups: 0, reads: 0, batches: 0, rows: 0, csvBytes: 0, wasmBytes: 0, decodeMs: 0, ipcMs: 0, writeMs: 0 };
}

const BASE64_CHARS = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/** Strict base64 (standard or URL alphabet, whitespace allowed) to bytes. */
export function decodeBase64(s: string): Buffer {
  if (s.length > FORMAT_LIMITS.maxParquetBase64Chars) {
    throw new ConversionInputError(`the Parquet file is ${(s.length / MiB).toFixed(1)} MiB of base64, over the limit of ${FORMAT_LIMITS.maxParquetBase64Chars / MiB} MiB`);
  }
  // Buffer.from skips characters outside the alphabet silently: check them first (~1 ms per MB).
  let clean = s;
  if (!BASE64_CHARS.test(clean)) {
    clean = s.replace(/\s+/g, '');
    if (!BASE64_CHARS.test(clean)) throw new ConversionInputError('the input is not valid base64');
  }
  const padded = clean.endsWith('=');
  if (padded ? clean.length % 4 !== 0 : clean.length % 4 === 1) {
    throw new ConversionInputError(padded ? 'the input is not valid base64' : 'the input is not valid base64 (truncated)');
  }
  return Buffer.from(clean, 'base64');
}

/** Rows per record batch asked of parquet-wasm; fewer, larger batches decode faster. */
const BATCH_ROWS = 65_536;
/** Uncompressed bytes of row groups decoded per parquet-wasm call (a cut-down file of those row groups). */
const READ_BYTES = 4 * MiB;
const MAX_READS = 256;

/** The conversion itself: Parquet bytes → CSV bytes. Throws ConversionInputError for bad data. */
export function parquetToCsv(file: Uint8Array, ctx: BuiltinContext, stats?: ParquetConversionStats): Buffer {
  const groups = readParquetFooter(file);
  const A = arrowLib();
  const schema = readSchema(file);
  const fields = schema.fields;
  const writers = fields.map((f) => csvCellWriter(f.type, f));
  const out = new ByteWriter(Math.max(16 * MiB, 12 * file.byteLength), FORMAT_LIMITS.maxCsvOutputBytes, `the CSV would be larger than the limit of ${FORMAT_LIMITS.maxCsvOutputBytes / MiB} MiB`);
  for (let c = 0; c < fields.length; c++) {
    if (c) out.byte(44);
    const name = Buffer.from(fields[c]!.name, 'utf8');
    out.csvField(name, 0, name.length);
  }
  out.byte(10);
  if (stats) stats.rowGroups = groups.length;
  const ranges = readRanges(groups);
  const scratch = ranges.length > 1 ? new ByteWriter(file.byteLength) : undefined;
  for (const range of ranges) {
    checkDeadline(ctx);
    const t0 = performance.now();
    let ipc: Uint8Array;
    try {
      ipc = readRowGroups(file, range, scratch);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
      throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
    }
    const t1 = performance.now();
    let batches: Iterable<{ numRows: number; data: Data }>;
    try {
      batches = A.tableFromIPC(ipc).batches;
    } catch (err) {
      throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
    }
    const t2 = performance.now();
    for (const batch of batches) {
      checkDeadline(ctx);
      writeBatch(out, batch.data.children, batch.numRows, writers);
      out.checkLimit();
      if (stats) {
        stats.batches++;
        stats.rows += batch.numRows;
      }
    }
    if (stats) {
      stats.reads++;
      stats.decodeMs += t1 - t0;
      stats.ipcMs += t2 - t1;
      stats.writeMs += performance.now() - t2;
    }
  }
  if (stats) {
    stats.csvBytes = out.pos;
    stats.wasmBytes = parquetWasmMemoryBytes();
  }
  return out.bytes();
}

/**
 * The row groups `range` of the file, decoded by parquet-wasm, as an Arrow IPC stream. parquet-wasm
 * copies the whole file it is given into wasm memory, so it is given a file cut down to those row
 * groups (parquet-stitcher.ts); if that cut file cannot be read, the whole file is read instead.
 */
function readRowGroups(file: Uint8Array, range: number[], scratch: ByteWriter | undefined): Uint8Array {
  const pw = parquetWasmLib();
  if (scratch) {
    let cut: Uint8Array | undefined;
    try {
      const s = new ParquetStitcher(0, scratch);
      s.add(file, range);
      cut = s.finish();
    } catch {
      cut = undefined;
    }
    if (cut) {
      try {
        return pw.readParquet(cut, { batchSize: BATCH_ROWS }).intoIPCStream();
      } catch (err) {
        if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
      }
    }
  }
  return parquetWasmLib().readParquet(file, { rowGroups: range, batchSize: BATCH_ROWS }).intoIPCStream();
}

/**
 * The Arrow schema of the file, as parquet-wasm maps it, read from the file cut down to its footer
 * (the whole file would be copied into wasm memory, and the hole it leaves there fragments it).
 */
function readSchema(file: Uint8Array): Schema {
  const A = arrowLib();
  const pw = parquetWasmLib();
  let footerOnly: Uint8Array = file;
  try {
    const s = new ParquetStitcher(0);
    s.add(file, []);
    footerOnly = s.finish();
  } catch {
    // Read the schema from the whole file.
  }
  try {
    return A.tableFromIPC(pw.readSchema(footerOnly).intoIPCStream()).schema;
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
    if (footerOnly !== file) {
      try {
        return A.tableFromIPC(parquetWasmLib().readSchema(file).intoIPCStream()).schema;
      } catch (again) {
        err = again;
      }
    }
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
  }
}

/** Consecutive row groups read per parquet-wasm call: up to READ_BYTES each, at most MAX_READS calls. */
function readRanges(groups: RowGroupInfo[]): number[][] {
  const minPerRead = Math.ceil(groups.length / MAX_READS);
  const ranges: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  for (let g = 0; g < groups.length; g++) {
    if (current.length >= minPerRead && bytes + groups[g]!.bytes > READ_BYTES) {
      ranges.push(current);
      current = [];
      bytes = 0;
    }
    current.push(g);
    bytes += groups[g]!.bytes;
  }
  if (current.length) ranges.push(current);
  return ranges;
}

function writeBatch(out: ByteWriter, columns: Data[], rows: number, writers: CellWriter[]): void {
  const ncols = columns.length;
  // A lone empty field would make a blank line, which CSV readers skip: a single-column null is `""`.
  const single = ncols === 1;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < ncols; c++) {
      if (c) out.byte(44);
      const col = columns[c]!;
      if (isValid(col, r)) writers[c]!(out, col, r);
      else if (single) out.ascii('""');
    }
    out.byte(10);
  }
}
