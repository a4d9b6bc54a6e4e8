import { boolValue, NUM_FLOAT, NUM_INT, numberKind } from './cell-parsers.js';
import { type CsvTokenizer, ESCAPED } from './csv-tokenizer.js';
import { DATE_DAY, DATE_NONE, DATE_TIME_ZONED, dateCell, fitsNanoseconds, parsedDate } from './date-cells.js';

/**
 * Per-column type inference of csv2parquet. A column type is a small number: the kind in the low
 * four bits and, for a list, the item kind in the next four (for a timestamp, its flags). Types only
 * widen, along
 *
 *     null → bool | int → float | date | timestamp → string          list<null> → list<bool | int → float | string>
 *
 * and any other meeting point (bool with int, a list with a scalar, a list of numbers with a list
 * of strings, a date with a timestamp) makes the column a string column, which keeps every cell's
 * text exactly. An empty cell (quoted or not, as DuckDB's `allow_quoted_nulls`) is a null and fits
 * every type. A column that holds only nulls is written as a string column, and a list column whose
 * lists are all empty as list<string>.
 *
 * Dates and timestamps (date-cells.ts for the grammar): a column of dates is date32; a column of
 * date-times is a timestamp in microseconds, or nanoseconds when some fraction has 7–9 significant
 * digits, with time zone UTC when its cells carry a zone (`Z`, `+01:00`) and none when they do not.
 * A column that mixes dates with date-times, or zoned with unzoned date-times, stays text, as does a
 * nanosecond column with a value outside 1677–2262 (the int64 nanosecond range): each of these would
 * need a guess or lose a value. (DuckDB's sniffer also keeps dates mixed with date-times as VARCHAR.)
 */
export const T_NULL = 0;
export const T_BOOL = 1;
export const T_INT = 2;
export const T_FLOAT = 3;
export const T_STRING = 4;
export const T_LIST = 5;
export const T_DATE = 6;
export const T_TIMESTAMP = 7;

/** Timestamp flags (bits 4–7 of a T_TIMESTAMP type). */
/** Some fraction has more than 6 significant digits: the column is in nanoseconds. */
export const TS_NANOS = 16;
/** Some value lies outside the int64 nanosecond range (1677–2262). */
export const TS_WIDE = 32;
/** Cells with a zone (the column is UTC) … */
export const TS_ZONED = 64;
/** … and cells without one: both at once is text. */
export const TS_NAIVE = 128;

export type ColumnType = number;

export const kindOf = (t: ColumnType): number => t & 15;
export const itemOf = (t: ColumnType): number => t >> 4;
export const listOf = (item: number): ColumnType => T_LIST | (item << 4);

/** The join of two item kinds, or -1 when they do not meet below string. */
export function joinItems(a: number, b: number): number {
  if (a === b || b === T_NULL) return a;
  if (a === T_NULL) return b;
  if ((a === T_INT && b === T_FLOAT) || (a === T_FLOAT && b === T_INT)) return T_FLOAT;
  return -1;
}

export function joinTypes(a: ColumnType, b: ColumnType): ColumnType {
  if (a === b || b === T_NULL) return a;
  if (a === T_NULL) return b;
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka === T_TIMESTAMP || kb === T_TIMESTAMP) {
    if (ka !== kb) return T_STRING;
    const t = a | b;
    if ((t & TS_NANOS && t & TS_WIDE) || (t & TS_ZONED && t & TS_NAIVE)) return T_STRING;
    return t;
  }
  if (ka === T_LIST && kb === T_LIST) {
    const item = joinItems(itemOf(a), itemOf(b));
    return item < 0 ? T_STRING : listOf(item);
  }
  if (ka !== T_LIST && kb !== T_LIST) {
    const k = joinItems(ka, kb);
    return k < 0 ? T_STRING : k;
  }
  return T_STRING;
}

/** The type a column is written as: nulls only → string, list<null> → list<string>. */
export function writtenType(t: ColumnType): ColumnType {
  if (t === T_NULL) return T_STRING;
  if (kindOf(t) === T_LIST && itemOf(t) === T_NULL) return listOf(T_STRING);
  return t;
}

