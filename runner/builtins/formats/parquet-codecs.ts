import { describeValue } from './conversion-guard.js';
import { parquetWasmLib } from './format-libs.js';
import { GuestFacingError } from '../guest-boundary.js';

/** The compression names of spec "Format conversions" (`options.compression`). */
export const COMPRESSIONS = ['uncompressed', 'snappy', 'gzip', 'brotli', 'lz4', 'zstd'] as const;
export type CompressionName = (typeof COMPRESSIONS)[number];

/**
 * Rows per Parquet row group. parquet-wasm's default (1,048,576) makes a 100 MB CSV a single row
 * group, which readers cannot split across threads; this is DuckDB's default.
 */
export const ROW_GROUP_ROWS = 122_880;

/**
 * Reads `options.compression` (default zstd). Name matching ignores case; `lz4_raw` is accepted as
 * an alias of `lz4`. Wrong types and unknown names are programming errors and throw.
 */
export function compressionOption(fn: string, options: unknown): CompressionName {
  if (options === undefined || options === null) return 'zstd';
  if (typeof options !== 'object' || Array.isArray(options) || options instanceof Uint8Array) {
    throw new GuestFacingError('TypeError', `${fn}: options must be an object like {compression: 'zstd'}, got ${describeValue(options)}`);
  }
  const value = (options as { compression?: unknown }).compression;
  if (value === undefined || value === null) return 'zstd';
  if (typeof value !== 'string') {
    throw new GuestFacingError('TypeError', `${fn}: options.compression must be a string, got ${describeValue(value)}`);
  }
  const name = value.toLowerCase();
  if (name === 'lz4_raw') return 'lz4';
  if ((COMPRESSIONS as readonly string[]).includes(name)) return name as CompressionName;
  throw new GuestFacingError('RangeError', `${fn}: unknown compression ${JSON.stringify(value.slice(0, 40))}; use one of ${COMPRESSIONS.join(', ')}`);
}

/**
 * parquet-wasm writer settings for a codec. `lz4` is written as LZ4_RAW: parquet-wasm's
 * `Compression.LZ4` is the legacy Hadoop framing, which DuckDB and Arrow C++ refuse to read
 * (format notes, pitfall 5); LZO is never offered because it panics inside the wasm module.
 *
 * `plainColumns` are top-level columns written without dictionary encoding. The writer tries a
 * dictionary on every column and falls back page by page once it overflows; on a column of mostly
 * distinct values that is pure cost (measured: 25–30% of the encode time on the bench CSV, and a
 * bigger file). Nested (list) columns cannot be named here: parquet-wasm takes a one-part path.
 */
export function writerProperties(compression: CompressionName, plainColumns: readonly string[] = []) {
  const pw = parquetWasmLib();
  const codec = {
    uncompressed: pw.Compression.UNCOMPRESSED,
    snappy: pw.Compression.SNAPPY,
    gzip: pw.Compression.GZIP,
    brotli: pw.Compression.BROTLI,
    lz4: pw.Compression.LZ4_RAW,
    zstd: pw.Compression.ZSTD,
  }[compression];
  let builder = new pw.WriterPropertiesBuilder().setCompression(codec).setMaxRowGroupSize(ROW_GROUP_ROWS).setCreatedBy('ldbox (parquet-wasm)');
  for (const name of plainColumns) builder = builder.setColumnDictionaryEnabled(name, false);
  return builder.build();
}
