import type { Data } from 'apache-arrow';
import { type CellWriter, isValid } from './arrow-csv-cells.js';
import { type ByteWriter, floatText } from './byte-writer.js';
import { arrowLib } from './format-libs.js';

/**
 * Writes the rows of a record batch as CSV records: the inner loop of parquet2csv.
 *
 * The cell texts are those of arrow-csv-cells.ts (which stays the definition of every type's text);
 * this only writes the common column types faster. Calling a cell writer per cell costs a
 * megamorphic call, a validity lookup through apache-arrow's getters and a buffer check per call;
 * here each column is looked at once per batch (a `ColumnPlan`: its kind and typed arrays), and the
 * row loop switches on the kind and writes bytes straight into the output buffer. Strings, integers,
 * float64, booleans and lists of int64, float64 and strings take the fast path; any other column
 * calls its cell writer.
 */

/** Column kinds: how a column's cells are written. */
const K_CELL = 0; // any type: through its CellWriter
const K_TEXT = 1; // utf8; cells holding `,` `"` or a line break are quoted
const K_INT = 2; // int8–32, uint8–32
const K_INT64 = 3;
const K_FLOAT64 = 4;
const K_BOOL = 5;
const K_LIST_INT64 = 6;
const K_LIST_FLOAT64 = 7;
const K_LIST_TEXT = 8;

/** Validity: every value valid, a bitmap, or every value null. */
const ALL_VALID = 0;
const BITMAP = 1;
const ALL_NULL = 2;

const NO_U8 = new Uint8Array(0);
const NO_I32 = new Int32Array(0);
const NO_F64 = new Float64Array(0);
const NO_I64 = new BigInt64Array(0);
const NO_VIEW = new DataView(new ArrayBuffer(0));

/**
 * One column of one batch, prepared for the row loop. Every field is always set (with empty arrays
 * when unused) so that all plans share one hidden class and the loop's property loads stay monomorphic.
 */
export class ColumnPlan {
  kind = K_CELL;
  nulls = ALL_VALID;
  valid: Uint8Array = NO_U8;
  validOffset = 0;
  /** Text bytes (K_TEXT, K_LIST_TEXT items) and their offsets. */
  bytes: Uint8Array = NO_U8;
  offsets: Int32Array = NO_I32;
  /** K_TEXT: per row, QUOTE when the cell needs quotes, DOUBLE when it holds `"` (reused from batch to batch). */
  textFlags: Uint8Array = NO_U8;
  /** K_TEXT: the bytes as a DataView, for copying four bytes at a time. */
  bytesView: DataView = NO_VIEW;
  /** Numbers: int64 as 32-bit words (little-endian lo, hi), with the BigInt64Array for values beyond 2^53. */
  words: Int32Array = NO_I32;
  big: BigInt64Array = NO_I64;
  f64: Float64Array = NO_F64;
  ints: ArrayLike<number> = NO_I32;
  /** Boolean bits (K_BOOL) and their bit offset. */
  bits: Uint8Array = NO_U8;
  bitOffset = 0;
  /** Lists: offsets into the items, and the items' validity. */
  listOffsets: Int32Array = NO_I32;
  itemNulls = ALL_VALID;
  itemValid: Uint8Array = NO_U8;
  itemValidOffset = 0;
  /** K_CELL. */
  data: Data | undefined = undefined;
  writer: CellWriter | undefined = undefined;
}

function setValidity(plan: ColumnPlan, data: Data, item: boolean): void {
  // The same rule as isValid in arrow-csv-cells.ts.
  const nulls = data.nullCount;
  const bm = data.nullBitmap;
  let mode = ALL_VALID;
  if (nulls !== 0) mode = !bm || bm.length === 0 ? (nulls !== data.length ? ALL_VALID : ALL_NULL) : BITMAP;
  if (item) {
    plan.itemNulls = mode;
    plan.itemValid = mode === BITMAP ? bm! : NO_U8;
    plan.itemValidOffset = data.offset;
  } else {
    plan.nulls = mode;
    plan.valid = mode === BITMAP ? bm! : NO_U8;
    plan.validOffset = data.offset;
  }
}

/** Int32 words of an int64 array. */
function wordsOf(values: BigInt64Array): Int32Array {
  return new Int32Array(values.buffer, values.byteOffset, values.length * 2);
}

const QUOTE = 1;
const DOUBLE = 2;

