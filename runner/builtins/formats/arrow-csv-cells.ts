import type { Data, DataType, Field } from 'apache-arrow';
import { ByteWriter, floatText } from './byte-writer.js';
import { arrowLib } from './format-libs.js';

/**
 * How parquet2csv writes each Arrow type as CSV text (decided here, documented in the README):
 *
 * | Arrow type | CSV cell |
 * |---|---|
 * | null value (any type) | empty cell (`""` when the table has a single column, so the row is not blank) |
 * | utf8 / large utf8 / utf8 view | the text; an empty string is `""` |
 * | int 8–64, uint 8–64 | decimal digits (int64 exactly, no precision loss) |
 * | float 16/32/64 | shortest text that reads back as the same value, always with a fraction or an exponent so that it reads back as a float (`0.1`, `1.0`, `-0.0`, `1e+21`, `NaN`, `Infinity`; see `floatText`) |
 * | bool | `true` / `false` |
 * | date32 / date64 | `YYYY-MM-DD` |
 * | timestamp | ISO 8601 `YYYY-MM-DDTHH:MM:SS[.fff…]`, with `Z` when the type has a time zone (values are UTC); the fraction keeps the unit's precision (µs and ns are not lost), trailing zeros dropped |
 * | time32 / time64 | `HH:MM:SS[.fff…]` |
 * | decimal | exact decimal text with its scale (`123.450`) |
 * | duration | the integer count of its unit |
 * | interval | JSON object of its parts: `{"days": 1, "milliseconds": 0}`, `{"months": 2}`, `{"months": 0, "days": 1, "nanoseconds": 5}` |
 * | binary | base64 |
 * | fixed-size binary | base64, except 16 bytes: `8-4-4-4-12` hex (that is how a DuckDB / Parquet UUID arrives: parquet-wasm drops the UUID annotation) |
 * | list, large list, fixed-size list | JSON-ish list `[1, 2, 3]`, `["a", "x, y"]` (items as JSON, `, ` between them); nested lists nest |
 * | struct | JSON object `{"a": 1, "b": "x"}` |
 * | map | JSON object with the keys as strings |
 * | dictionary | its value, formatted by the dictionary's type |
 * | union, views, others | apache-arrow's value as text (JSON for objects) |
 *
 * A cell whose text holds `,`, `"` or a line break is quoted, with `"` doubled.
 */

/** Writes the cell for row `i` of `data` (the row is valid: nulls are handled by the caller). */
export type CellWriter = (w: ByteWriter, data: Data, i: number) => void;

export function isValid(data: Data, i: number): boolean {
  const nulls = data.nullCount;
  if (nulls === 0) return true;
  const bm = data.nullBitmap;
  // The Null type (and an all-null array written without a bitmap) has no validity bits.
  if (!bm || bm.length === 0) return nulls !== data.length;
  const k = data.offset + i;
  return (bm[k >> 3]! & (1 << (k & 7))) !== 0;
}

/** The CSV writer of a column of type `type` (`field` gives extension metadata). */
export function csvCellWriter(type: DataType, field?: Field): CellWriter {
  const A = arrowLib();
  const T = A.Type;
  switch (type.typeId) {
    case T.Utf8:
    case T.LargeUtf8: {
      // Per chunk of data: when its bytes hold no delimiter, quote or line break at all (4 native
      // scans), no cell needs quoting and cells are copied without looking at them.
      let seen: Data | undefined;
      let plain = false;
      let src: Buffer = Buffer.alloc(0);
      return (w, d, i) => {
        if (d !== seen) {
          seen = d;
          const v = d.values as Uint8Array;
          src = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
          plain = src.indexOf(44) < 0 && src.indexOf(34) < 0 && src.indexOf(10) < 0 && src.indexOf(13) < 0;
        }
        const offs = d.valueOffsets;
        const a = Number(offs[i]!);
        const b = Number(offs[i + 1]!);
        if (plain && a !== b) w.raw(src, a, b);
        else w.csvField(src, a, b);
      };
    }
    case T.Int:
    case T.Float:
    case T.Bool:
    case T.Date:
    case T.Timestamp:
    case T.Time:
    case T.Decimal:
    case T.Duration:
      // These texts never need quoting.
      return scalarWriter(type);
    default: {
      if (type.typeId === T.List || type.typeId === T.LargeList) {
        const flat = listOfScalarsWriter((type as unknown as { children: Field[] }).children[0]!.type);
        if (flat) return flat;
      }
      // Everything else goes through text (JSON-ish for nested values), then CSV quoting.
      const scratch = new ByteWriter(1024);
      const write = isNested(type) ? jsonWriter(type, field) : textWriter(type, field);
      return (w, d, i) => {
        scratch.pos = 0;
        write(scratch, d, i);
        w.csvField(scratch.buf, 0, scratch.pos);
      };
    }
  }
}

