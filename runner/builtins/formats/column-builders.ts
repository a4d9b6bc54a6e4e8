import type { Data, DataType, Field } from 'apache-arrow';
import { boolValue, NUM_FLOAT, NUM_INT, numberKind, parseFloatSpan, Utf8Sink, writeInt64 } from './cell-parsers.js';
import {
  type ColumnType,
  dateCellType,
  itemOf,
  kindOf,
  type ListItemSink,
  parseList,
  T_BOOL,
  T_DATE,
  T_FLOAT,
  T_INT,
  T_LIST,
  T_NULL,
  T_STRING,
  T_TIMESTAMP,
  TS_NANOS,
  TS_ZONED,
  timestampFits,
} from './column-types.js';
import { type CsvTokenizer, ESCAPED } from './csv-tokenizer.js';
import { parsedDate, writeScaled } from './date-cells.js';
import { arrowLib } from './format-libs.js';

/**
 * The typed arrays of the chunk being built, reused from chunk to chunk: a chunk's arrays are dead as
 * soon as it is encoded, and allocating fresh ones per chunk raised peak RSS by tens of MiB on a
 * 100 MB CSV (dead ArrayBuffers are collected late, and the allocator keeps what they freed).
 */
export class ChunkArena {
  private readonly arrays = new Map<string, Uint8Array | Int32Array | Float64Array | BigInt64Array>();
  private readonly sinks = new Map<string, Utf8Sink>();
  private readonly lists = new Map<string, ListItems>();

  private take<T extends Uint8Array | Int32Array | Float64Array | BigInt64Array>(key: string, make: (n: number) => T, length: number, zero: boolean): T {
    let a = this.arrays.get(key) as T | undefined;
    if (!a || a.length < length) {
      a = make(Math.max(length, a ? a.length * 2 : 0));
      this.arrays.set(key, a);
    } else if (zero) {
      new Uint8Array(a.buffer, a.byteOffset, length * a.BYTES_PER_ELEMENT).fill(0);
    }
    return a.subarray(0, length) as T;
  }

  /** A zeroed bitmap for n values. */
  bitmap(key: string, n: number): Uint8Array {
    return this.take(key, (k) => new Uint8Array(k), (n + 7) >> 3, true);
  }

  int32(key: string, n: number, zero = false): Int32Array {
    return this.take(key, (k) => new Int32Array(k), n, zero);
  }

  float64(key: string, n: number): Float64Array {
    return this.take(key, (k) => new Float64Array(k), n, false);
  }

  /** Zeroed: null slots of an int64 column must hold something, and 0 keeps the output deterministic. */
  int64(key: string, n: number): BigInt64Array {
    return this.take(key, (k) => new BigInt64Array(k), n, true);
  }

  sink(key: string, capacity: number): Utf8Sink {
    let s = this.sinks.get(key);
    if (!s) {
      s = new Utf8Sink(capacity);
      this.sinks.set(key, s);
    }
    s.length = 0;
    s.reserve(capacity);
    return s;
  }

  listItems(key: string, kind: number): ListItems {
    let l = this.lists.get(key);
    if (!l || l.kind !== kind) {
      l = new ListItems(kind);
      this.lists.set(key, l);
    }
    l.reset();
    return l;
  }
}

/**
 * Rows each column is built for in one pass before the next column's turn. The cells of one column
 * are spread over the whole chunk of CSV text (one row of each column every few hundred bytes);
 * built column by column over a 16,384-row chunk (~15 MB of UTF-16), nearly every cell was a cache
 * miss. Over a block of 2,048 rows every column reads from the same ~2 MB, which stays in the CPU
 * cache, the more so when the block was just tokenized (csv-to-parquet.ts reads chunks a block at a
 * time). Measured on the bench CSV: the column builds took ~330 ms instead of ~570.
 */
export const BLOCK_ROWS = 2048;

/**
 * Builds the Arrow data of every column of one chunk, straight into typed arrays (no Arrow Builders:
 * they are about 6× slower here, see the format notes), as the tokenizer's rows come in: `buildTo`
 * after each read, `finish` at the end of the chunk. The arrays come from `arena`, sized for a whole
 * chunk, and are valid until the next chunk is built.
 */
export class ChunkBuilder {
  private readonly builders: ColumnBuilder[];
  private built = 0;

  constructor(tok: CsvTokenizer, types: readonly ColumnType[], arena: ChunkArena) {
    this.builders = types.map((type, col) => columnBuilder(tok, col, tok.chunkRows, type, arena));
  }