/**
 * Marks the cells of rows [0, n) that need quoting (QUOTE) or hold a `"` (DOUBLE). The bytes are
 * searched natively (memchr), one cell at most once per character: a JS loop over every byte costs
 * ~2 ns a byte, several times a native scan.
 */
function markSpecials(values: Uint8Array, offsets: Int32Array, n: number, flags: Uint8Array): void {
  flags.fill(0, 0, n);
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const end = offsets[n]!;
  for (const ch of SPECIALS) {
    const flag = ch === 34 ? DOUBLE | QUOTE : QUOTE;
    let cell = 0;
    let pos = bytes.indexOf(ch, offsets[0]!);
    while (pos >= 0 && pos < end) {
      // The cell holding pos: the first one that ends after it (empty and null cells hold nothing).
      while (cell < n && offsets[cell + 1]! <= pos) cell++;
      if (cell === n) break;
      flags[cell]! |= flag;
      pos = bytes.indexOf(ch, offsets[cell + 1]!);
    }
  }
}

const SPECIALS = [44, 34, 10, 13];

/** Prepares column `data` (whose cell writer is `writer`) for writeRows. */
export function planColumn(data: Data, writer: CellWriter, plan = new ColumnPlan()): ColumnPlan {
  const T = arrowLib().Type;
  const type = data.type as unknown as {
    typeId: number;
    bitWidth: number;
    isSigned: boolean;
    precision: number;
    children?: { type: { typeId: number; bitWidth: number; isSigned: boolean; precision: number } }[];
  };
  setValidity(plan, data, false);
  plan.kind = K_CELL;
  plan.data = data;
  plan.writer = writer;
  switch (type.typeId) {
    case T.Utf8: {
      plan.kind = K_TEXT;
      plan.bytes = data.values as Uint8Array;
      plan.bytesView = new DataView(plan.bytes.buffer, plan.bytes.byteOffset, plan.bytes.byteLength);
      plan.offsets = data.valueOffsets as Int32Array;
      if (plan.textFlags.length < data.length) plan.textFlags = new Uint8Array(Math.max(data.length, 2 * plan.textFlags.length));
      markSpecials(plan.bytes, plan.offsets, data.length, plan.textFlags);
      break;
    }
    case T.Int:
      if (type.bitWidth < 64) {
        plan.kind = K_INT;
        plan.ints = data.values as ArrayLike<number>;
      } else if (type.isSigned) {
        plan.kind = K_INT64;
        plan.big = data.values as BigInt64Array;
        plan.words = wordsOf(plan.big);
      }
      break;
    case T.Float:
      if (type.precision === 2) {
        plan.kind = K_FLOAT64;
        plan.f64 = data.values as Float64Array;
      }
      break;
    case T.Bool:
      plan.kind = K_BOOL;
      plan.bits = data.values as Uint8Array;
      plan.bitOffset = data.offset;
      break;
    case T.List: {
      const item = type.children![0]!.type;
      const child = data.children[0]!;
      let kind = K_CELL;
      if (item.typeId === T.Int && item.bitWidth === 64 && item.isSigned) {
        kind = K_LIST_INT64;
        plan.big = child.values as BigInt64Array;
        plan.words = wordsOf(plan.big);
      } else if (item.typeId === T.Float && item.precision === 2) {
        kind = K_LIST_FLOAT64;
        plan.f64 = child.values as Float64Array;
      } else if (item.typeId === T.Utf8) {
        kind = K_LIST_TEXT;
        plan.bytes = child.values as Uint8Array;
        plan.offsets = child.valueOffsets as Int32Array;
      }
      if (kind !== K_CELL) {
        plan.kind = kind;
        plan.listOffsets = data.valueOffsets as Int32Array;
        setValidity(plan, child, true);
      }
      break;
    }
  }
  return plan;
}

/** Two ASCII digits per number 0–99. */
const DIGITS = (() => {
  const d = new Uint8Array(200);
  for (let i = 0; i < 100; i++) {
    d[2 * i] = 48 + Math.floor(i / 10);
    d[2 * i + 1] = 48 + (i % 10);
  }
  return d;
})();

/** A non-negative integer below 2^31, in decimal at p; returns the position after it. */
function putSmall(buf: Uint8Array, p: number, v: number): number {
  const n =
    v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10;
  let e = p + n;
  while (v >= 100) {
    const q = (v / 100) | 0;
    const r = (v - q * 100) << 1;
    buf[--e] = DIGITS[r + 1]!;
    buf[--e] = DIGITS[r]!;
    v = q;
  }
  if (v >= 10) {
    buf[--e] = DIGITS[2 * v + 1]!;
    buf[--e] = DIGITS[2 * v]!;
  } else {
    buf[--e] = 48 + v;
  }
  return p + n;
}

