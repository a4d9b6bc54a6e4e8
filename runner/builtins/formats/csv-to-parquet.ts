import type { Field, RecordBatch } from 'apache-arrow';
import { type BuiltinContext, GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import { arrowType, BLOCK_ROWS, ChunkArena, ChunkBuilder } from './column-builders.js';
import { classifyColumn, type ColumnType, kindOf, T_DATE, T_FLOAT, T_INT, T_NULL, T_STRING, T_TIMESTAMP, typeName, writtenType } from './column-types.js';
import { checkDeadline, ConversionInputError, describeValue, FORMAT_LIMITS, MiB, tooManyColumns } from './conversion-guard.js';
import { type CsvDialect, csv2parquetOptions, DEFAULT_DIALECT, otherDelimiterHint } from './csv-dialect.js';
import { CsvTokenizer } from './csv-tokenizer.js';
import { arrowLib, parquetWasmMemoryBytes, releaseParquetWasmIfLarge } from './format-libs.js';
import { IpcChunkEncoder } from './ipc-chunk-encoder.js';
import { ParquetStitcher } from './parquet-stitcher.js';
import type { CompressionName } from './parquet-codecs.js';
import { ParquetWriteError, writeParquetFromIpc } from './parquet-writer.js';

/**
 * `ld.csv2parquet(csvText, options?)` → `{base64, success}` (spec "Format conversions").
 *
 * - `csvText`: the CSV as a string (UTF-8 bytes are accepted too); the first record is the header.
 *   Empty header names become `column<i>` (0-based position) and repeated ones get `_1`, `_2`, …
 * - `options.compression`: uncompressed, snappy, gzip, brotli, lz4 (written as LZ4_RAW), zstd (default).
 * - `options.delimiter` (one character, `,` by default), `options.comment` (a prefix: lines that start
 *   with it are skipped), `options.padShortRows` (short records get nulls), `options.inferDates`
 *   (default true; false keeps dates and timestamps as text): see csv-dialect.ts.
 * - Each column gets the narrowest of int64, float64, boolean, date32, timestamp, string, list<…>
 *   that fits every cell (see column-types.ts); bracketed list cells (`[1, 2]`, `["a", "b"]`) become
 *   Parquet LIST columns; ISO dates (`2024-02-29`) DATE columns and ISO date-times TIMESTAMP
 *   columns (µs, or ns for finer fractions; UTC when the cells carry a zone); empty cells are nulls.
 *   The CSV dialect is described in csv-tokenizer.ts.
 *
 * Failures: data that cannot be converted (malformed CSV, a ragged row, no header, a one-column
 * header that holds another usual delimiter, over the size cap, more than FORMAT_LIMITS.maxColumns
 * columns) gives `{base64: '', success: false, error}`; calling it wrong (csvText not a string,
 * options not an object, an unknown option, an option of the wrong type or out of range) throws a
 * TypeError / RangeError, and running past the call's time limit throws an Error.
 *
 * Round trips keep the column types csv2parquet writes: parquet2csv writes every value so that this
 * function reads it back as the same type and value (a whole float as `1.0`, int64 exactly, lists as
 * bracketed lists, dates and timestamps as ISO 8601 with their full fraction; see arrow-csv-cells.ts). Test: test/builtins/formats/round-trip-types.test.ts.
 *
 * The CSV is read in chunks of at most CHUNK_ROWS rows: each chunk is typed, built straight into
 * Arrow arrays and written as one Parquet row group at once, so only one chunk is alive. Column types
 * are inferred on the first chunk; when a later chunk needs a wider type (say a text cell in an
 * integer column), the rest of the CSV is only classified, and the conversion restarts once with
 * the final types.
 */
export const csv2parquet: SyncBuiltin = (args, ctx) => {
  const input = args[0];
  if (typeof input !== 'string' && !(input instanceof Uint8Array)) {
    throw new GuestFacingError('TypeError', `ld.csv2parquet(csvText, options?) takes the CSV as a string, got ${describeValue(input)}`);
  }
  const { compression, dialect, inferDates } = csv2parquetOptions(args[1]);
  try {
    const text = csvText(input);
    const parquet = csvToParquet(text, compression, ctx, undefined, dialect, inferDates);
    return { base64: Buffer.from(parquet.buffer, parquet.byteOffset, parquet.byteLength).toString('base64'), success: true };
  } catch (err) {
    if (err instanceof ConversionInputError) return { base64: '', success: false, error: err.message };
    throw err;
  } finally {
    releaseParquetWasmIfLarge();
  }
};

/** Rows per chunk (one Arrow record batch), and cells per chunk for wide CSVs. */
const CHUNK_ROWS = 16_384;
const CHUNK_CELLS = 1 << 20;

/** What a conversion did, for the bench and the tests. */
export interface CsvConversionStats {
  rows: number;
  columns: number;
  chunks: number;
  /** 1 when a later chunk widened a column type and the conversion ran again with the final types. */
  restarts: number;
  types: string[];
  ipcBytes: number;
  /** Columns written without dictionary encoding (mostly distinct values). */
  plainColumns: string[];
  /** parquet-wasm memory after writing (before any release). */
  wasmBytes: number;
  /** Milliseconds: tokenizing, typing, building Arrow arrays and IPC, joining files; in parquet-wasm (IPC in, encode, compress). */
  buildMs: number;
  parquetMs: number;
}

/** The CSV text of the argument; UTF-8 bytes are decoded (after the size check). */
function csvText(input: string | Uint8Array): string {
  if (typeof input === 'string') return input;
  if (input.byteLength > FORMAT_LIMITS.maxCsvChars) throw new ConversionInputError(tooLarge(input.byteLength));
  return Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('utf8');
}

function tooLarge(size: number): string {
  return `the CSV is ${(size / MiB).toFixed(1)} MiB, over the limit of ${FORMAT_LIMITS.maxCsvChars / MiB} MiB`;
}

/** The conversion itself: CSV text → Parquet bytes. Throws ConversionInputError for bad data. */
export function csvToParquet(
  text: string,
  compression: CompressionName,
  ctx: BuiltinContext,
  stats?: CsvConversionStats,
  dialect: CsvDialect = DEFAULT_DIALECT,
  inferDates = true,
): Uint8Array {
  if (text.length > FORMAT_LIMITS.maxCsvChars) throw new ConversionInputError(tooLarge(text.length));
  const t0 = performance.now();
  const timing = { parquetMs: 0, ipcBytes: 0 };
  let encoded = encodeCsv(text, dialect, inferDates, ctx, compression, undefined, timing, stats);
  if (Array.isArray(encoded)) {
    if (stats) stats.restarts++;
    encoded = encodeCsv(text, dialect, inferDates, ctx, compression, encoded, timing, stats);
    if (Array.isArray(encoded)) throw new Error('csv2parquet: the column types changed after the final typing pass');
  }
  if (stats) {
    stats.ipcBytes = timing.ipcBytes;
    stats.wasmBytes = parquetWasmMemoryBytes();
    stats.parquetMs += timing.parquetMs;
    stats.buildMs += performance.now() - t0 - timing.parquetMs;
  }
  return encoded;
}

export function emptyStats(): CsvConversionStats {
  return { rows: 0, columns: 0, chunks: 0, restarts: 0, types: [], ipcBytes: 0, plainColumns: [], wasmBytes: 0, buildMs: 0, parquetMs: 0 };
}

/**
 * One pass over the CSV. Each chunk of rows becomes a record batch, is written by parquet-wasm as a
 * small Parquet file of one row group, and joined onto the output (see parquet-stitcher.ts), so
 * neither JS nor wasm memory holds more than one chunk's Arrow data. Returns the Parquet file, or,
 * when a chunk needed a wider type than the chunks already written, the final types of every column
 * (the caller runs again with them).
 */
function encodeCsv(
  text: string,
  dialect: CsvDialect,
  inferDates: boolean,
  ctx: BuiltinContext,
  compression: CompressionName,
  fixed: ColumnType[] | undefined,
  timing: { parquetMs: number; ipcBytes: number },
  stats?: CsvConversionStats,
): Uint8Array | ColumnType[] {
  const A = arrowLib();
  const tok = new CsvTokenizer(text, dialect);
  const header = tok.readHeader(CHUNK_CELLS, CHUNK_ROWS);
  if (!header) throw new ConversionInputError('the CSV is empty: it needs at least a header row');
  if (header.length === 1 && !tok.headerQuoted) {
    const hint = otherDelimiterHint(header[0]!, dialect.delimiter);
    if (hint) throw new ConversionInputError(hint);
  }
  const ncols = header.length;
  const tooWide = tooManyColumns(ncols);
  if (tooWide) throw new ConversionInputError(`the CSV has ${tooWide}`);
  const names = uniqueNames(header);
  let n = tok.nextChunk();
  const types: ColumnType[] = fixed ? fixed.slice() : header.map(() => T_NULL);
  if (!fixed) for (let c = 0; c < ncols; c++) types[c] = classifyColumn(tok, c, n, T_NULL, inferDates);
  const plainColumns = names.filter((_, c) => mostlyDistinct(tok, c, n, types[c]!));
  const fields = names.map((name, c) => new A.Field(name, arrowType(writtenType(types[c]!)), true) as Field);
  const schema = new A.Schema(fields);
  const struct = new A.Struct(fields);
  // Compressed Parquet is usually well under the CSV's size; untouched reserved pages cost nothing.
  const out = new ParquetStitcher(Math.min(text.length, 512 * MiB));
  const arena = new ChunkArena();
  const encoder = new IpcChunkEncoder(schema);
  const write = (batch: RecordBatch | undefined) => {
    const ipc = batch ? encoder.encode(batch) : A.tableToIPC(new A.Table(schema), 'stream');
    const t = performance.now();
    out.add(writeChunk(ipc, compression, plainColumns));
    timing.parquetMs += performance.now() - t;
    timing.ipcBytes += ipc.byteLength;
  };
  let rows = 0;
  let chunks = 0;
  const cap = tok.chunkRows;
  // The first chunk was read whole (to type the columns); the next ones are read a block of rows at
  // a time, each block built while its text is still in the CPU cache (see BLOCK_ROWS).
  while (n > 0) {
    checkDeadline(ctx);
    const chunk = new ChunkBuilder(tok, types, arena);
    for (;;) {
      if (!chunk.buildTo(n)) return finalTypes(tok, types, n, ctx, inferDates);
      if (n === cap) break;
      const more = tok.readRows(n, Math.min(cap, n + BLOCK_ROWS));
      if (more === n) break;
      n = more;
    }
    write(new A.RecordBatch(schema, A.makeData({ type: struct, length: n, nullCount: 0, children: chunk.finish(n) })));
    rows += n;
    chunks++;
    n = tok.readRows(0, Math.min(cap, BLOCK_ROWS));
  }
  // A header without rows: one empty file gives the schema.
  if (chunks === 0) write(undefined);
  if (stats) {
    stats.rows = rows;
    stats.columns = ncols;
    stats.chunks = chunks;
    stats.types = types.map((t) => typeName(writtenType(t)));
    stats.plainColumns = plainColumns;
  }
  return out.finish();
}

function writeChunk(ipc: Uint8Array, compression: CompressionName, plainColumns: string[]): Uint8Array {
  try {
    return writeParquetFromIpc(ipc, compression, plainColumns);
  } catch (err) {
    if (err instanceof ParquetWriteError) throw new ConversionInputError(`writing the Parquet file failed: ${err.message}`);
    throw err;
  }
}

/**
 * Whether a scalar column has so many distinct values that dictionary encoding would only cost time
 * (see writerProperties): more than a quarter of a row group's rows. The distinct count D is
 * estimated from up to 4096 cells spread over the first chunk: drawing s values from D equally
 * frequent ones gives about D·(1 − e^(−s/D)) distinct ones, solved for D.
 */
function mostlyDistinct(tok: CsvTokenizer, col: number, n: number, type: ColumnType): boolean {
  const k = kindOf(type);
  if (k !== T_INT && k !== T_FLOAT && k !== T_STRING && k !== T_TIMESTAMP && k !== T_DATE) return false;
  const base = col * tok.chunkRows;
  const step = Math.max(1, Math.floor(n / 4096));
  const seen = new Set<string>();
  let sampled = 0;
  for (let r = 0; r < n && sampled < 4096; r += step) {
    const a = tok.starts[base + r]!;
    const b = tok.ends[base + r]!;
    if (a === b) continue;
    sampled++;
    seen.add(tok.text.slice(a, Math.min(b, a + 48)));
  }
  if (sampled < 256) return false;
  const d = seen.size;
  if (d >= sampled - 1) return true;
  let lo = d;
  let hi = 1e12;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (mid * (1 - Math.exp(-sampled / mid)) < d) lo = mid;
    else hi = mid;
  }
  return lo > n / 4;
}