  /** Builds rows [built so far, n) of every column, block by block; false when a cell does not fit its column's type (the caller then widens the types). */
  buildTo(n: number): boolean {
    for (let r0 = this.built; r0 < n; r0 += BLOCK_ROWS) {
      const r1 = Math.min(n, r0 + BLOCK_ROWS);
      for (const b of this.builders) if (!b.rows(r0, r1)) return false;
    }
    this.built = n;
    return true;
  }

  /** The columns of the chunk's n rows. */
  finish(n: number): Data[] {
    return this.builders.map((b) => b.finish(n));
  }
}

/** Builds one column of a chunk: `rows` for consecutive ranges of rows (false when a cell does not fit), then `finish`. */
interface ColumnBuilder {
  rows(r0: number, r1: number): boolean;
  finish(n: number): Data;
}

/** A column typed T_NULL (nulls only so far) is written as all-null utf8 and fails on any value. */
function columnBuilder(tok: CsvTokenizer, col: number, capacity: number, type: ColumnType, arena: ChunkArena): ColumnBuilder {
  switch (kindOf(type)) {
    case T_NULL:
      return new NullsBuilder(tok, col, arena);
    case T_BOOL:
      return new BoolBuilder(tok, col, capacity, arena);
    case T_INT:
      return new IntBuilder(tok, col, capacity, arena);
    case T_FLOAT:
      return new FloatBuilder(tok, col, capacity, arena);
    case T_STRING:
      return new StringBuilder(tok, col, capacity, arena);
    case T_LIST:
      return new ListBuilder(tok, col, capacity, itemOf(type), arena);
    case T_DATE:
      return new DateBuilder(tok, col, capacity, arena);
    case T_TIMESTAMP:
      return new TimestampBuilder(tok, col, capacity, type, arena);
    default:
      throw new Error(`unknown column type ${type}`);
  }
}

/** The Arrow type a column type is written as (T_NULL columns are utf8; list items are nullable). */
export function arrowType(type: ColumnType): DataType {
  const A = arrowLib();
  switch (kindOf(type)) {
    case T_BOOL:
      return new A.Bool();
    case T_INT:
      return new A.Int64();
    case T_FLOAT:
      return new A.Float64();
    case T_LIST: {
      const item = itemOf(type);
      return new A.List(new A.Field('item', arrowType(item === T_NULL ? T_STRING : item), true) as Field);
    }
    case T_DATE:
      return new A.DateDay();
    case T_TIMESTAMP:
      return new A.Timestamp(type & TS_NANOS ? A.TimeUnit.NANOSECOND : A.TimeUnit.MICROSECOND, type & TS_ZONED ? 'UTC' : null);
    default:
      return new A.Utf8();
  }
}

/** What every builder reads: the text and the spans of its column in the current chunk. */
abstract class SpanReader {
  protected readonly s: string;
  protected readonly base: number;
  protected readonly starts: Int32Array;
  protected readonly ends: Int32Array;
  protected readonly flags: Uint8Array;
  protected nulls = 0;

  constructor(tok: CsvTokenizer, col: number) {
    this.s = tok.text;
    this.base = col * tok.chunkRows;
    this.starts = tok.starts;
    this.ends = tok.ends;
    this.flags = tok.flags;
  }
}

class NullsBuilder extends SpanReader implements ColumnBuilder {
  constructor(
    tok: CsvTokenizer,
    private readonly col: number,
    private readonly arena: ChunkArena,
  ) {
    super(tok, col);
  }

  rows(r0: number, r1: number): boolean {
    for (let r = r0; r < r1; r++) if (this.starts[this.base + r] !== this.ends[this.base + r]) return false;
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({
      type: new A.Utf8(),
      length: n,
      nullCount: n,
      nullBitmap: this.arena.bitmap(`${this.col}v`, n),
      valueOffsets: this.arena.int32(`${this.col}o`, n + 1, true),
      data: new Uint8Array(0),
    });
  }
}

class BoolBuilder extends SpanReader implements ColumnBuilder {
  private readonly valid: Uint8Array;
  private readonly values: Uint8Array;

  constructor(tok: CsvTokenizer, col: number, capacity: number, arena: ChunkArena) {
    super(tok, col);
    this.valid = arena.bitmap(`${col}v`, capacity);
    this.values = arena.bitmap(`${col}b`, capacity);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, valid, values } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
        continue;
      }
      const v = boolValue(s, a, b);
      if (v < 0) return false;
      valid[r >> 3]! |= 1 << (r & 7);
      if (v) values[r >> 3]! |= 1 << (r & 7);
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({ type: new A.Bool(), length: n, nullCount: this.nulls, nullBitmap: bitsFor(this.valid, n), data: bitsFor(this.values, n) });
  }
}