/** `len` zero-padded digits of 0 ≤ v < 10^len (len ≤ 9). */
function putPadded(buf: Uint8Array, p: number, v: number, len: number): number {
  let e = p + len;
  for (let i = 0; i < len; i++) {
    const q = (v / 10) | 0;
    buf[--e] = 48 + (v - q * 10);
    v = q;
  }
  return p + len;
}

/** A non-negative integer below 2^53. */
function putUint(buf: Uint8Array, p: number, v: number): number {
  if (v < 2147483648) return putSmall(buf, p, v);
  // Below 2^53: at most 16 digits, as a high part (< 2^31) and 9 low digits.
  let hi = Math.floor(v / 1e9);
  let lo = v - hi * 1e9;
  if (lo < 0) {
    hi--;
    lo += 1e9;
  } else if (lo >= 1e9) {
    hi++;
    lo -= 1e9;
  }
  return putPadded(buf, putSmall(buf, p, hi), lo, 9);
}

/** An integer with |v| < 2^53. */
function putInt(buf: Uint8Array, p: number, v: number): number {
  if (v < 0) {
    buf[p++] = 45;
    v = -v;
  }
  return putUint(buf, p, v);
}

function putAscii(buf: Uint8Array, p: number, s: string): number {
  for (let i = 0; i < s.length; i++) buf[p++] = s.charCodeAt(i);
  return p;
}

const TWO32 = 4294967296;

/** int64 slot i (as writeInt64 in arrow-csv-cells.ts). At most 20 bytes. */
function putInt64(buf: Uint8Array, p: number, words: Int32Array, big: BigInt64Array, i: number): number {
  const lo = words[2 * i]!;
  const hi = words[2 * i + 1]!;
  // Values within int32 stay in integer arithmetic.
  if (hi === 0 && lo >= 0) return putSmall(buf, p, lo);
  if (hi === -1 && lo < 0 && lo !== -2147483648) {
    buf[p] = 45;
    return putSmall(buf, p + 1, -lo);
  }
  if (hi >= -2097152 && hi < 2097152) return putInt(buf, p, hi * TWO32 + (lo >>> 0));
  return putAscii(buf, p, big[i]!.toString());
}

/**
 * A double as ByteWriter.float64 writes it (the shortest text that reads back the same, `.0` when whole). At most 25
 * bytes. ByteWriter.float64 tries 0, 1, …, 6 decimals; one try with 6 is the same: for |v| < 4e9 a
 * decimal of d ≤ 6 digits that reads back as v also does with 6 (v·10^6 rounds to it times
 * 10^(6−d): the errors stay under 0.5), and conversely the trailing zeros of those 6 digits give the
 * fewest decimals that read back.
 */
function putFloat64(buf: Uint8Array, p: number, v: number): number {
  const a = v < 0 ? -v : v;
  if (a >= 1e-6 && a < 4e9) {
    const k = Math.round(a * 1e6);
    if (k / 1e6 === a) {
      if (v < 0) buf[p++] = 45;
      let whole = Math.floor(k / 1e6);
      let frac = k - whole * 1e6;
      if (frac < 0) {
        whole--;
        frac += 1e6;
      } else if (frac >= 1e6) {
        whole++;
        frac -= 1e6;
      }
      p = putUint(buf, p, whole);
      if (frac === 0) {
        // `.0`: a whole float still reads back as a float (floatText).
        buf[p] = 46;
        buf[p + 1] = 48;
        return p + 2;
      }
      // Below 10^6: int32 arithmetic.
      let f = frac | 0;
      let digits = 6;
      while (f % 10 === 0) {
        f = (f / 10) | 0;
        digits--;
      }
      buf[p++] = 46;
      return putPadded(buf, p, f, digits);
    }
  }
  return putAscii(buf, p, floatText(v));
}

/**
 * Bytes [a, b) of `src` (`view` over the same bytes) as is, to `out` (a view of `buf`): four bytes at
 * a time through DataViews, natively past 128 bytes. (A byte loop costs ~2 ns a byte; a native copy
 * ~50 ns a call, plus a subarray to collect.)
 */
