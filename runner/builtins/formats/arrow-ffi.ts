import type { Data, DataType, Field, Schema } from 'apache-arrow';
import { arrowLib } from './format-libs.js';

/**
 * Reads the record batches of a parquet-wasm table through the Arrow C Data Interface, as
 * apache-arrow `Data` whose buffers are views into the wasm memory: no copy at all.
 *
 * Why: the documented way out of parquet-wasm (`intoIPCStream` → `tableFromIPC`) encodes every
 * decoded row group as an IPC stream inside wasm and copies it into a fresh JS buffer. For a 100 MB
 * CSV that is ~100 MB of buffers that die at once but are freed only when V8 gets round to it (tens
 * of MiB of peak RSS), plus the encoding time.
 *
 * The views are valid until the FFI stream is dropped or parquet-wasm is called again (a call may grow
 * the wasm memory, which detaches every view): the caller writes the batches, then drops the stream.
 *
 * Only the types whose C layout is plain (numbers, booleans, dates and times, decimals, strings and
 * binaries, lists and structs of these) are read this way, and only arrays without offsets; for a
 * schema with anything else `ffiReadable` is false, and for a batch that does not look exactly like
 * the schema (its format strings, buffer and child counts), `importFfiBatch` gives undefined: the
 * caller then reads through IPC as before.
 *
 * Layout on wasm32 (pointers are 4 bytes, int64 8-aligned):
 *   ArrowSchema: format 0, name 4, metadata 8, flags 16, n_children 24, children 32, dictionary 36, …
 *   ArrowArray: length 0, null_count 8, offset 16, n_buffers 24, n_children 32, buffers 40, children 44, dictionary 48, …
 */

/** Whether every column of `schema` has a type read through FFI. */
export function ffiReadable(schema: Schema): boolean {
  return schema.fields.every((f) => expectedFormat(f.type) !== undefined);
}

/**
 * The record batch whose ArrowArray is at `arrayAddr` (its ArrowSchema at `schemaAddr`), as the
 * columns of `schema` (one Data per field) and its row count, or undefined when the batch is not
 * laid out as expected.
 */
export function importFfiBatch(memory: ArrayBuffer, arrayAddr: number, schemaAddr: number, schema: Schema): { columns: Data[]; rows: number } | undefined {
  try {
    const r = new FfiReader(memory);
    const fields = schema.fields;
    if (!r.matches(schemaAddr, '+s', fields.length) || !r.plainArray(arrayAddr, 1, fields.length)) return undefined;
    const rows = r.i64(arrayAddr);
    const columns: Data[] = [];
    for (let c = 0; c < fields.length; c++) {
      const data = r.data(r.child(arrayAddr, c), r.schemaChild(schemaAddr, c), fields[c]!.type);
      if (!data || data.length !== rows) return undefined;
      columns.push(data);
    }
    return { columns, rows };
  } catch {
    // A pointer outside the wasm memory (a RangeError from a DataView): not as expected either.
    return undefined;
  }
}

/** The C Data Interface format string of an Arrow type, for the types read through FFI. */
function expectedFormat(type: DataType): string | undefined {
  const A = arrowLib();
  const T = A.Type;
  const t = type as unknown as {
    bitWidth: number;
    isSigned: boolean;
    precision: number;
    unit: number;
    timezone?: string | null;
    scale: number;
    byteWidth: number;
    listSize: number;
    children: Field[];
  };
  const unit = (u: number) => 'smun'[u]!; // TimeUnit SECOND, MILLISECOND, MICROSECOND, NANOSECOND
  switch (type.typeId) {
    case T.Int: {
      const f = ({ 8: 'c', 16: 's', 32: 'i', 64: 'l' } as Record<number, string>)[t.bitWidth];
      return f && (t.isSigned ? f : f.toUpperCase());
    }
    case T.Float:
      return 'efg'[t.precision];
    case T.Bool:
      return 'b';
    case T.Utf8:
      return 'u';
    case T.LargeUtf8:
      return 'U';
    case T.Binary:
      return 'z';
    case T.LargeBinary:
      return 'Z';
    case T.FixedSizeBinary:
      return `w:${t.byteWidth}`;
    case T.Date:
      return t.unit === A.DateUnit.DAY ? 'tdD' : 'tdm';
    case T.Timestamp:
      return `ts${unit(t.unit)}:${t.timezone ?? ''}`;
    case T.Time:
      return `tt${unit(t.unit)}`;
    case T.Duration:
      return `tD${unit(t.unit)}`;
    case T.Decimal:
      return `d:${t.precision},${t.scale}${t.bitWidth === 128 ? '' : `,${t.bitWidth}`}`;
    case T.List:
    case T.LargeList:
    case T.FixedSizeList:
    case T.Struct: {
      if (!t.children.every((c) => expectedFormat(c.type) !== undefined)) return undefined;
      return type.typeId === T.List ? '+l' : type.typeId === T.LargeList ? '+L' : type.typeId === T.Struct ? '+s' : `+w:${t.listSize}`;
    }
    default:
      return undefined;
  }
}

class FfiReader {
  private readonly view: DataView;
  private readonly bytes: Uint8Array;

  constructor(private readonly memory: ArrayBuffer) {
    this.view = new DataView(memory);
    this.bytes = new Uint8Array(memory);
  }

  i64(at: number): number {
    return Number(this.view.getBigInt64(at, true));
  }

  ptr(at: number): number {
    return this.view.getUint32(at, true);
  }

  child(array: number, i: number): number {
    return this.ptr(this.ptr(array + 44) + 4 * i);
  }

  schemaChild(schema: number, i: number): number {
    return this.ptr(this.ptr(schema + 32) + 4 * i);
  }