/** The bytes of a bitmap that hold n bits. */
function bitsFor(bitmap: Uint8Array, n: number): Uint8Array {
  return bitmap.subarray(0, (n + 7) >> 3);
}

class IntBuilder extends SpanReader implements ColumnBuilder {
  private readonly valid: Uint8Array;
  private readonly big: BigInt64Array;
  private readonly lohi: Int32Array;

  constructor(tok: CsvTokenizer, col: number, capacity: number, arena: ChunkArena) {
    super(tok, col);
    this.valid = arena.bitmap(`${col}v`, capacity);
    this.big = arena.int64(`${col}i`, capacity);
    this.lohi = new Int32Array(this.big.buffer, this.big.byteOffset, 2 * capacity);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, valid, big, lohi } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
        continue;
      }
      // Fast path: up to 15 digits, no leading zero.
      let i = a;
      let c = s.charCodeAt(i);
      const neg = c === 45;
      if (neg) c = s.charCodeAt(++i);
      const digits = b - i;
      if (digits > 0 && digits <= 15 && c >= 49 && c <= 57) {
        let v = 0;
        for (; i < b; i++) {
          c = s.charCodeAt(i) - 48;
          if (c < 0 || c > 9) return false;
          v = v * 10 + c;
        }
        if (neg) v = -v;
        const hi = Math.floor(v / 4294967296);
        lohi[2 * r] = (v - hi * 4294967296) | 0;
        lohi[2 * r + 1] = hi | 0;
      } else {
        if (flags[base + r]! & ESCAPED || numberKind(s, a, b) !== NUM_INT) return false;
        writeInt64(s, a, b, lohi, r, big);
      }
      valid[r >> 3]! |= 1 << (r & 7);
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({ type: new A.Int64(), length: n, nullCount: this.nulls, nullBitmap: bitsFor(this.valid, n), data: this.big.subarray(0, n) });
  }
}

class FloatBuilder extends SpanReader implements ColumnBuilder {
  private readonly valid: Uint8Array;
  private readonly values: Float64Array;

  constructor(tok: CsvTokenizer, col: number, capacity: number, arena: ChunkArena) {
    super(tok, col);
    this.valid = arena.bitmap(`${col}v`, capacity);
    this.values = arena.float64(`${col}f`, capacity);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, valid, values } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
        continue;
      }
      if (flags[base + r]! & ESCAPED) return false;
      const k = numberKind(s, a, b);
      if (k !== NUM_FLOAT && k !== NUM_INT) return false;
      values[r] = parseFloatSpan(s, a, b);
      valid[r >> 3]! |= 1 << (r & 7);
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({ type: new A.Float64(), length: n, nullCount: this.nulls, nullBitmap: bitsFor(this.valid, n), data: this.values.subarray(0, n) });
  }
}

class DateBuilder extends SpanReader implements ColumnBuilder {
  private readonly valid: Uint8Array;
  private readonly values: Int32Array;

  constructor(tok: CsvTokenizer, col: number, capacity: number, arena: ChunkArena) {
    super(tok, col);
    this.valid = arena.bitmap(`${col}v`, capacity);
    // Zeroed: null slots hold 0 so that the output is deterministic.
    this.values = arena.int32(`${col}d`, capacity, true);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, valid, values } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
        continue;
      }
      if (flags[base + r]! & ESCAPED || dateCellType(s, a, b) !== T_DATE) return false;
      values[r] = parsedDate.days;
      valid[r >> 3]! |= 1 << (r & 7);
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({ type: new A.DateDay(), length: n, nullCount: this.nulls, nullBitmap: bitsFor(this.valid, n), data: this.values.subarray(0, n) });
  }
}

/** A timestamp column in microseconds or nanoseconds (see column-types.ts for the unit and zone). */
class TimestampBuilder extends SpanReader implements ColumnBuilder {
  private readonly valid: Uint8Array;
  private readonly big: BigInt64Array;
  private readonly lohi: Int32Array;
  private readonly perSecond: number;
  private readonly nanosPerUnit: number;

