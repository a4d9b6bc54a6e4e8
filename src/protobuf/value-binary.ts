/**
 * Writes parsed JSON as the protobuf binary form of `google.protobuf.Value`, without building protobuf-es
 * messages first. A result is the largest part of most ExecuteResponses, and protobuf-es's reflective
 * `toBinary` costs ~2.7 µs per JSON value (100k values: ~270 ms on the worker that encodes it, blocking
 * the other calls that share that worker); this writer does the same bytes in two tight passes.
 *
 * The bytes are exactly what protobuf-es writes for the same Value (test/runner/value-binary.test.ts
 * compares them), so a client cannot tell which wrote them. Keys are taken with `Object.keys`, so an own
 * `"__proto__"` key of `JSON.parse` output stays data. The recursion is bounded by the caller: results
 * deeper than MAX_RESULT_DEPTH are refused before they get here.
 *
 * Wire layout (google/protobuf/struct.proto): Value { null_value = 1 (varint), number_value = 2
 * (fixed64), string_value = 3, bool_value = 4 (varint), struct_value = 5, list_value = 6 };
 * Struct { map<string, Value> fields = 1 } with entries { key = 1, value = 2 }; ListValue { values = 1 }.
 */

const NULL_VALUE = 0x08; // field 1, varint
const NUMBER_VALUE = 0x11; // field 2, fixed64
const STRING_VALUE = 0x1a; // field 3, length-delimited
const BOOL_VALUE = 0x20; // field 4, varint
const STRUCT_VALUE = 0x2a; // field 5, length-delimited
const LIST_VALUE = 0x32; // field 6, length-delimited
const FIELD_1 = 0x0a; // Struct.fields entry, ListValue.values, map entry key
const ENTRY_VALUE = 0x12; // map entry value (field 2)

/** The bytes of one length-delimited field `fieldNumber` holding `value` as a google.protobuf.Value. */
export function encodeValueField(fieldNumber: number, value: unknown): Uint8Array {
  const sizes: number[] = [];
  const valueSize = sizeOfValue(value, sizes);
  const tag = (fieldNumber << 3) | 2;
  const out = Buffer.allocUnsafe(varintSize(tag) + varintSize(valueSize) + valueSize);
  const w = new Writer(out, sizes);
  w.varint(tag);
  w.varint(valueSize);
  w.value(value);
  if (w.at !== out.length) throw new Error(`value encoding wrote ${w.at} of ${out.length} bytes`);
  return out;
}

/** The encoded size of a Value (without its own tag and length), recording each container's body size. */
function sizeOfValue(v: unknown, sizes: number[]): number {
  if (v === null) return 2;
  switch (typeof v) {
    case 'number':
      return 9;
    case 'boolean':
      return 2;
    case 'string': {
      const n = Buffer.byteLength(v, 'utf8');
      return 1 + varintSize(n) + n;
    }
    case 'object': {
      const slot = sizes.length;
      sizes.push(0);
      let body = 0;
      if (Array.isArray(v)) {
        for (const item of v) {
          const n = sizeOfValue(item, sizes);
          body += 1 + varintSize(n) + n;
        }
      } else {
        const o = v as Record<string, unknown>;
        for (const key of Object.keys(o)) {
          const k = Buffer.byteLength(key, 'utf8');
          const n = sizeOfValue(o[key], sizes);
          const entry = 1 + varintSize(k) + k + 1 + varintSize(n) + n;
          body += 1 + varintSize(entry) + entry;
        }
      }
      sizes[slot] = body;
      return 1 + varintSize(body) + body;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof v}`);
  }
}

/** Writes in the order `sizeOfValue` visited, reading the container sizes it recorded. */
class Writer {
  at = 0;
  private next = 0;
  constructor(
    private readonly out: Buffer,
    private readonly sizes: number[],
  ) {}

  varint(n: number): void {
    while (n > 0x7f) {
      this.out[this.at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.out[this.at++] = n;
  }

  value(v: unknown): void {
    if (v === null) {
      this.out[this.at++] = NULL_VALUE;
      this.out[this.at++] = 0;
      return;
    }
    switch (typeof v) {
      case 'number':
        this.out[this.at++] = NUMBER_VALUE;
        this.at = this.out.writeDoubleLE(v, this.at);
        return;
      case 'boolean':
        this.out[this.at++] = BOOL_VALUE;
        this.out[this.at++] = v ? 1 : 0;
        return;
      case 'string':
        this.out[this.at++] = STRING_VALUE;
        this.string(v);
        return;
      default:
        this.container(v as object);
    }
  }

  private string(s: string): void {
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.at += this.out.write(s, this.at, n, 'utf8');
  }

  private container(v: object): void {
    const body = this.sizes[this.next++]!;
    if (Array.isArray(v)) {
      this.out[this.at++] = LIST_VALUE;
      this.varint(body);
      for (const item of v) this.lengthDelimited(FIELD_1, item);
      return;
    }
    this.out[this.at++] = STRUCT_VALUE;
    this.varint(body);
    const o = v as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      // The entry's size is recomputed from the child's recorded size: the sizes array holds containers only.
      const keyBytes = Buffer.byteLength(key, 'utf8');
      const child = this.peekSize(o[key]);
      const entry = 1 + varintSize(keyBytes) + keyBytes + 1 + varintSize(child) + child;
      this.out[this.at++] = FIELD_1;
      this.varint(entry);
      this.out[this.at++] = FIELD_1;
      this.string(key);
      this.out[this.at++] = ENTRY_VALUE;
      this.varint(child);
      this.value(o[key]);
    }
  }

  private lengthDelimited(tag: number, item: unknown): void {
    this.out[this.at++] = tag;
    this.varint(this.peekSize(item));
    this.value(item);
  }

  /** The encoded size of the Value about to be written: scalars computed, containers from the record. */
  private peekSize(v: unknown): number {
    if (v !== null && typeof v === 'object') {
      const body = this.sizes[this.next]!;
      return 1 + varintSize(body) + body;
    }
    return sizeOfValue(v, this.sizes);
  }
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n >>>= 7;
    size++;
  }
  return size;
}