function putBytes(buf: Uint8Array, out: DataView, p: number, src: Uint8Array, view: DataView, a: number, b: number): number {
  const n = b - a;
  if (n > 128) {
    buf.set(src.subarray(a, b), p);
    return p + n;
  }
  const e = b - 3;
  let i = a;
  for (; i < e; i += 4, p += 4) out.setUint32(p, view.getUint32(i, true), true);
  for (; i < b; i++) buf[p++] = src[i]!;
  return p;
}

/**
 * Text cell r as one CSV field, as ByteWriter.csvField writes it: as is, or in quotes (with `"`
 * doubled) when it holds a delimiter, a quote or a line break; an empty string is `""`.
 */
function putText(buf: Uint8Array, out: DataView, p: number, plan: ColumnPlan, r: number): number {
  const a = plan.offsets[r]!;
  const b = plan.offsets[r + 1]!;
  const flags = plan.textFlags[r]!;
  if (flags === 0) {
    if (a !== b) return putBytes(buf, out, p, plan.bytes, plan.bytesView, a, b);
    buf[p] = 34;
    buf[p + 1] = 34;
    return p + 2;
  }
  buf[p++] = 34;
  if (flags & DOUBLE) {
    const src = plan.bytes;
    for (let i = a; i < b; i++) {
      const c = src[i]!;
      buf[p++] = c;
      if (c === 34) buf[p++] = 34;
    }
  } else {
    p = putBytes(buf, out, p, plan.bytes, plan.bytesView, a, b);
  }
  buf[p++] = 34;
  return p;
}

const HEX = Buffer.from('0123456789abcdef');

/** Bytes [a, b) as a JSON string inside a quoted CSV field (ByteWriter.jsonString with inCsvQuotes). At most 7 bytes per byte + 4. */
function putJsonInCsv(buf: Uint8Array, p: number, src: Uint8Array, a: number, b: number): number {
  buf[p++] = 34;
  buf[p++] = 34;
  for (let i = a; i < b; i++) {
    const c = src[i]!;
    if (c === 34 || c === 92) {
      buf[p++] = 92;
      buf[p++] = c;
      if (c === 34) buf[p++] = 34;
    } else if (c < 32) {
      const esc = c === 10 ? 110 : c === 13 ? 114 : c === 9 ? 116 : c === 8 ? 98 : c === 12 ? 102 : 0;
      buf[p++] = 92;
      if (esc) {
        buf[p++] = esc;
      } else {
        buf[p++] = 117; // \u00XX
        buf[p++] = 48;
        buf[p++] = 48;
        buf[p++] = HEX[c >> 4]!;
        buf[p++] = HEX[c & 15]!;
      }
    } else {
      buf[p++] = c;
    }
  }
  buf[p++] = 34;
  buf[p++] = 34;
  return p;
}

function isSet(bits: Uint8Array, k: number): boolean {
  return (bits[k >> 3]! & (1 << (k & 7))) !== 0;
}

function itemValid(plan: ColumnPlan, k: number): boolean {
  const mode = plan.itemNulls;
  return mode === ALL_VALID || (mode === BITMAP && isSet(plan.itemValid, plan.itemValidOffset + k));
}

/**
 * Bytes the cells of fast kinds in rows [r0, r1) may take at most, with their delimiters and line
 * breaks: the row loop makes room for all of them once, instead of checking before every cell.
 */
function sliceRoom(plans: ColumnPlan[], r0: number, r1: number): number {
  const rows = r1 - r0;
  let room = 2 * rows;
  for (const plan of plans) {
    room += rows;
    switch (plan.kind) {
      case K_TEXT:
        room += 2 * (plan.offsets[r1]! - plan.offsets[r0]!) + 2 * rows;
        break;
      case K_LIST_INT64:
      case K_LIST_FLOAT64:
        room += 32 * (plan.listOffsets[r1]! - plan.listOffsets[r0]!) + 8 * rows;
        break;
      case K_LIST_TEXT: {
        const from = plan.listOffsets[r0]!;
        const to = plan.listOffsets[r1]!;
        room += 7 * (plan.offsets[to]! - plan.offsets[from]!) + 10 * (to - from) + 8 * rows;
        break;
      }
      case K_CELL:
        break;
      default:
        room += 32 * rows;
    }
  }
  return room;
}

/** Rows written per room check: bounds the room asked for at once. */
const SLICE_ROWS = 4096;

