import { ByteWriter } from './byte-writer.js';
import { MiB } from './conversion-guard.js';
import {
  CompactWriter,
  field,
  intOf,
  keep,
  type OutField,
  type RawField,
  readStruct,
  structListOf,
  structOf,
  T_I16,
  T_I64,
  T_I32,
  T_LIST,
  T_STRUCT,
} from './thrift-compact.js';

/**
 * Joins Parquet files that share one schema into a single file, row group after row group.
 *
 * Why: parquet-wasm's only synchronous writer takes a whole Arrow table, which must sit in wasm
 * memory together with a copy of its IPC bytes, so writing a 100 MB CSV in one call holds ~250 MiB of
 * wasm memory (which a wasm instance never gives back). Writing each chunk of rows as its own small
 * file and joining them keeps that to one chunk.
 *
 * It also cuts a file down to some of its row groups (parquet2csv reads a few row groups at a time,
 * and parquet-wasm copies the whole file it is given into wasm memory for every read).
 *
 * How: a Parquet file is `PAR1`, the column chunks of its row groups, optional page indexes (column
 * index and offset index per column chunk), then the footer (Thrift FileMetaData), its length and
 * `PAR1`. Joining copies each column chunk, shifts every absolute offset that points into it by where
 * it now starts (ColumnChunk.file_offset, the data / dictionary / index page offsets of ColumnMetaData,
 * and the page offsets inside its offset index), sets RowGroup.file_offset, writes all page indexes
 * after the data, and writes one footer: the first file's, with the row count summed and the row groups
 * of all files (numbered in order). Bloom filters are not carried over (parquet-wasm does not write
 * them; DuckDB's are dropped when cutting). The results are checked by DuckDB in the tests.
 */
export class ParquetStitcher {
  private readonly out: ByteWriter;
  /** The first file's footer fields, copied (row count and row groups are rewritten). */
  private meta: { id: number; kept?: OutField }[] | undefined;
  private rows = 0;
  private readonly groups: StitchedRowGroup[] = [];

  /** `reuse`: a writer to fill again from the start (the previous result must be dead). */
  constructor(reserveBytes: number, reuse?: ByteWriter) {
    this.out = reuse ?? new ByteWriter(Math.max(reserveBytes, MiB));
    this.out.pos = 0;
    this.out.ascii('PAR1');
  }

  get byteLength(): number {
    return this.out.pos;
  }

  /**
   * Appends the row groups of one complete Parquet file (written with the same schema as the others),
   * or only the row groups listed in `only`.
   */
  add(file: Uint8Array, only?: readonly number[]): void {
    const n = file.byteLength;
    const view = new DataView(file.buffer, file.byteOffset, n);
    const footerLength = view.getUint32(n - 8, true);
    const footerStart = n - 8 - footerLength;
    const meta = readStruct(file, footerStart, n - 8).fields;
    this.meta ??= meta.map((f) => (f.id === 3 || f.id === 4 ? { id: f.id } : { id: f.id, kept: keep(f) }));
    const rowGroups = structListOf(need(meta, 4));
    for (const index of only ?? rowGroups.map((_, i) => i)) {
      const rg = rowGroups[index];
      if (!rg) throw new Error(`ParquetStitcher: no row group ${index}`);
      // Each column chunk is copied and shifted on its own: chunks need not be contiguous.
      let firstAt = -1;
      const columns: StitchedColumn[] = structListOf(need(rg, 1)).map((cc) => {
        const md = structOf(need(cc, 3));
        const dict = field(md, 11);
        const start = dict ? intOf(dict) : intOf(need(md, 9));
        const size = intOf(need(md, 7));
        if (start < 4 || start + size > footerStart) throw new Error('ParquetStitcher: a column chunk lies outside the data');
        const at = this.out.pos;
        if (firstAt < 0) firstAt = at;
        this.out.ensure(size);
        this.out.buf.set(file.subarray(start, start + size), at);
        this.out.pos += size;
        return shiftColumnChunk(file, cc, at - start);
      });
      const rest: OutField[] = [];
      for (const f of rg) {
        if (f.id === 1) continue;
        if (f.id === 5) rest.push({ id: 5, type: T_I64, int: Math.max(firstAt, 4) });
        else if (f.id === 7) rest.push({ id: 7, type: T_I16, int: this.groups.length });
        else rest.push(keep(f));
      }
      this.groups.push({ columns, rest });
      this.rows += intOf(need(rg, 3));
    }
  }