/**
 * Whether a cell of type `c` can be stored as it is in a column of timestamp type `t` (a column
 * builder's check): same zone rule, no finer unit; a value outside 1677–2262 only matters in
 * nanoseconds.
 */
export function timestampFits(t: ColumnType, c: ColumnType): boolean {
  if (kindOf(c) !== T_TIMESTAMP) return false;
  const extra = c & ~t;
  return extra === 0 || (extra === TS_WIDE && (t & TS_NANOS) === 0);
}

const KIND_NAMES = ['null', 'boolean', 'int64', 'float64', 'string', 'list', 'date32'];

/** A readable name (`int64`, `list<string>`, `timestamp[us, UTC]`), for errors and tests. */
export function typeName(t: ColumnType): string {
  const k = kindOf(t);
  if (k === T_LIST) return `list<${KIND_NAMES[itemOf(t)]}>`;
  if (k === T_TIMESTAMP) return `timestamp[${t & TS_NANOS ? 'ns' : 'us'}${t & TS_ZONED ? ', UTC' : ''}]`;
  return KIND_NAMES[t]!;
}

/** The type of a date or date-time cell `s[a, b)` (date-cells.ts), or T_STRING. */
export function dateCellType(s: string, a: number, b: number): ColumnType {
  const k = dateCell(s, a, b);
  if (k === DATE_NONE) return T_STRING;
  if (k === DATE_DAY) return T_DATE;
  let t = T_TIMESTAMP | (k === DATE_TIME_ZONED ? TS_ZONED : TS_NAIVE);
  if (parsedDate.fractionDigits > 6) t |= TS_NANOS;
  if (!fitsNanoseconds(parsedDate.seconds, parsedDate.nanos)) t |= TS_WIDE;
  return t;
}

/**
 * The type of one non-empty cell `s[a, b)`; `escaped` when it holds `""` pairs; `dates` false when
 * dates and timestamps are not inferred (csv2parquet's `inferDates: false`).
 */
export function cellType(s: string, a: number, b: number, escaped: boolean, dates = true): ColumnType {
  const c = s.charCodeAt(a);
  if (c === 91 /* [ */) {
    const item = parseList(s, a, b, undefined, escaped);
    return item < 0 ? T_STRING : listOf(item);
  }
  if (escaped) return T_STRING;
  if (c === 45 || (c >= 48 && c <= 57) || c === 78 || c === 73) {
    const k = numberKind(s, a, b);
    if (k === NUM_INT) return T_INT;
    if (k === NUM_FLOAT) return T_FLOAT;
    return dates && c !== 78 && c !== 73 ? dateCellType(s, a, b) : T_STRING;
  }
  if (c === 43 /* + */) return dates ? dateCellType(s, a, b) : T_STRING;
  if ((c | 32) === 116 || (c | 32) === 102) return boolValue(s, a, b) >= 0 ? T_BOOL : T_STRING;
  return T_STRING;
}

/** Joins the types of `n` cells of column `col` of the tokenizer's current chunk into `t`. */
export function classifyColumn(tok: CsvTokenizer, col: number, n: number, t: ColumnType, dates = true): ColumnType {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  for (let r = 0; r < n && t !== T_STRING; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) continue;
    t = joinTypes(t, cellType(s, a, b, (flags[base + r]! & ESCAPED) !== 0, dates));
  }
  return t;
}

/**
 * Receives the items of a list cell while it is parsed (build mode). Each method returns false when
 * the item does not fit the column's item type, which stops the parse.
 */
export interface ListItemSink {
  nullItem(): boolean;
  boolItem(v: boolean): boolean;
  numberItem(s: string, a: number, b: number, kind: number): boolean;
  /** An integer item with |v| < 10^15 (read by the parser already). */
  intItem(v: number): boolean;
  /** A JSON string item: `s[a, b)` is its raw text between the quotes; `decoded` is set when it had escapes. */
  stringItem(s: string, a: number, b: number, decoded: string | undefined): boolean;
}