/** Writes rows [0, rows) of the planned columns as CSV records, each ended by `\n`. */
export function writeRows(out: ByteWriter, plans: ColumnPlan[], rows: number): void {
  for (let r0 = 0; r0 < rows; r0 += SLICE_ROWS) {
    const r1 = Math.min(rows, r0 + SLICE_ROWS);
    const room = sliceRoom(plans, r0, r1);
    // Near the output cap the worst case may not fit where the real text does: then cell by cell.
    if (out.canGrow(room)) writeFast(out, plans, r0, r1, room);
    else writeByCell(out, plans, r0, r1);
  }
}

/** Rows [r0, r1) through every column's cell writer, with room checked per write. */
function writeByCell(out: ByteWriter, plans: ColumnPlan[], r0: number, r1: number): void {
  const single = plans.length === 1;
  for (let r = r0; r < r1; r++) {
    for (let c = 0; c < plans.length; c++) {
      if (c) out.byte(44);
      const data = plans[c]!.data!;
      if (isValid(data, r)) plans[c]!.writer!(out, data, r);
      else if (single) out.ascii('""');
    }
    out.byte(10);
  }
}

function writeFast(out: ByteWriter, plans: ColumnPlan[], r0: number, r1: number, room: number): void {
  const ncols = plans.length;
  // A lone empty field would make a blank line, which CSV readers skip: a single-column null is `""`.
  const single = ncols === 1;
  out.ensure(room);
  let buf: Uint8Array = out.buf;
  let view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let p = out.pos;
  for (let r = r0; r < r1; r++) {
    for (let c = 0; c < ncols; c++) {
      const plan = plans[c]!;
      if (c) buf[p++] = 44;
      const nulls = plan.nulls;
      if (nulls !== ALL_VALID && (nulls === ALL_NULL || !isSet(plan.valid, plan.validOffset + r))) {
        if (single) {
          buf[p++] = 34;
          buf[p++] = 34;
        }
        continue;
      }
      switch (plan.kind) {
        case K_TEXT:
          p = putText(buf, view, p, plan, r);
          break;
        case K_INT64:
          p = putInt64(buf, p, plan.words, plan.big, r);
          break;
        case K_FLOAT64:
          p = putFloat64(buf, p, plan.f64[r]!);
          break;
        case K_INT:
          p = putInt(buf, p, plan.ints[r]!);
          break;
        case K_BOOL:
          p = isSet(plan.bits, plan.bitOffset + r) ? putAscii(buf, p, 'true') : putAscii(buf, p, 'false');
          break;
        case K_LIST_INT64:
        case K_LIST_FLOAT64: {
          const from = plan.listOffsets[r]!;
          const to = plan.listOffsets[r + 1]!;
          const quoted = to - from > 1;
          if (quoted) buf[p++] = 34;
          buf[p++] = 91;
          for (let k = from; k < to; k++) {
            if (k > from) {
              buf[p++] = 44;
              buf[p++] = 32;
            }
            if (!itemValid(plan, k)) p = putAscii(buf, p, 'null');
            else if (plan.kind === K_LIST_INT64) p = putInt64(buf, p, plan.words, plan.big, k);
            else p = putFloat64(buf, p, plan.f64[k]!);
          }
          buf[p++] = 93;
          if (quoted) buf[p++] = 34;
          break;
        }
        case K_LIST_TEXT: {
          const from = plan.listOffsets[r]!;
          const to = plan.listOffsets[r + 1]!;
          const quoted = to > from;
          if (quoted) buf[p++] = 34;
          buf[p++] = 91;
          for (let k = from; k < to; k++) {
            if (k > from) {
              buf[p++] = 44;
              buf[p++] = 32;
            }
            if (!itemValid(plan, k)) p = putAscii(buf, p, 'null');
            else p = putJsonInCsv(buf, p, plan.bytes, plan.offsets[k]!, plan.offsets[k + 1]!);
          }
          buf[p++] = 93;
          if (quoted) buf[p++] = 34;
          break;
        }
        default:
          out.pos = p;
          plan.writer!(out, plan.data!, r);
          // The cell writer makes its own room; the fast cells still need theirs (a generous bound).
          if (out.buf.length - out.pos < room) out.ensure(room);
          if (out.buf !== buf) {
            buf = out.buf;
            view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
          }
          p = out.pos;
      }
    }
    buf[p++] = 10;
  }
  out.pos = p;
}