/** Classifies the current chunk and every remaining one: the types the whole CSV needs. */
function finalTypes(tok: CsvTokenizer, types: ColumnType[], n: number, ctx: BuiltinContext, inferDates: boolean): ColumnType[] {
  const out = types.slice();
  while (n > 0) {
    checkDeadline(ctx);
    for (let c = 0; c < out.length; c++) if (out[c] !== T_STRING) out[c] = classifyColumn(tok, c, n, out[c]!, inferDates);
    n = tok.nextChunk();
  }
  return out;
}

/** Header names made usable as Arrow/Parquet field names: none empty, none repeated. */
export function uniqueNames(header: string[]): string[] {
  const taken = new Set<string>();
  const wanted = header.map((h, i) => (h === '' ? `column${i}` : h));
  const counts = new Map<string, number>();
  for (const w of wanted) counts.set(w, (counts.get(w) ?? 0) + 1);
  // The next suffix to try per repeated name: starting from 1 each time made a header of n equal
  // names cost n² (20,000 × `a`: 13 s).
  const nextSuffix = new Map<string, number>();
  const out: string[] = [];
  for (const w of wanted) {
    let name = w;
    if (taken.has(name)) {
      let k = nextSuffix.get(w) ?? 1;
      while (taken.has(`${w}_${k}`) || (counts.get(`${w}_${k}`) ?? 0) > 0) k++;
      nextSuffix.set(w, k + 1);
      name = `${w}_${k}`;
    }
    taken.add(name);
    out.push(name);
  }
  return out;
}
