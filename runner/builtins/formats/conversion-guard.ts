import { GuestFacingError } from '../../sandbox/guest-facing-error.js';
import type { BuiltinContext } from '../builtin.js';

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
} as const;

export const MiB = 1024 * 1024;

/**
 * A problem with the data itself (malformed CSV, bytes that are not Parquet, a size cap): the
 * functions with the spec's `{base64, success}` shape report it as `success: false`, the others
 * throw it as a guest Error. The message is shown to the user as is.
 */
export class ConversionInputError extends Error {}

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