  /** The schema node has this format and child count. */
  matches(schema: number, format: string, children: number): boolean {
    if (schema === 0 || this.i64(schema + 24) !== children) return false;
    const p = this.ptr(schema);
    for (let i = 0; i < format.length; i++) if (this.bytes[p + i] !== format.charCodeAt(i)) return false;
    return this.bytes[p + format.length] === 0;
  }

  /** The array node has no offset, no dictionary, and these buffer and child counts. */
  plainArray(array: number, buffers: number, children: number): boolean {
    return array !== 0 && this.i64(array + 16) === 0 && this.i64(array + 24) === buffers && this.i64(array + 32) === children && this.ptr(array + 48) === 0;
  }

  /** Buffer `i` of an array (0 when absent). */
  buffer(array: number, i: number): number {
    return this.ptr(this.ptr(array + 40) + 4 * i);
  }

  /** A typed-array view of `count` elements at `at`, or undefined when it is misaligned or out of bounds. */
  viewOf<T>(Ctor: { new (b: ArrayBuffer, o: number, n: number): T; BYTES_PER_ELEMENT: number }, at: number, count: number): T | undefined {
    const size = Ctor.BYTES_PER_ELEMENT;
    if (count === 0) return new Ctor(this.memory, 0, 0);
    if (at === 0 || at % size !== 0 || at + count * size > this.memory.byteLength) return undefined;
    return new Ctor(this.memory, at, count);
  }

  /** The validity bitmap of an array of `length` values (null when it has none). */
  validity(array: number, length: number): Uint8Array | null | undefined {
    const at = this.buffer(array, 0);
    if (at === 0) return null;
    return this.viewOf(Uint8Array, at, (length + 7) >> 3);
  }

  data(array: number, schema: number, type: DataType): Data | undefined {
    const A = arrowLib();
    const T = A.Type;
    const format = expectedFormat(type);
    if (format === undefined) return undefined;
    const children = (type as unknown as { children?: Field[] }).children ?? [];
    const nested = type.typeId === T.List || type.typeId === T.LargeList || type.typeId === T.FixedSizeList || type.typeId === T.Struct;
    const nChildren = nested ? children.length : 0;
    const nBuffers =
      type.typeId === T.Struct || type.typeId === T.FixedSizeList
        ? 1
        : type.typeId === T.Utf8 || type.typeId === T.LargeUtf8 || type.typeId === T.Binary || type.typeId === T.LargeBinary
          ? 3
          : 2;
    if (!this.matches(schema, format, nChildren) || !this.plainArray(array, nBuffers, nChildren)) return undefined;
    const length = this.i64(array);
    const nullCount = this.i64(array + 8);
    const nullBitmap = this.validity(array, length);
    if (nullBitmap === undefined) return undefined;
    // With no bitmap there are no nulls, whatever null_count says.
    const common = { type, length, nullCount: nullBitmap ? nullCount : 0, nullBitmap: nullBitmap ?? new Uint8Array(0) };
    switch (type.typeId) {
      case T.Bool: {
        const values = this.viewOf(Uint8Array, this.buffer(array, 1), (length + 7) >> 3);
        return values && A.makeData({ ...common, data: values } as never);
      }
      case T.Utf8:
      case T.Binary:
      case T.LargeUtf8:
      case T.LargeBinary: {
        const large = type.typeId === T.LargeUtf8 || type.typeId === T.LargeBinary;
        const offsets = large ? this.viewOf(BigInt64Array, this.buffer(array, 1), length + 1) : this.viewOf(Int32Array, this.buffer(array, 1), length + 1);
        if (!offsets) return undefined;
        const end = Number(offsets[length] ?? 0);
        const values = end === 0 ? new Uint8Array(0) : this.viewOf(Uint8Array, this.buffer(array, 2), end);
        return values && A.makeData({ ...common, valueOffsets: offsets, data: values } as never);
      }
      case T.List:
      case T.LargeList: {
        const large = type.typeId === T.LargeList;
        const offsets = large ? this.viewOf(BigInt64Array, this.buffer(array, 1), length + 1) : this.viewOf(Int32Array, this.buffer(array, 1), length + 1);
        if (!offsets) return undefined;
        const child = this.data(this.child(array, 0), this.schemaChild(schema, 0), children[0]!.type);
        if (!child || child.length < Number(offsets[length] ?? 0)) return undefined;
        return A.makeData({ ...common, valueOffsets: offsets, child } as never);
      }
      case T.FixedSizeList: {
        const child = this.data(this.child(array, 0), this.schemaChild(schema, 0), children[0]!.type);
        const size = (type as unknown as { listSize: number }).listSize;
        if (!child || child.length < length * size) return undefined;
        return A.makeData({ ...common, child } as never);
      }
      case T.Struct: {
        const kids: Data[] = [];
        for (let k = 0; k < children.length; k++) {
          const child = this.data(this.child(array, k), this.schemaChild(schema, k), children[k]!.type);
          if (!child || child.length < length) return undefined;
          kids.push(child);
        }
        return A.makeData({ ...common, children: kids } as never);
      }
      default: {
        // Fixed-width values: as many elements of the type's array type as apache-arrow's IPC reader makes.
        const Ctor = (type as unknown as { ArrayType: { new (b: ArrayBuffer, o: number, n: number): ArrayBufferView; BYTES_PER_ELEMENT: number } }).ArrayType;
        const t = type as unknown as { bitWidth: number; byteWidth: number };
        const stride = type.typeId === T.Decimal ? t.bitWidth / 32 : type.typeId === T.FixedSizeBinary ? t.byteWidth : 1;
        const values = this.viewOf(Ctor, this.buffer(array, 1), length * stride);
        return values && A.makeData({ ...common, data: values } as never);
      }
    }
  }
}