  constructor(
    tok: CsvTokenizer,
    col: number,
    capacity: number,
    private readonly type: ColumnType,
    arena: ChunkArena,
  ) {
    super(tok, col);
    this.valid = arena.bitmap(`${col}v`, capacity);
    this.big = arena.int64(`${col}i`, capacity);
    this.lohi = new Int32Array(this.big.buffer, this.big.byteOffset, 2 * capacity);
    const nanos = (type & TS_NANOS) !== 0;
    this.perSecond = nanos ? 1e9 : 1e6;
    this.nanosPerUnit = nanos ? 1 : 1000;
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, valid, lohi, type, perSecond, nanosPerUnit } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
        continue;
      }
      if (flags[base + r]! & ESCAPED || !timestampFits(type, dateCellType(s, a, b))) return false;
      writeScaled(parsedDate.seconds, perSecond, parsedDate.nanos / nanosPerUnit, lohi, r);
      valid[r >> 3]! |= 1 << (r & 7);
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    const type = arrowType(this.type) as InstanceType<typeof A.Timestamp>;
    return A.makeData({ type, length: n, nullCount: this.nulls, nullBitmap: bitsFor(this.valid, n), data: this.big.subarray(0, n) });
  }
}

class StringBuilder extends SpanReader implements ColumnBuilder {
  private readonly sink: Utf8Sink;
  private readonly offsets: Int32Array;
  private readonly valid: Uint8Array;

  constructor(tok: CsvTokenizer, col: number, capacity: number, arena: ChunkArena) {
    super(tok, col);
    this.sink = arena.sink(`${col}s`, 0);
    this.offsets = arena.int32(`${col}o`, capacity + 1);
    this.offsets[0] = 0;
    this.valid = arena.bitmap(`${col}v`, capacity);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, sink, offsets, valid } = this;
    let total = 0;
    let longest = 0;
    for (let r = r0; r < r1; r++) {
      const len = ends[base + r]! - starts[base + r]!;
      total += len;
      if (len > longest) longest = len;
    }
    // Room for every cell as ASCII plus the 3×-per-char reserve of the longest one: ASCII text never regrows.
    sink.reserve(total + 2 * longest + 16);
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
      } else {
        sink.append(s, a, b, (flags[base + r]! & ESCAPED) !== 0);
        valid[r >> 3]! |= 1 << (r & 7);
      }
      offsets[r + 1] = sink.length;
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    return A.makeData({
      type: new A.Utf8(),
      length: n,
      nullCount: this.nulls,
      nullBitmap: bitsFor(this.valid, n),
      valueOffsets: this.offsets.subarray(0, n + 1),
      data: this.sink.bytes.subarray(0, this.sink.length),
    });
  }
}

/** Collects the items of a list column: values of one kind plus their validity. */
export class ListItems implements ListItemSink {
  count = 0;
  nulls = 0;
  valid = new Uint8Array(1024 >> 3);
  // T_INT
  big = new BigInt64Array(0);
  lohi = new Int32Array(0);
  // T_FLOAT
  floats = new Float64Array(0);
  // T_BOOL
  bools = new Uint8Array(0);
  // T_STRING (and T_NULL, written as utf8)
  sink: Utf8Sink | undefined;
  offsets = new Int32Array(0);

  private cap = 1024;

  constructor(readonly kind: number) {
    const cap = this.cap;
    if (kind === T_INT) {
      this.big = new BigInt64Array(cap);
      this.lohi = new Int32Array(this.big.buffer);
    } else if (kind === T_FLOAT) {
      this.floats = new Float64Array(cap);
    } else if (kind === T_BOOL) {
      this.bools = new Uint8Array(cap >> 3);
    } else {
      this.sink = new Utf8Sink(cap * 8);
      this.offsets = new Int32Array(cap + 1);
    }
  }

  /** Empties it for the next chunk, keeping its arrays. */
  reset(): void {
    this.valid.fill(0, 0, Math.min(this.valid.length, (this.count + 7) >> 3));
    if (this.kind === T_BOOL) this.bools.fill(0, 0, Math.min(this.bools.length, (this.count + 7) >> 3));
    if (this.kind === T_INT) this.big.fill(0n, 0, this.count);
    this.count = 0;
    this.nulls = 0;
    if (this.sink) this.sink.length = 0;
  }

  /** Makes room for one more item. */
  private grow(): void {
    if (this.count < this.cap) return;
    const cap = this.cap * 2;
    const valid = new Uint8Array(cap >> 3);
    valid.set(this.valid);
    this.valid = valid;
    if (this.kind === T_INT) {
      const big = new BigInt64Array(cap);
      big.set(this.big);
      this.big = big;
      this.lohi = new Int32Array(big.buffer);
    } else if (this.kind === T_FLOAT) {
      const f = new Float64Array(cap);
      f.set(this.floats);
      this.floats = f;
    } else if (this.kind === T_BOOL) {
      const b = new Uint8Array(cap >> 3);
      b.set(this.bools);
      this.bools = b;
    } else {
      const o = new Int32Array(cap + 1);
      o.set(this.offsets);
      this.offsets = o;
    }
    this.cap = cap;
  }