  /** The joined file. */
  finish(): Uint8Array {
    if (!this.meta) throw new Error('ParquetStitcher: no file was added');
    const out = this.out;
    // Page indexes: all column indexes, then all offset indexes (the order parquet-rs uses).
    for (const g of this.groups) {
      for (const c of g.columns) {
        if (c.columnIndex) {
          c.columnIndexAt = out.pos;
          this.raw(c.columnIndex);
        }
      }
    }
    for (const g of this.groups) {
      for (const c of g.columns) {
        if (c.offsetIndex) {
          c.offsetIndexAt = out.pos;
          this.raw(c.offsetIndex);
        }
      }
    }
    const rowGroups: OutField[][] = this.groups.map((g) => [{ id: 1, type: T_LIST, items: g.columns.map(columnChunkFields) }, ...g.rest]);
    const footer: OutField[] = [];
    for (const f of this.meta) {
      if (f.id === 3) footer.push({ id: 3, type: T_I64, int: this.rows });
      else if (f.id === 4) footer.push({ id: 4, type: T_LIST, items: rowGroups });
      else footer.push(f.kept!);
    }
    const w = new CompactWriter();
    w.struct(footer);
    const bytes = w.bytes();
    this.raw(bytes);
    out.ensure(8);
    out.buf.writeUInt32LE(bytes.length, out.pos);
    out.pos += 4;
    out.ascii('PAR1');
    return out.bytes();
  }

  private raw(bytes: Uint8Array): void {
    this.out.ensure(bytes.length);
    this.out.buf.set(bytes, this.out.pos);
    this.out.pos += bytes.length;
  }
}

interface StitchedColumn {
  /** ColumnChunk fields without the page index ones (4–7), which are set when the indexes are placed. */
  fields: OutField[];
  columnIndex?: Uint8Array;
  offsetIndex?: Uint8Array;
  columnIndexAt?: number;
  offsetIndexAt?: number;
}

interface StitchedRowGroup {
  columns: StitchedColumn[];
  rest: OutField[];
}

function need(fields: RawField[], id: number): RawField {
  const f = field(fields, id);
  if (!f) throw new Error(`ParquetStitcher: required Thrift field ${id} is missing`);
  return f;
}

/** ColumnMetaData fields holding absolute file offsets. */
const SHIFTED_META = new Set([9, 10, 11]);
/** Bloom filter offset and length: dropped. */
const DROPPED_META = new Set([14, 15]);

function shiftColumnChunk(file: Uint8Array, cc: RawField[], delta: number): StitchedColumn {
  const out: StitchedColumn = { fields: [] };
  for (const f of cc) {
    switch (f.id) {
      case 2: {
        const v = intOf(f);
        out.fields.push({ id: 2, type: T_I64, int: v === 0 ? 0 : v + delta });
        break;
      }
      case 3: {
        const md: OutField[] = [];
        for (const m of structOf(f)) {
          if (DROPPED_META.has(m.id)) continue;
          md.push(SHIFTED_META.has(m.id) ? { id: m.id, type: T_I64, int: intOf(m) + delta } : keep(m));
        }
        out.fields.push({ id: 3, type: T_STRUCT, fields: md });
        break;
      }
      case 4:
      case 5:
      case 6:
      case 7:
        break;
      default:
        out.fields.push(keep(f));
    }
  }
  const oiAt = field(cc, 4);
  const oiLen = field(cc, 5);
  if (oiAt && oiLen) out.offsetIndex = shiftOffsetIndex(file, intOf(oiAt), intOf(oiLen), delta);
  const ciAt = field(cc, 6);
  const ciLen = field(cc, 7);
  if (ciAt && ciLen) out.columnIndex = file.slice(intOf(ciAt), intOf(ciAt) + intOf(ciLen));
  return out;
}

/** An OffsetIndex with every PageLocation.offset shifted (first_row_index is per row group: unchanged). */
function shiftOffsetIndex(file: Uint8Array, at: number, length: number, delta: number): Uint8Array {
  if (at + length > file.byteLength) throw new Error('ParquetStitcher: an offset index lies outside the file');
  const fields = readStruct(file, at, at + length).fields;
  const out: OutField[] = fields.map((f) => {
    if (f.id !== 1) return keep(f);
    return {
      id: 1,
      type: T_LIST,
      items: structListOf(f).map((loc) => loc.map((l) => (l.id === 1 ? { id: 1, type: T_I64, int: intOf(l) + delta } : keep(l)))),
    } satisfies OutField;
  });
  const w = new CompactWriter();
  w.struct(out);
  return w.bytes().slice();
}

function columnChunkFields(c: StitchedColumn): OutField[] {
  const fields = [...c.fields];
  if (c.offsetIndex && c.offsetIndexAt !== undefined) {
    fields.push({ id: 4, type: T_I64, int: c.offsetIndexAt }, { id: 5, type: T_I32, int: c.offsetIndex.length });
  }
  if (c.columnIndex && c.columnIndexAt !== undefined) {
    fields.push({ id: 6, type: T_I64, int: c.columnIndexAt }, { id: 7, type: T_I32, int: c.columnIndex.length });
  }
  // Thrift readers accept any order, but keep ids ascending like every writer does.
  return fields.sort((a, b) => a.id - b.id);
}
