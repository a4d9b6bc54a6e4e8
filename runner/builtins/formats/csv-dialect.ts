import { GuestFacingError } from '../guest-boundary.js';
import { describeValue } from './conversion-guard.js';
import { type CompressionName, compressionOption } from './parquet-codecs.js';

/**
 * The CSV dialect options of `ld.csv2parquet(csvText, options?)` (spec "Format conversions"), checked
 * once with an exact message per rule (test/builtins/formats/csv-dialect-options.test.ts):
 *
 * - `delimiter`: one character (`,` by default; `'\t'`, `;`, `|`, …). Not `"` (it quotes fields), not
 *   a line break, not half of a surrogate pair (it would split characters).
 * - `comment`: a prefix of 1–16 characters; a line that starts with it (at the start of a record, not
 *   inside a quoted field) is skipped, before the header too. Unlike DuckDB's and pandas' `comment`,
 *   text after the prefix in the middle of a line is data: a `#` inside a cell is common in real text.
 *   It may not start with `"` or the delimiter, nor hold a line break.
 * - `padShortRows`: a record with fewer fields than the header gets nulls for the missing ones. Off
 *   by default, as in DuckDB (`null_padding = false`: a short row is an error) and unlike pandas
 *   (which pads): a short row is often a sign of a wrong delimiter or a broken export, and padding it
 *   silently would hide that. A record with more fields than the header is always refused.
 * - `inferDates` (default true): columns of ISO dates / date-times become date32 / timestamp columns
 *   (column-types.ts). `false` keeps them as text, as csv2parquet did before it inferred them.
 *
 * Wrong types are TypeErrors, values out of range RangeErrors, and an unknown option name is a
 * TypeError that lists the names (a misspelt `delimeter` would otherwise be ignored silently).
 */
export interface CsvDialect {
  delimiter: string;
  comment: string | undefined;
  padShortRows: boolean;
}

export const DEFAULT_DIALECT: CsvDialect = { delimiter: ',', comment: undefined, padShortRows: false };

export interface Csv2ParquetOptions {
  compression: CompressionName;
  dialect: CsvDialect;
  /** Whether date and date-time columns are typed (else they are text). */
  inferDates: boolean;
}

const FN = 'ld.csv2parquet';
const OPTION_NAMES = ['compression', 'delimiter', 'comment', 'padShortRows', 'inferDates'];
/** Longest comment prefix: real ones are `#`, `//`, `--`, `%`; a longer one is a mistake. */
export const MAX_COMMENT_CHARS = 16;

/** Reads csv2parquet's `options` argument; throws a GuestFacingError naming the first problem. */
export function csv2parquetOptions(options: unknown): Csv2ParquetOptions {
  const compression = compressionOption(FN, options);
  if (options === undefined || options === null) return { compression, dialect: DEFAULT_DIALECT, inferDates: true };
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!OPTION_NAMES.includes(key)) {
      throw new GuestFacingError('TypeError', `${FN}: unknown option ${shown(key)} (the options are ${OPTION_NAMES.join(', ')})`);
    }
  }
  const delimiter = readDelimiter(o['delimiter']);
  const comment = readComment(o['comment'], delimiter);
  const padShortRows = readFlag('padShortRows', o['padShortRows'], false);
  const inferDates = readFlag('inferDates', o['inferDates'], true);
  return { compression, dialect: { delimiter, comment, padShortRows }, inferDates };
}

function readDelimiter(v: unknown): string {
  if (v === undefined || v === null) return ',';
  if (typeof v !== 'string') {
    throw new GuestFacingError('TypeError', `${FN}: options.delimiter must be a one-character string such as ',', ';', '|' or '\\t', got ${describeValue(v)}`);
  }
  if (v.length !== 1) {
    const what = v.length === 0 ? 'an empty string' : `${shown(v)} (${v.length} characters)`;
    throw new GuestFacingError('RangeError', `${FN}: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got ${what}`);
  }
  const c = v.charCodeAt(0);
  if (c === 34) throw new GuestFacingError('RangeError', `${FN}: options.delimiter cannot be '"': it is the quote character`);
  if (c === 10 || c === 13) throw new GuestFacingError('RangeError', `${FN}: options.delimiter cannot be a line break: line breaks end records`);
  if (c >= 0xd800 && c <= 0xdfff) {
    throw new GuestFacingError('RangeError', `${FN}: options.delimiter cannot be half of a surrogate pair: it would split characters`);
  }
  return v;
}

function readComment(v: unknown, delimiter: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    throw new GuestFacingError('TypeError', `${FN}: options.comment must be a string such as '#', got ${describeValue(v)}`);
  }
  if (v.length === 0) throw new GuestFacingError('RangeError', `${FN}: options.comment cannot be empty (leave it out for no comment lines)`);
  if (v.length > MAX_COMMENT_CHARS) {
    throw new GuestFacingError('RangeError', `${FN}: options.comment is ${v.length} characters, over the limit of ${MAX_COMMENT_CHARS}`);
  }
  if (v.includes('\n') || v.includes('\r')) throw new GuestFacingError('RangeError', `${FN}: options.comment cannot hold a line break`);
  if (v.startsWith('"')) throw new GuestFacingError('RangeError', `${FN}: options.comment cannot start with '"': it would hide quoted fields`);
  if (v.startsWith(delimiter)) {
    throw new GuestFacingError(
      'RangeError',
      `${FN}: options.comment cannot start with the delimiter ${shown(delimiter)}: every record with an empty first field would be skipped`,
    );
  }
  return v;
}

function readFlag(name: string, v: unknown, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new GuestFacingError('TypeError', `${FN}: options.${name} must be true or false, got ${describeValue(v)}`);
  return v;
}

/** A short string as a JS literal for messages (`'\t'`, `';'`), cut at 20 characters. */
export function shown(s: string): string {
  const cut = s.length > 20 ? `${s.slice(0, 20)}…` : s;
  return `'${JSON.stringify(cut).slice(1, -1).replaceAll("'", "\\'")}'`;
}

/** Delimiters other CSVs often use, with their names for messages. */
const OTHER_DELIMITERS: [string, string, string][] = [
  ['\t', 'tab', 'tabs'],
  [';', 'semicolon', 'semicolons'],
  ['|', 'pipe', 'pipes'],
  [',', 'comma', 'commas'],
];

/**
 * Why a header that came out as one unquoted column probably used another delimiter, or undefined
 * when it holds none of the usual ones. Without this, a tab- or semicolon-separated file passed with
 * the default `,` became one column whose cells are whole lines, which looked like success.
 * (Quoting the header name keeps a one-column CSV whose name holds such a character.)
 */
export function otherDelimiterHint(name: string, delimiter: string): string | undefined {
  let best: [string, string, string] | undefined;
  let bestCount = 0;
  for (const d of OTHER_DELIMITERS) {
    if (d[0] === delimiter) continue;
    const n = name.split(d[0]).length - 1;
    if (n > bestCount) {
      best = d;
      bestCount = n;
    }
  }
  if (!best) return undefined;
  return (
    `the header has no ${shown(delimiter)} but ${bestCount} ${bestCount === 1 ? best[1] : best[2]}: ` +
    `pass { delimiter: ${shown(best[0])} } (or quote the header name to keep one column)`
  );
}
