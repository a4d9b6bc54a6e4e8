import type { Data, Schema } from 'apache-arrow';
import { type BuiltinContext, GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import { csvCellWriter } from './arrow-csv-cells.js';
import { ffiReadable, importFfiBatch } from './arrow-ffi.js';
import { ByteWriter } from './byte-writer.js';
import { ColumnPlan, planColumn, writeRows } from './csv-rows.js';
import { checkDeadline, ConversionInputError, count, describeValue, FORMAT_LIMITS, libraryMessage, MiB } from './conversion-guard.js';
import { arrowLib, discardParquetWasm, parquetWasmLib, parquetWasmMemoryBytes, releaseParquetWasmIfLarge, type ParquetWasm } from './format-libs.js';
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
 * Failures: input that is not base64, not Parquet, corrupt or unreadable, a CSV over the output
 * cap (refused from the footer's row counts when rows × columns alone pass it), or a row group over
 * FORMAT_LIMITS.maxReadCells gives `{base64: '', success: false, error}`; an argument that is not a
 * string (or bytes) throws a TypeError, and running past the call's time limit throws an Error.
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
  /** Reads whose batches were taken from wasm memory through FFI (the others went through IPC). */
  ffiReads: number;
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
  return { rowGroups: 0, reads: 0, ffiReads: 0, batches: 0, rows: 0, csvBytes: 0, wasmBytes: 0, decodeMs: 0, ipcMs: 0, writeMs: 0 };
}

const BASE64_CHARS = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/** Strict base64 (standard or URL alphabet, whitespace allowed) to bytes. */
export function decodeBase64(s: string): Buffer {
  if (s.length > FORMAT_LIMITS.maxParquetBase64Chars) {
    throw new ConversionInputError(
      `the Parquet file is ${(s.length / MiB).toFixed(1)} MiB of base64, over the limit of ${FORMAT_LIMITS.maxParquetBase64Chars / MiB} MiB`,
    );
  }
  const fast = decodeCleanBase64(s);
  if (fast) return fast;
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

type ParquetWasmTable = ReturnType<ParquetWasm['readParquet']>;
type ParquetWasmFfiStream = ReturnType<ParquetWasmTable['intoFFI']>;

/**
 * The bytes of `s` when it is clean base64 (only alphabet characters, then at most two `=`, and a
 * length that is not truncated), else undefined, without the regular expression (~1 ns a character).
 * For ASCII text, Buffer.from skips every character outside the alphabet and stops at a `=`, so any
 * such character leaves fewer bytes than the length promises: decoding m < n characters gives fewer
 * bytes than n except when n ≡ 1 (mod 4), which the length check rules out. (Characters above
 * U+00FF would be cut to their low byte, hence the ASCII check, natively.) Anything else takes the
 * caller's character-checking path, so the results and messages are the same.
 */
function decodeCleanBase64(s: string): Buffer | undefined {
  const n = s.length;
  let pad = 0;
  while (pad < 3 && pad < n && s.charCodeAt(n - 1 - pad) === 61) pad++;
  if (pad > 2 || (pad > 0 ? n % 4 !== 0 : n % 4 === 1)) return undefined;
  if (Buffer.byteLength(s, 'utf8') !== n) return undefined;
  const bytes = Buffer.from(s, 'base64');
  return bytes.length === Math.floor(((n - pad) * 3) / 4) ? bytes : undefined;
}

/** Rows per record batch asked of parquet-wasm; fewer, larger batches decode faster. */
const BATCH_ROWS = 65_536;
/** Uncompressed bytes of row groups decoded per parquet-wasm call (a cut-down file of those row groups). */
const READ_BYTES = 4 * MiB;
const MAX_READS = 256;

/** The conversion itself: Parquet bytes → CSV bytes. Throws ConversionInputError for bad data. */
export function parquetToCsv(file: Uint8Array, ctx: BuiltinContext, stats?: ParquetConversionStats): Buffer {
  const groups = readParquetFooter(file);
  const schema = readSchema(file);
  const fields = schema.fields;
  checkShape(groups, fields.length);
  const writers = fields.map((f) => csvCellWriter(f.type, f));
  const plans = fields.map(() => new ColumnPlan());
  const ffi = ffiReadable(schema);
  const out = new ByteWriter(
    Math.max(16 * MiB, 12 * file.byteLength),
    FORMAT_LIMITS.maxCsvOutputBytes,
    `the CSV would be larger than the limit of ${FORMAT_LIMITS.maxCsvOutputBytes / MiB} MiB`,
  );
  for (let c = 0; c < fields.length; c++) {
    if (c) out.byte(44);
    const name = Buffer.from(fields[c]!.name, 'utf8');
    out.csvField(name, 0, name.length);
  }
  out.byte(10);
  if (stats) stats.rowGroups = groups.length;
  const ranges = readRanges(groups, fields.length);
  const scratch = ranges.length > 1 ? new ByteWriter(file.byteLength) : undefined;
  const write = (batch: Batch) => {
    checkDeadline(ctx);
    for (let c = 0; c < batch.columns.length; c++) planColumn(batch.columns[c]!, writers[c]!, plans[c]);
    writeRows(out, plans, batch.rows);
    out.checkLimit();
    if (stats) {
      stats.batches++;
      stats.rows += batch.rows;
    }
  };
  for (const range of ranges) {
    checkDeadline(ctx);
    const t0 = performance.now();
    const table = readRowGroups(file, range, scratch);
    const t1 = performance.now();
    let t2 = t1;
    let viaFfi: Batch[] | undefined;
    if (ffi) {
      // The batches are views into wasm memory, valid until the stream is dropped.
      const stream = ffiStream(table);
      try {
        viaFfi = importFfiBatches(stream, schema);
        t2 = performance.now();
        for (const batch of viaFfi ?? []) write(batch);
      } finally {
        stream.drop();
      }
      if (viaFfi && stats) stats.ffiReads++;
    }
    if (!viaFfi) {
      // A schema with other types, or a batch not laid out as expected (read again): the IPC way.
      const viaIpc = ipcBatches(ffi ? readRowGroups(file, range, scratch) : table);
      t2 = performance.now();
      for (const batch of viaIpc) write(batch);
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

interface Batch {
  columns: Data[];
  rows: number;
}

/** The table as an Arrow C stream in wasm memory (consumes the table). */
function ffiStream(table: ParquetWasmTable): ParquetWasmFfiStream {
  try {
    return table.intoFFI();
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
  }
}

/** The batches of an FFI stream as views into wasm memory, or undefined when one is not as expected. */
function importFfiBatches(stream: ParquetWasmFfiStream, schema: Schema): Batch[] | undefined {
  // arrayAddrs() allocates in wasm (which may grow its memory): take the memory buffer after it.
  const addrs = stream.arrayAddrs();
  const schemaAddr = stream.schemaAddr();
  const memory = parquetWasmLib().wasmMemory().buffer;
  const batches: Batch[] = [];
  for (const addr of addrs) {
    const batch = importFfiBatch(memory, addr, schemaAddr, schema);
    if (!batch) return undefined;
    batches.push(batch);
  }
  return batches;
}

/** The batches of a parquet-wasm table, through an Arrow IPC stream (consumes the table). */
function ipcBatches(table: ParquetWasmTable): Batch[] {
  let ipc: Uint8Array;
  try {
    ipc = table.intoIPCStream();
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
  }
  try {
    return arrowLib()
      .tableFromIPC(ipc)
      .batches.map((b) => ({ columns: b.data.children, rows: b.numRows }));
  } catch (err) {
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
  }
}

/**
 * The row groups `range` of the file, decoded by parquet-wasm (a table in wasm memory). parquet-wasm
 * copies the whole file it is given into wasm memory, so it is given a file cut down to those row
 * groups (parquet-stitcher.ts); if that cut file cannot be read, the whole file is read instead.
 */
function readRowGroups(file: Uint8Array, range: number[], scratch: ByteWriter | undefined): ParquetWasmTable {
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
        return parquetWasmLib().readParquet(cut, { batchSize: BATCH_ROWS });
      } catch (err) {
        if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
      }
    }
  }
  try {
    return parquetWasmLib().readParquet(file, { rowGroups: range, batchSize: BATCH_ROWS });
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) discardParquetWasm();
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(err)}`);
  }
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
    let last = err;
    if (footerOnly !== file) {
      try {
        return A.tableFromIPC(parquetWasmLib().readSchema(file).intoIPCStream()).schema;
      } catch (again) {
        last = again;
      }
    }
    throw new ConversionInputError(`the Parquet file could not be read: ${libraryMessage(last)}`);
  }
}

/**
 * Refuses, from the footer's row counts and before anything is decoded, a file whose CSV could not
 * fit the output cap (every cell is at least one byte: its `,` or line break) or with a row group
 * over FORMAT_LIMITS.maxReadCells (decoded in one uninterruptible step).
 */
function checkShape(groups: readonly RowGroupInfo[], columns: number): void {
  const rows = groups.reduce((sum, g) => sum + Math.max(0, g.rows), 0);
  const cap = FORMAT_LIMITS.maxCsvOutputBytes;
  if (rows * columns > cap) {
    throw new ConversionInputError(
      `the CSV would be larger than the limit of ${cap / MiB} MiB: the file holds ${count(rows)} rows × ${count(columns)} columns ` +
        `(${count(rows * columns)} cells, each at least one byte of CSV); convert the data in smaller parts`,
    );
  }
  const widest = groups.reduce((max, g) => Math.max(max, g.rows), 0);
  if (widest * columns > FORMAT_LIMITS.maxReadCells) {
    throw new ConversionInputError(
      `a row group of the file holds ${count(widest)} rows × ${count(columns)} column${columns === 1 ? '' : 's'}, over the limit of ` +
        `${count(FORMAT_LIMITS.maxReadCells)} cells per row group; write the file with smaller row groups`,
    );
  }
}

/**
 * Consecutive row groups read per parquet-wasm call: up to READ_BYTES (uncompressed, as the footer
 * says) and FORMAT_LIMITS.maxReadCells each, at most MAX_READS calls unless the cells forbid it.
 */
function readRanges(groups: RowGroupInfo[], columns: number): number[][] {
  const minPerRead = Math.ceil(groups.length / MAX_READS);
  const ranges: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  let cells = 0;
  for (let g = 0; g < groups.length; g++) {
    const groupCells = groups[g]!.rows * columns;
    const fullByBytes = current.length >= minPerRead && bytes + groups[g]!.bytes > READ_BYTES;
    if (current.length > 0 && (fullByBytes || cells + groupCells > FORMAT_LIMITS.maxReadCells)) {
      ranges.push(current);
      current = [];
      bytes = 0;
      cells = 0;
    }
    current.push(g);
    bytes += groups[g]!.bytes;
    cells += groupCells;
  }
  if (current.length) ranges.push(current);
  return ranges;
}
