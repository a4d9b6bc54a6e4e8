import type { Data, DataType, Field } from 'apache-arrow';
import { boolValue, NUM_FLOAT, NUM_INT, numberKind, parseFloatSpan, Utf8Sink, writeInt64 } from './cell-parsers.js';
import {
  type ColumnType,
  itemOf,
  kindOf,
  type ListItemSink,
  parseList,
  T_BOOL,
  T_FLOAT,
  T_INT,
  T_LIST,
  T_NULL,
  T_STRING,
} from './column-types.js';
import { type CsvTokenizer, ESCAPED } from './csv-tokenizer.js';
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

  private take<T extends Uint8Array | Int32Array | Float64Array | BigInt64Array>(
    key: string,
    make: (n: number) => T,
    length: number,
    zero: boolean,
  ): T {
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
 * Builds the Arrow data of one column of the tokenizer's current chunk, straight into typed arrays
 * (no Arrow Builders: they are about 6× slower here, see the format notes). Returns undefined when a
 * cell does not fit `type`; the caller then widens the type. The arrays come from `arena` and are
 * valid until the next chunk is built.
 *
 * A column typed T_NULL (nulls only so far) is written as all-null utf8 and fails on any value.
 */
export function buildColumn(tok: CsvTokenizer, col: number, n: number, type: ColumnType, arena: ChunkArena): Data | undefined {
  switch (kindOf(type)) {
    case T_NULL:
      return buildNulls(tok, col, n, arena);
    case T_BOOL:
      return buildBool(tok, col, n, arena);
    case T_INT:
      return buildInt(tok, col, n, arena);
    case T_FLOAT:
      return buildFloat(tok, col, n, arena);
    case T_STRING:
      return buildString(tok, col, n, arena);
    case T_LIST:
      return buildList(tok, col, n, itemOf(type), arena);
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
    default:
      return new A.Utf8();
  }
}

function buildNulls(tok: CsvTokenizer, col: number, n: number, arena: ChunkArena): Data | undefined {
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  for (let r = 0; r < n; r++) if (starts[base + r] !== ends[base + r]) return undefined;
  const A = arrowLib();
  return A.makeData({
    type: new A.Utf8(),
    length: n,
    nullCount: n,
    nullBitmap: arena.bitmap(`${col}v`, n),
    valueOffsets: arena.int32(`${col}o`, n + 1, true),
    data: new Uint8Array(0),
  });
}

function buildBool(tok: CsvTokenizer, col: number, n: number, arena: ChunkArena): Data | undefined {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const valid = arena.bitmap(`${col}v`, n);
  const values = arena.bitmap(`${col}b`, n);
  let nulls = 0;
  for (let r = 0; r < n; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) {
      nulls++;
      continue;
    }
    const v = boolValue(s, a, b);
    if (v < 0) return undefined;
    valid[r >> 3]! |= 1 << (r & 7);
    if (v) values[r >> 3]! |= 1 << (r & 7);
  }
  const A = arrowLib();
  return A.makeData({ type: new A.Bool(), length: n, nullCount: nulls, nullBitmap: valid, data: values });
}

function buildInt(tok: CsvTokenizer, col: number, n: number, arena: ChunkArena): Data | undefined {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  const valid = arena.bitmap(`${col}v`, n);
  const big = arena.int64(`${col}i`, n);
  const lohi = new Int32Array(big.buffer, big.byteOffset, 2 * n);
  let nulls = 0;
  for (let r = 0; r < n; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) {
      nulls++;
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
        if (c < 0 || c > 9) return undefined;
        v = v * 10 + c;
      }
      if (neg) v = -v;
      const hi = Math.floor(v / 4294967296);
      lohi[2 * r] = (v - hi * 4294967296) | 0;
      lohi[2 * r + 1] = hi | 0;
    } else {
      if (flags[base + r]! & ESCAPED || numberKind(s, a, b) !== NUM_INT) return undefined;
      writeInt64(s, a, b, lohi, r, big);
    }
    valid[r >> 3]! |= 1 << (r & 7);
  }
  const A = arrowLib();
  return A.makeData({ type: new A.Int64(), length: n, nullCount: nulls, nullBitmap: valid, data: big });
}

function buildFloat(tok: CsvTokenizer, col: number, n: number, arena: ChunkArena): Data | undefined {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  const valid = arena.bitmap(`${col}v`, n);
  const values = arena.float64(`${col}f`, n);
  let nulls = 0;
  for (let r = 0; r < n; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) {
      nulls++;
      continue;
    }
    if (flags[base + r]! & ESCAPED) return undefined;
    const k = numberKind(s, a, b);
    if (k !== NUM_FLOAT && k !== NUM_INT) return undefined;
    values[r] = parseFloatSpan(s, a, b);
    valid[r >> 3]! |= 1 << (r & 7);
  }
  const A = arrowLib();
  return A.makeData({ type: new A.Float64(), length: n, nullCount: nulls, nullBitmap: valid, data: values });
}

function buildString(tok: CsvTokenizer, col: number, n: number, arena: ChunkArena): Data {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  let total = 0;
  let longest = 0;
  for (let r = 0; r < n; r++) {
    const len = ends[base + r]! - starts[base + r]!;
    total += len;
    if (len > longest) longest = len;
  }
  // Room for every cell as ASCII plus the 3×-per-char reserve of the longest one: ASCII text never regrows.
  const sink = arena.sink(`${col}s`, total + 2 * longest + 16);
  const offsets = arena.int32(`${col}o`, n + 1);
  offsets[0] = 0;
  const valid = arena.bitmap(`${col}v`, n);
  let nulls = 0;
  for (let r = 0; r < n; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) {
      nulls++;
    } else {
      sink.append(s, a, b, (flags[base + r]! & ESCAPED) !== 0);
      valid[r >> 3]! |= 1 << (r & 7);
    }
    offsets[r + 1] = sink.length;
  }
  const A = arrowLib();
  return A.makeData({
    type: new A.Utf8(),
    length: n,
    nullCount: nulls,
    nullBitmap: valid,
    valueOffsets: offsets,
    data: sink.bytes.subarray(0, sink.length),
  });
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

function buildList(tok: CsvTokenizer, col: number, n: number, item: number, arena: ChunkArena): Data | undefined {
  const s = tok.text;
  const base = col * tok.chunkRows;
  const starts = tok.starts;
  const ends = tok.ends;
  const flags = tok.flags;
  const items = arena.listItems(`${col}l`, item === T_NULL ? T_STRING : item);
  const offsets = arena.int32(`${col}o`, n + 1);
  offsets[0] = 0;
  const valid = arena.bitmap(`${col}v`, n);
  let nulls = 0;
  for (let r = 0; r < n; r++) {
    const a = starts[base + r]!;
    const b = ends[base + r]!;
    if (a === b) {
      nulls++;
    } else {
      let got: number;
      if (flags[base + r]! & ESCAPED) {
        const t = s.slice(a, b).replaceAll('""', '"');
        got = parseList(t, 0, t.length, items);
      } else {
        got = parseList(s, a, b, items);
      }
      // A list<null> column (all lists empty or of nulls so far) fails on its first real item.
      if (got < 0 || (item === T_NULL && got !== T_NULL)) return undefined;
      valid[r >> 3]! |= 1 << (r & 7);
    }
    offsets[r + 1] = items.count;
  }
  const A = arrowLib();
  const child = items.data();
  return A.makeData({
    type: new A.List(new A.Field('item', child.type, true) as Field),
    length: n,
    nullCount: nulls,
    nullBitmap: valid,
    valueOffsets: offsets,
    child,
  });
}