/** Types written as JSON text (objects and lists). */
/**
 * A list of numbers, booleans or strings, written straight into the CSV field: it needs quoting
 * exactly when it has two or more items (`, `) or a string item (`"`), and then the quotes of its
 * strings are doubled as they are written. The same bytes as JSON text + CSV quoting, in one pass.
 */
function listOfScalarsWriter(item: DataType): CellWriter | undefined {
  const T = arrowLib().Type;
  const strings = item.typeId === T.Utf8 || item.typeId === T.LargeUtf8;
  if (!strings && item.typeId !== T.Int && item.typeId !== T.Float && item.typeId !== T.Bool) return undefined;
  const scalar = strings ? undefined : scalarWriter(item);
  return (w, d, i) => {
    const offs = d.valueOffsets;
    const from = Number(offs[i]!);
    const to = Number(offs[i + 1]!);
    const child = d.children[0]!;
    const quoted = to - from > 1 || (strings && to > from);
    if (quoted) w.byte(34);
    w.byte(91);
    for (let k = from; k < to; k++) {
      if (k > from) w.ascii(', ');
      if (!isValid(child, k)) w.ascii('null');
      else if (scalar) scalar(w, child, k);
      else {
        const co = child.valueOffsets;
        w.jsonString(child.values as Uint8Array, Number(co[k]!), Number(co[k + 1]!), true);
      }
    }
    w.byte(93);
    if (quoted) w.byte(34);
  };
}

function isNested(type: DataType): boolean {
  const T = arrowLib().Type;
  const id = type.typeId;
  return id === T.List || id === T.LargeList || id === T.FixedSizeList || id === T.Struct || id === T.Map || id === T.Interval;
}

const textCache = new WeakMap<DataType, CellWriter>();

/** Writes a scalar's plain text (no quoting), for types whose text may need CSV or JSON quoting. */
function textWriter(type: DataType, field?: Field): CellWriter {
  let f = textCache.get(type);
  if (f) return f;
  const A = arrowLib();
  const T = A.Type;
  switch (type.typeId) {
    case T.Utf8:
    case T.LargeUtf8:
      f = (w, d, i) => {
        const offs = d.valueOffsets;
        const a = Number(offs[i]!);
        const b = Number(offs[i + 1]!);
        w.ensure(b - a);
        w.buf.set((d.values as Uint8Array).subarray(a, b), w.pos);
        w.pos += b - a;
      };
      break;
    case T.Binary:
    case T.LargeBinary: {
      f = (w, d, i) => {
        const offs = d.valueOffsets;
        const v = d.values as Uint8Array;
        w.ascii(Buffer.from(v.buffer, v.byteOffset + Number(offs[i]!), Number(offs[i + 1]!) - Number(offs[i]!)).toString('base64'));
      };
      break;
    }
    case T.FixedSizeBinary: {
      const width = (type as unknown as { byteWidth: number }).byteWidth;
      const ext = field?.metadata.get('ARROW:extension:name');
      const uuid = width === 16 && (ext === undefined || ext === 'arrow.uuid');
      f = (w, d, i) => {
        const v = d.values as Uint8Array;
        const bytes = Buffer.from(v.buffer, v.byteOffset + i * width, width);
        if (uuid) {
          const h = bytes.toString('hex');
          w.ascii(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
        } else {
          w.ascii(bytes.toString('base64'));
        }
      };
      break;
    }
    case T.Dictionary: {
      const dictType = (type as unknown as { dictionary: DataType }).dictionary;
      const inner = textWriter(dictType);
      f = (w, d, i) => {
        const dict = d.dictionary!;
        const k = Number((d.values as ArrayLike<number | bigint>)[i]!);
        const { data, index } = locate(dict.data, k);
        if (!isValid(data, index)) return;
        inner(w, data, index);
      };
      break;
    }
    case T.Int:
    case T.Float:
    case T.Bool:
    case T.Date:
    case T.Timestamp:
    case T.Time:
    case T.Decimal:
    case T.Duration:
      f = scalarWriter(type);
      break;
    default: {
      // Utf8View, BinaryView, Interval, Union, Null…: apache-arrow's own value.
      f = (w, d, i) => {
        const v = A.makeVector(d).get(i) as unknown;
        w.text(typeof v === 'string' ? v : jsonOfValue(v));
      };
    }
  }
  textCache.set(type, f);
  return f;
}

/** Finds the chunk holding row k of a vector's data chunks. */
function locate(chunks: readonly Data[], k: number): { data: Data; index: number } {
  for (const c of chunks) {
    if (k < c.length) return { data: c, index: k };
    k -= c.length;
  }
  return { data: chunks[chunks.length - 1]!, index: k };
}

function jsonOfValue(v: unknown): string {
  try {
    return (
      JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x instanceof Uint8Array ? Buffer.from(x).toString('base64') : x)) ?? ''
    );
  } catch {
    return String(v);
  }
}

