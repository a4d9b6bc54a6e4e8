/**
 * Just enough of the Thrift compact protocol to edit Parquet metadata: a struct is read as its list
 * of fields, each keeping the raw bytes of its value, so a field can be re-read as a struct or a
 * list, its integer changed, or written back byte for byte. Values above 2^53 are never decoded
 * into numbers (their raw bytes are copied).
 */

export const T_STOP = 0;
export const T_TRUE = 1;
export const T_FALSE = 2;
export const T_BYTE = 3;
export const T_I16 = 4;
export const T_I32 = 5;
export const T_I64 = 6;
export const T_DOUBLE = 7;
export const T_BINARY = 8;
export const T_LIST = 9;
export const T_SET = 10;
export const T_MAP = 11;
export const T_STRUCT = 12;

export class ThriftError extends Error {
  override readonly name = 'ThriftError';
}

/** A field as read: its id, compact type, and the span of its value bytes in `src`. */
export interface RawField {
  id: number;
  type: number;
  src: Uint8Array;
  start: number;
  end: number;
}

/** A field to write: raw value bytes, an integer, a struct, or a list of structs. */
export type OutField =
  | { id: number; type: number; raw: Uint8Array }
  | { id: number; type: typeof T_I16 | typeof T_I32 | typeof T_I64; int: number }
  | { id: number; type: typeof T_STRUCT; fields: OutField[] }
  | { id: number; type: typeof T_LIST; items: OutField[][] };

class Reader {
  constructor(
    readonly b: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}

  byte(): number {
    if (this.pos >= this.end) throw new ThriftError('unexpected end of the metadata');
    return this.b[this.pos++]!;
  }

  varint(): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      const x = this.byte();
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 128;
    }
    throw new ThriftError('varint too long');
  }

  zigzag(): number {
    const v = this.varint();
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }

  listHeader(): [number, number] {
    const h = this.byte();
    const size = h >> 4 === 15 ? this.varint() : h >> 4;
    if (size > this.end - this.pos) throw new ThriftError('a list is longer than the metadata');
    return [h & 0x0f, size];
  }

  skip(type: number, depth: number): void {
    if (depth > 32) throw new ThriftError('nested too deeply');
    switch (type) {
      case T_TRUE:
      case T_FALSE:
        return;
      case T_BYTE:
        this.byte();
        return;
      case T_I16:
      case T_I32:
      case T_I64:
        this.varint();
        return;
      case T_DOUBLE:
        this.pos += 8;
        break;
      case T_BINARY: {
        // Not `this.pos += this.varint()`: that would read pos before varint() moves it.
        const len = this.varint();
        this.pos += len;
        break;
      }
      case T_LIST:
      case T_SET: {
        const [et, n] = this.listHeader();
        for (let i = 0; i < n; i++) {
          if (et === T_TRUE || et === T_FALSE) this.byte();
          else this.skip(et, depth + 1);
        }
        return;
      }
      case T_MAP: {
        const n = this.varint();
        if (n === 0) return;
        const kv = this.byte();
        for (let i = 0; i < n; i++) {
          this.skip(kv >> 4, depth + 1);
          this.skip(kv & 0x0f, depth + 1);
        }
        return;
      }
      case T_STRUCT: {
        let id = 0;
        for (;;) {
          const h = this.byte();
          const t = h & 0x0f;
          if (t === T_STOP) return;
          id = h >> 4 ? id + (h >> 4) : this.zigzag();
          this.skip(t, depth + 1);
        }
      }
      default:
        throw new ThriftError(`unknown type ${type}`);
    }
    if (this.pos > this.end) throw new ThriftError('a value is longer than the metadata');
  }
}

/** Reads the struct at `src[start, end)` (up to its STOP), returning its fields and where it ended. */
export function readStruct(src: Uint8Array, start: number, end: number): { fields: RawField[]; end: number } {
  const r = new Reader(src, start, end);
  const fields: RawField[] = [];
  let id = 0;
  for (;;) {
    const h = r.byte();
    const type = h & 0x0f;
    if (type === T_STOP) return { fields, end: r.pos };
    id = h >> 4 ? id + (h >> 4) : r.zigzag();
    const s = r.pos;
    r.skip(type, 0);
    fields.push({ id, type, src, start: s, end: r.pos });
  }
}

/** The fields of a struct-typed field. */
export function structOf(f: RawField): RawField[] {
  if (f.type !== T_STRUCT) throw new ThriftError(`field ${f.id} is not a struct`);
  return readStruct(f.src, f.start, f.end).fields;
}

/** The structs of a list-of-structs field. */
export function structListOf(f: RawField): RawField[][] {
  if (f.type !== T_LIST) throw new ThriftError(`field ${f.id} is not a list`);
  const r = new Reader(f.src, f.start, f.end);
  const [et, n] = r.listHeader();
  if (et !== T_STRUCT) throw new ThriftError(`field ${f.id} is not a list of structs`);
  const items: RawField[][] = [];
  for (let i = 0; i < n; i++) {
    const s = readStruct(f.src, r.pos, f.end);
    items.push(s.fields);
    r.pos = s.end;
  }
  return items;
}

/** An integer field's value (exact up to 2^53). */
export function intOf(f: RawField): number {
  if (f.type !== T_I16 && f.type !== T_I32 && f.type !== T_I64) throw new ThriftError(`field ${f.id} is not an integer`);
  return new Reader(f.src, f.start, f.end).zigzag();
}

export function field(fields: RawField[], id: number): RawField | undefined {
  return fields.find((f) => f.id === id);
}

/**
 * A field as read, to be written unchanged. Its bytes are copied: a view would keep the whole source
 * alive (the stitcher keeps fields of every chunk it joins until it writes the footer).
 */
export function keep(f: RawField): OutField {
  return { id: f.id, type: f.type, raw: f.src.slice(f.start, f.end) };
}

/** Serialises a struct's fields (in the order given) and its STOP. */
export class CompactWriter {
  private buf = new Uint8Array(4096);
  length = 0;

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.length + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  private byte(b: number): void {
    this.ensure(1);
    this.buf[this.length++] = b;
  }

  private varint(v: number): void {
    this.ensure(10);
    while (v >= 128) {
      this.buf[this.length++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.length++] = v;
  }

  private zigzag(v: number): void {
    this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  private raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.length);
    this.length += bytes.length;
  }

  struct(fields: OutField[]): void {
    let last = 0;
    for (const f of fields) {
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) {
        this.byte((delta << 4) | f.type);
      } else {
        this.byte(f.type);
        this.zigzag(f.id);
      }
      last = f.id;
      if ('raw' in f) this.raw(f.raw);
      else if ('int' in f) this.zigzag(f.int);
      else if ('fields' in f) this.struct(f.fields);
      else {
        const n = f.items.length;
        if (n < 15) this.byte((n << 4) | T_STRUCT);
        else {
          this.byte(0xf0 | T_STRUCT);
          this.varint(n);
        }
        for (const item of f.items) this.struct(item);
      }
    }
    this.byte(T_STOP);
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}
