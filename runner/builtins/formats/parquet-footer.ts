import { ConversionInputError } from './conversion-guard.js';
import { field, intOf, readStruct, structListOf, ThriftError } from './thrift-compact.js';

/**
 * The little parquet2csv needs from a Parquet footer before handing the file to parquet-wasm: that
 * the file is framed as Parquet at all (`PAR1` … footer, footer length, `PAR1`), and its row groups
 * (rows and uncompressed size of each), so that it can read the file a few row groups at a time.
 * parquet-wasm has no synchronous metadata call. FileMetaData field 4 is `row_groups`; RowGroup
 * fields 2 and 3 are `total_byte_size` and `num_rows`.
 */

export interface RowGroupInfo {
  rows: number;
  bytes: number;
}

const MAGIC = 0x31524150; // "PAR1" little-endian

export function readParquetFooter(file: Uint8Array): RowGroupInfo[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  if (file.byteLength < 12 || view.getUint32(0, true) !== MAGIC || view.getUint32(file.byteLength - 4, true) !== MAGIC) {
    throw new ConversionInputError('the data is not a Parquet file (it must start and end with "PAR1")');
  }
  const len = view.getUint32(file.byteLength - 8, true);
  if (len > file.byteLength - 12) throw new ConversionInputError('the Parquet file is truncated (its footer is longer than the file)');
  try {
    const meta = readStruct(file, file.byteLength - 8 - len, file.byteLength - 8).fields;
    const groups = field(meta, 4);
    if (!groups) throw new ThriftError('no row_groups');
    return structListOf(groups).map((rg) => {
      const bytes = field(rg, 2);
      const rows = field(rg, 3);
      return { bytes: bytes ? intOf(bytes) : 0, rows: rows ? intOf(rows) : 0 };
    });
  } catch (err) {
    if (err instanceof ThriftError) throw new ConversionInputError(`the Parquet footer is corrupt (${err.message})`);
    throw err;
  }
}