const TWO32 = 4294967296;

/** Writers of number, boolean and date/time text: ASCII that never needs CSV quoting. */
function scalarWriter(type: DataType): CellWriter {
  const A = arrowLib();
  const T = A.Type;
  const t = type as unknown as { bitWidth: number; isSigned: boolean; precision: number; unit: number; timezone?: string | null; scale: number };
  switch (type.typeId) {
    case T.Int:
      if (t.bitWidth < 64) return (w, d, i) => w.int((d.values as Int32Array)[i]!);
      return t.isSigned ? (w, d, i) => writeInt64(w, d.values as BigInt64Array, i) : (w, d, i) => writeUint64(w, d.values as BigUint64Array, i);
    case T.Float:
      if (t.precision === A.Precision.DOUBLE) return (w, d, i) => w.float64((d.values as Float64Array)[i]!);
      if (t.precision === A.Precision.SINGLE) return (w, d, i) => w.ascii(float32Text((d.values as Float32Array)[i]!));
      return (w, d, i) => w.ascii(float32Text(A.util.uint16ToFloat64((d.values as Uint16Array)[i]!)));
    case T.Bool:
      return (w, d, i) => {
        const k = d.offset + i;
        w.ascii(((d.values as Uint8Array)[k >> 3]! & (1 << (k & 7))) !== 0 ? 'true' : 'false');
      };
    case T.Date:
      if (t.unit === A.DateUnit.DAY) return (w, d, i) => writeDate(w, (d.values as Int32Array)[i]!);
      return (w, d, i) => writeDate(w, Math.floor(int64At(d.values as BigInt64Array, i) / 86_400_000));
    case T.Timestamp: {
      const perSec = unitsPerSecond(t.unit);
      const zulu = t.timezone !== null && t.timezone !== undefined && t.timezone !== '';
      return (w, d, i) => {
        writeTimestamp(w, d.values as BigInt64Array, i, perSec);
        if (zulu) w.byte(90);
      };
    }
    case T.Time: {
      const perSec = unitsPerSecond(t.unit);
      if (t.bitWidth === 32) return (w, d, i) => writeTime(w, (d.values as Int32Array)[i]!, perSec);
      return (w, d, i) => writeTime(w, int64At(d.values as BigInt64Array, i), perSec);
    }
    case T.Duration:
      return (w, d, i) => writeInt64(w, d.values as BigInt64Array, i);
    case T.Decimal: {
      const words = t.bitWidth / 32;
      const scale = t.scale;
      return (w, d, i) => w.ascii(decimalText(d.values as Uint32Array, i * words, words, scale));
    }
    default:
      throw new Error(`no scalar writer for ${String(type)}`);
  }
}

/** int64 slot i of a BigInt64Array, as a number (exact below 2^53). */
function int64At(values: BigInt64Array, i: number): number {
  const w = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  return w[2 * i + 1]! * TWO32 + (w[2 * i]! >>> 0);
}

function writeInt64(w: ByteWriter, values: BigInt64Array, i: number): void {
  const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  const hi = words[2 * i + 1]!;
  if (hi >= -2097152 && hi < 2097152) w.int(hi * TWO32 + (words[2 * i]! >>> 0));
  else w.ascii(values[i]!.toString());
}