const isWs = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/**
 * Parses a bracketed list cell `t[a, b)`: `[` items separated by `,` `]`, where an item is a JSON
 * literal (a number, a double-quoted string with JSON escapes, true, false, null) or one of `NaN`,
 * `Infinity`, `-Infinity` (a float item, as parquet2csv writes them), with optional whitespace. Nested lists and bare words are not lists (the column falls back to string).
 * Returns the join of the item kinds (T_NULL for `[]`), or -1 when the cell is not such a list or
 * (with a sink) an item did not fit.
 *
 * `escaped`: `t[a, b)` is the content of a quoted CSV field holding `""` pairs, parsed as the text
 * it stands for (each `""` read as one `"`) without building that text first. Inside a quoted field
 * every `"` is half of such a pair, so a quote is simply two characters wide.
 */
export function parseList(t: string, a: number, b: number, sink: ListItemSink | undefined, escaped = false): number {
  if (t.charCodeAt(a) !== 91 || b - a < 2 || t.charCodeAt(b - 1) !== 93) return -1;
  const end = b - 1;
  const qw = escaped ? 2 : 1;
  let i = a + 1;
  let item = T_NULL;
  while (i < end && isWs(t.charCodeAt(i))) i++;
  if (i === end) return T_NULL;
  for (;;) {
    while (i < end && isWs(t.charCodeAt(i))) i++;
    if (i === end) return -1;
    const c = t.charCodeAt(i);
    let k: number;
    if (c === 34) {
      const open = i;
      let escapes = false;
      i += qw;
      for (;;) {
        if (i >= end) return -1;
        const d = t.charCodeAt(i);
        if (d === 34) break;
        if (d === 92) {
          escapes = true;
          // A backslash and the character it escapes (an escaped quote is a `""` pair when escaped).
          i += t.charCodeAt(i + 1) === 34 ? 1 + qw : 2;
          continue;
        }
        if (d < 32) return -1;
        i++;
      }
      // The closing quote is at i; without escapes the raw text between the quotes holds no quote.
      let decoded: string | undefined;
      if (escapes || sink) {
        if (escapes) {
          const literal = escaped ? t.slice(open, i + qw).replaceAll('""', '"') : t.slice(open, i + 1);
          try {
            decoded = JSON.parse(literal) as string;
          } catch {
            return -1;
          }
        }
        if (sink && !sink.stringItem(t, open + qw, i, decoded)) return -1;
      }
      i += qw;
      k = T_STRING;
    } else if (c === 45 || (c >= 48 && c <= 57) || c === 78 || c === 73) {
      // A number, or NaN / Infinity / -Infinity: not JSON, but how parquet2csv writes them in a
      // float list, so that such a list reads back as list<float64>.
      const st = i;
      // Fast path: a plain integer of up to 15 digits, read in the same pass.
      let v = 0;
      let digits = 0;
      let simple = true;
      if (c === 45) i++;
      const first = t.charCodeAt(i);
      while (i < end) {
        const d = t.charCodeAt(i);
        if (d === 44 || isWs(d)) break;
        if (d >= 48 && d <= 57) {
          v = v * 10 + (d - 48);
          digits++;
        } else {
          simple = false;
        }
        i++;
      }
      if (simple && digits > 0 && digits <= 15 && (first !== 48 || digits === 1)) {
        k = T_INT;
        if (sink && !sink.intItem(c === 45 ? -v : v)) return -1;
      } else {
        const nk = numberKind(t, st, i);
        if (nk !== NUM_INT && nk !== NUM_FLOAT) return -1;
        k = nk === NUM_INT ? T_INT : T_FLOAT;
        if (sink && !sink.numberItem(t, st, i, k)) return -1;
      }
    } else if (c === 116 && t.startsWith('true', i)) {
      i += 4;
      k = T_BOOL;
      if (sink && !sink.boolItem(true)) return -1;
    } else if (c === 102 && t.startsWith('false', i)) {
      i += 5;
      k = T_BOOL;
      if (sink && !sink.boolItem(false)) return -1;
    } else if (c === 110 && t.startsWith('null', i)) {
      i += 4;
      k = T_NULL;
      if (sink && !sink.nullItem()) return -1;
    } else {
      return -1;
    }
    item = joinItems(item, k);
    if (item < 0) return -1;
    while (i < end && isWs(t.charCodeAt(i))) i++;
    if (i === end) return item;
    if (t.charCodeAt(i) !== 44) return -1;
    i++;
  }
}
