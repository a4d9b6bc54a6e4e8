import { type BuiltinContext, GuestFacingError } from '../guest-boundary.js';

/** Limits of the format conversions (spec "Format conversions"); see the README section on formats. */
export const FORMAT_LIMITS = {
  /** Largest csvText (in UTF-16 code units, i.e. JS string length) csv2parquet accepts. */
  maxCsvChars: 256 * 1024 * 1024,
  /** Largest Parquet file parquet2csv accepts, as base64 text. */
  maxParquetBase64Chars: 256 * 1024 * 1024,
  /** Largest CSV parquet2csv produces, in bytes (its base64 must stay under V8's string limit). */
  maxCsvOutputBytes: 256 * 1024 * 1024,
  /** Largest Arrow IPC buffer arrow2parquet accepts, in bytes. */
  maxArrowBytes: 256 * 1024 * 1024,
  /** Largest CSV json2csv produces, in characters. */
  maxJsonCsvChars: 256 * 1024 * 1024,
  /**
   * Most columns csv2parquet and arrow2parquet write. parquet-wasm's writer costs about 1 ms per
   * column per chunk (zstd), in one step that cannot be interrupted, and past ~1,500 columns a
   * chunk took 3–30 s here (2,000 columns of one row: 20–27 s, mostly garbage collection).
   */
  maxColumns: 1024,
  /**
   * Most cells (rows × columns, empty ones included) json2csv writes. The shape is known before
   * any output is built (the objects' count × the union of their keys), so a small
   * input that declares a huge table (5,000 objects with 5,000 distinct keys: 70 KB of JSON,
   * 25 million cells) is refused before the host allocates for it. 16 Mi cells are at least 16 MiB
   * of CSV (json2csv of 4,096 × 4,096 mostly empty cells: 0.2 s, 130 MiB RSS).
   */
  maxCells: 16 * 1024 * 1024,
  /**
   * Most cells parquet2csv has parquet-wasm decode in one read (one row group, or several small
   * ones), a step that cannot be interrupted and whose memory wasm keeps: 64 Mi cells is pyarrow's
   * default row group (1 Mi rows) of 64 columns, ~0.5 GiB of int64 values. The row counts come from
   * the footer, so a tiny file that declares billions of rows (all one value, run-length encoded)
   * is refused before it is decoded.
   */
  maxReadCells: 64 * 1024 * 1024,
} as const;

export const MiB = 1024 * 1024;

/**
 * A problem with the data itself (malformed CSV, bytes that are not Parquet, a size cap): the
 * functions with the spec's `{base64, success}` shape report it as `success: false`, the others
 * throw it as a guest Error. The message is shown to the user as is.
 */
export class ConversionInputError extends Error {
  override readonly name = 'ConversionInputError';
}

/**
 * Stops a conversion that ran past its call's deadline or whose call was cancelled. Conversions are
 * synchronous and call this between chunks of work, so a huge input overruns the call's time limit
 * by at most one chunk (plus one opaque parquet-wasm step, which cannot be interrupted).
 */
export function checkDeadline(ctx: BuiltinContext): void {
  if (performance.now() > ctx.deadline) {
    throw new GuestFacingError('Error', "the conversion ran past the call's time limit");
  }
  if (ctx.signal.aborted) throw new GuestFacingError('Error', 'the call was cancelled during the conversion');
}

/** `n` with thousands separators, for messages (`25,000,000`). */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * Why a table of `rows` × `columns` is over FORMAT_LIMITS.maxCells (with what to do about it), or
 * undefined when it is within the limit.
 */
export function tooManyCells(rows: number, columns: number): string | undefined {
  const cells = rows * columns;
  if (cells <= FORMAT_LIMITS.maxCells) return undefined;
  return (
    `${count(rows)} rows × ${count(columns)} columns is ${count(cells)} cells, over the limit of ` +
    `${count(FORMAT_LIMITS.maxCells)} cells per call; convert the data in smaller parts`
  );
}

/** Why `columns` columns are over FORMAT_LIMITS.maxColumns (with what to do about it), or undefined. */
export function tooManyColumns(columns: number): string | undefined {
  if (columns <= FORMAT_LIMITS.maxColumns) return undefined;
  return `${count(columns)} columns, over the limit of ${count(FORMAT_LIMITS.maxColumns)}; split the columns over several files`;
}

/** How a value is named in an error message ("a number", "null", "an array"). */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  const t = typeof v;
  return t === 'object' ? 'an object' : `a ${t}`;
}

/** A message from a library (parquet-wasm, apache-arrow), cut to a readable length. */
export function libraryMessage(err: unknown): string {
  const raw = err instanceof Error ? err.message : typeof err === 'string' ? err : String(err);
  const oneLine = raw.replace(/\s+/g, ' ').trim();
  return oneLine.length > 300 ? `${oneLine.slice(0, 300)}…` : oneLine || 'unknown error';
}