function writeUint64(w: ByteWriter, values: BigUint64Array, i: number): void {
  const words = new Uint32Array(values.buffer, values.byteOffset, values.length * 2);
  const hi = words[2 * i + 1]!;
  if (hi < 2097152) w.uint(hi * TWO32 + words[2 * i]!);
  else w.ascii(values[i]!.toString());
}

/** The shortest decimal text that reads back as the same float32. */
function float32Text(v: number): string {
  if (!Number.isFinite(v) || v === 0) return floatText(v);
  for (let p = 1; p < 10; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return floatText(v, String(Number(s)));
  }
  return floatText(v);
}

function unitsPerSecond(unit: number): number {
  // TimeUnit: SECOND 0, MILLISECOND 1, MICROSECOND 2, NANOSECOND 3
  return unit === 0 ? 1 : unit === 1 ? 1e3 : unit === 2 ? 1e6 : 1e9;
}

/** `YYYY-MM-DD` of a day count since 1970-01-01 (proleptic Gregorian, H. Hinnant's civil_from_days). */
function writeDate(w: ByteWriter, days: number): void {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  if (y < 0) {
    w.byte(45);
    w.padded(-y, 4);
  } else if (y > 9999) {
    w.byte(43);
    w.uint(y);
  } else {
    w.padded(y, 4);
  }
  w.byte(45);
  w.padded(m, 2);
  w.byte(45);
  w.padded(d, 2);
}

/** `.fff…` with the unit's digits, trailing zeros dropped; nothing for a zero fraction. */
function writeFraction(w: ByteWriter, frac: number, perSec: number): void {
  if (frac === 0 || perSec === 1) return;
  let digits = perSec === 1e3 ? 3 : perSec === 1e6 ? 6 : 9;
  while (frac % 10 === 0) {
    frac /= 10;
    digits--;
  }
  w.byte(46);
  w.padded(frac, digits);
}

function writeClock(w: ByteWriter, secOfDay: number): void {
  const h = Math.floor(secOfDay / 3600);
  const m = Math.floor((secOfDay % 3600) / 60);
  w.padded(h, 2);
  w.byte(58);
  w.padded(m, 2);
  w.byte(58);
  w.padded(secOfDay % 60, 2);
}

function writeTimestamp(w: ByteWriter, values: BigInt64Array, i: number, perSec: number): void {
  let secs: number;
  let frac: number;
  const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  const hi = words[2 * i + 1]!;
  if (hi >= -2097152 && hi < 2097152) {
    const v = hi * TWO32 + (words[2 * i]! >>> 0);
    secs = Math.floor(v / perSec);
    frac = v - secs * perSec;
  } else {
    const v = values[i]!;
    const p = BigInt(perSec);
    let s = v / p;
    let f = v % p;
    if (f < 0n) {
      f += p;
      s -= 1n;
    }
    secs = Number(s);
    frac = Number(f);
  }
  const days = Math.floor(secs / 86400);
  writeDate(w, days);
  w.byte(84);
  writeClock(w, secs - days * 86400);
  writeFraction(w, frac, perSec);
}

function writeTime(w: ByteWriter, v: number, perSec: number): void {
  const secs = Math.floor(v / perSec);
  writeClock(w, secs);
  writeFraction(w, v - secs * perSec, perSec);
}

/** Exact text of a two's-complement decimal of `words` 32-bit little-endian words with `scale`. */
function decimalText(values: Uint32Array, at: number, words: number, scale: number): string {
  let v = 0n;
  for (let k = words - 1; k >= 0; k--) v = (v << 32n) | BigInt(values[at + k]!);
  if (values[at + words - 1]! & 0x80000000) v -= 1n << BigInt(32 * words);
  const neg = v < 0n;
  let digits = (neg ? -v : v).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  } else if (scale < 0) {
    digits += '0'.repeat(-scale);
  }
  return neg ? `-${digits}` : digits;
}

const jsonCache = new WeakMap<DataType, CellWriter>();