  private push(valid: boolean): number {
    this.grow();
    const k = this.count++;
    if (valid) this.valid[k >> 3]! |= 1 << (k & 7);
    else this.nulls++;
    if (this.sink) this.offsets[k + 1] = this.sink.length;
    return k;
  }

  nullItem(): boolean {
    this.push(false);
    return true;
  }

  boolItem(v: boolean): boolean {
    if (this.kind !== T_BOOL) return false;
    const k = this.push(true);
    if (v) this.bools[k >> 3]! |= 1 << (k & 7);
    return true;
  }

  numberItem(s: string, a: number, b: number, kind: number): boolean {
    if (this.kind === T_FLOAT) {
      const k = this.push(true);
      this.floats[k] = parseFloatSpan(s, a, b);
      return true;
    }
    if (this.kind !== T_INT || kind !== T_INT) return false;
    const k = this.push(true);
    writeInt64(s, a, b, this.lohi, k, this.big);
    return true;
  }

  intItem(v: number): boolean {
    if (this.kind === T_FLOAT) {
      const k = this.push(true);
      this.floats[k] = v;
      return true;
    }
    if (this.kind !== T_INT) return false;
    const k = this.push(true);
    const hi = Math.floor(v / 4294967296);
    this.lohi[2 * k] = (v - hi * 4294967296) | 0;
    this.lohi[2 * k + 1] = hi | 0;
    return true;
  }

  stringItem(s: string, a: number, b: number, decoded: string | undefined): boolean {
    if (this.kind !== T_STRING) return false;
    this.grow();
    const k = this.count++;
    this.valid[k >> 3]! |= 1 << (k & 7);
    if (decoded === undefined) this.sink!.append(s, a, b, false);
    else this.sink!.append(decoded, 0, decoded.length, false);
    this.offsets[k + 1] = this.sink!.length;
    return true;
  }

  data(): Data {
    const A = arrowLib();
    const n = this.count;
    const common = { length: n, nullCount: this.nulls, nullBitmap: this.valid.subarray(0, (n + 7) >> 3) };
    switch (this.kind) {
      case T_INT:
        return A.makeData({ type: new A.Int64(), ...common, data: this.big.subarray(0, n) });
      case T_FLOAT:
        return A.makeData({ type: new A.Float64(), ...common, data: this.floats.subarray(0, n) });
      case T_BOOL:
        return A.makeData({ type: new A.Bool(), ...common, data: this.bools.subarray(0, (n + 7) >> 3) });
      default:
        return A.makeData({
          type: new A.Utf8(),
          ...common,
          valueOffsets: this.offsets.subarray(0, n + 1),
          data: this.sink!.bytes.subarray(0, this.sink!.length),
        });
    }
  }
}

class ListBuilder extends SpanReader implements ColumnBuilder {
  private readonly items: ListItems;
  private readonly offsets: Int32Array;
  private readonly valid: Uint8Array;

  constructor(
    tok: CsvTokenizer,
    col: number,
    capacity: number,
    private readonly item: number,
    arena: ChunkArena,
  ) {
    super(tok, col);
    this.items = arena.listItems(`${col}l`, item === T_NULL ? T_STRING : item);
    this.offsets = arena.int32(`${col}o`, capacity + 1);
    this.offsets[0] = 0;
    this.valid = arena.bitmap(`${col}v`, capacity);
  }

  rows(r0: number, r1: number): boolean {
    const { s, base, starts, ends, flags, items, offsets, valid, item } = this;
    for (let r = r0; r < r1; r++) {
      const a = starts[base + r]!;
      const b = ends[base + r]!;
      if (a === b) {
        this.nulls++;
      } else {
        const got = parseList(s, a, b, items, (flags[base + r]! & ESCAPED) !== 0);
        // A list<null> column (all lists empty or of nulls so far) fails on its first real item.
        if (got < 0 || (item === T_NULL && got !== T_NULL)) return false;
        valid[r >> 3]! |= 1 << (r & 7);
      }
      offsets[r + 1] = items.count;
    }
    return true;
  }

  finish(n: number): Data {
    const A = arrowLib();
    const child = this.items.data();
    return A.makeData({
      type: new A.List(new A.Field('item', child.type, true) as Field),
      length: n,
      nullCount: this.nulls,
      nullBitmap: bitsFor(this.valid, n),
      valueOffsets: this.offsets.subarray(0, n + 1),
      child,
    });
  }
}
