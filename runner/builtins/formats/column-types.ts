import { boolValue, NUM_FLOAT, NUM_INT, numberKind } from './cell-parsers.js';
import { type CsvTokenizer, ESCAPED } from './csv-tokenizer.js';

/**
 * Per-column type inference of csv2parquet. A column type is a small number: the kind in the low
 * four bits and, for a list, the item kind in the next four. Types only widen, along
 *
 *     null → bool | int → float → string          list<null> → list<bool | int → float | string>
 *
 * and any other meeting point (bool with int, a list with a scalar, a list of numbers with a list
 * of strings) makes the column a string column, which keeps every cell's text exactly. An empty
 * cell (quoted or not, as DuckDB's `allow_quoted_nulls`) is a null and fits every type. A column
 * that holds only nulls is written as a string column, and a list column whose lists are all
 * empty as list<string>. Dates and timestamps are not inferred: they stay strings.
 */

export const T_NULL = 0;
export const T_BOOL = 1;
export const T_INT = 2;
export const T_FLOAT = 3;
export const T_STRING = 4;
export const T_LIST = 5;

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

const KIND_NAMES = ['null', 'boolean', 'int64', 'float64', 'string'];

/** A readable name (`int64`, `list<string>`), for errors and tests. */
export function typeName(t: ColumnType): string {
  return kindOf(t) === T_LIST ? `list<${KIND_NAMES[itemOf(t)]}>` : KIND_NAMES[t]!;
}

/** The type of one non-empty cell `s[a, b)`; `escaped` when it holds `""` pairs. */
export function cellType(s: string, a: number, b: number, escaped: boolean): ColumnType {
  const c = s.charCodeAt(a);
  if (c === 91 /* [ */) {
    const item = parseList(s, a, b, undefined, escaped);
    return item < 0 ? T_STRING : listOf(item);
  }
  if (escaped) return T_STRING;
  if (c === 45 || (c >= 48 && c <= 57) || c === 78 || c === 73) {
    const k = numberKind(s, a, b);
    return k === NUM_INT ? T_INT : k === NUM_FLOAT ? T_FLOAT : T_STRING;
  }
  if ((c | 32) === 116 || (c | 32) === 102) return boolValue(s, a, b) >= 0 ? T_BOOL : T_STRING;
  return T_STRING;
}

/** Joins the types of `n` cells of column `col` of the tokenizer's current chunk into `t`. */
export function classifyColumn(tok: CsvTokenizer, col: number, n: number, t: ColumnType): ColumnType {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  for (let r = 0; r < n && t !== T_STRING; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) continue;
    t = joinTypes(t, cellType(s, a, b, (flags[base + r]! & ESCAPED) !== 0));
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