/** Writes a value as JSON (used for items of lists and fields of structs, and for whole nested cells). */
function jsonWriter(type: DataType, field?: Field): CellWriter {
  let f = jsonCache.get(type);
  if (f) return f;
  const A = arrowLib();
  const T = A.Type;
  switch (type.typeId) {
    case T.Utf8:
    case T.LargeUtf8:
      f = (w, d, i) => {
        const offs = d.valueOffsets;
        w.jsonString(d.values as Uint8Array, Number(offs[i]!), Number(offs[i + 1]!));
      };
      break;
    case T.Int:
    case T.Bool:
    case T.Duration:
    case T.Decimal:
    // JSON has no NaN / Infinity: in a list they are written bare, as JavaScript prints them.
    case T.Float:
      f = scalarWriter(type);
      break;
    case T.List:
    case T.LargeList: {
      const childField = (type as unknown as { children: Field[] }).children[0]!;
      const item = jsonWriter(childField.type, childField);
      f = (w, d, i) => {
        const offs = d.valueOffsets;
        const child = d.children[0]!;
        writeItems(w, child, Number(offs[i]!), Number(offs[i + 1]!), item);
      };
      break;
    }
    case T.FixedSizeList: {
      const childField = (type as unknown as { children: Field[] }).children[0]!;
      const size = (type as unknown as { listSize: number }).listSize;
      const item = jsonWriter(childField.type, childField);
      f = (w, d, i) => writeItems(w, d.children[0]!, (d.offset + i) * size - d.children[0]!.offset, (d.offset + i + 1) * size - d.children[0]!.offset, item);
      break;
    }
    case T.Struct: {
      const fields = (type as unknown as { children: Field[] }).children;
      const writers = fields.map((c) => jsonWriter(c.type, c));
      const keys = fields.map((c) => JSON.stringify(c.name));
      f = (w, d, i) => {
        w.byte(123);
        for (let k = 0; k < fields.length; k++) {
          if (k) w.ascii(', ');
          w.text(keys[k]!);
          w.ascii(': ');
          const child = d.children[k]!;
          if (isValid(child, i)) writers[k]!(w, child, i);
          else w.ascii('null');
        }
        w.byte(125);
      };
      break;
    }
    case T.Interval: {
      // IntervalUnit: YEAR_MONTH 0, DAY_TIME 1, MONTH_DAY_NANO 2.
      const unit = (type as unknown as { unit: number }).unit;
      f = (w, d, i) => {
        const v = d.values as Int32Array;
        if (unit === 0) {
          w.ascii('{"months": ');
          w.int(v[i]!);
        } else if (unit === 1) {
          w.ascii('{"days": ');
          w.int(v[2 * i]!);
          w.ascii(', "milliseconds": ');
          w.int(v[2 * i + 1]!);
        } else {
          w.ascii('{"months": ');
          w.int(v[4 * i]!);
          w.ascii(', "days": ');
          w.int(v[4 * i + 1]!);
          w.ascii(', "nanoseconds": ');
          w.ascii(new BigInt64Array(v.buffer, v.byteOffset + 16 * i + 8, 1)[0]!.toString());
        }
        w.byte(125);
      };
      break;
    }
    case T.Map: {
      const entries = (type as unknown as { children: Field[] }).children[0]!;
      const [keyField, valueField] = (entries.type as unknown as { children: Field[] }).children as [Field, Field];
      const keyText = textWriter(keyField.type, keyField);
      const value = jsonWriter(valueField.type, valueField);
      const scratch = new ByteWriter(256);
      f = (w, d, i) => {
        const offs = d.valueOffsets;
        const entry = d.children[0]!;
        const [keys, values] = entry.children as [Data, Data];
        w.byte(123);
        for (let k = Number(offs[i]!), end = Number(offs[i + 1]!), first = true; k < end; k++, first = false) {
          if (!first) w.ascii(', ');
          scratch.pos = 0;
          keyText(scratch, keys, k);
          w.jsonString(scratch.buf, 0, scratch.pos);
          w.ascii(': ');
          if (isValid(values, k)) value(w, values, k);
          else w.ascii('null');
        }
        w.byte(125);
      };
      break;
    }
    default: {
      // Dates, timestamps, decimals, binary, dictionaries, …: their text as a JSON string.
      const text = textWriter(type, field);
      const scratch = new ByteWriter(256);
      f = (w, d, i) => {
        scratch.pos = 0;
        text(scratch, d, i);
        w.jsonString(scratch.buf, 0, scratch.pos);
      };
    }
  }
  jsonCache.set(type, f);
  return f;
}

function writeItems(w: ByteWriter, child: Data, from: number, to: number, item: CellWriter): void {
  w.byte(91);
  for (let k = from; k < to; k++) {
    if (k > from) w.ascii(', ');
    if (isValid(child, k)) item(w, child, k);
    else w.ascii('null');
  }
  w.byte(93);
}
