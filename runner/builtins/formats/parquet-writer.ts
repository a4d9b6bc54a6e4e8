import { libraryMessage } from './conversion-guard.js';
import { discardParquetWasm, parquetWasmLib } from './format-libs.js';
import { type CompressionName, writerProperties } from './parquet-codecs.js';

/** parquet-wasm refused or failed to write; the message is parquet-wasm's, cut to a readable length. */
export class ParquetWriteError extends Error {
  override readonly name = 'ParquetWriteError';
}

/**
 * Writes an Arrow IPC *stream* as a Parquet file with parquet-wasm. The stream must be well formed:
 * parquet-wasm trusts message lengths and grows its memory to whatever a corrupt length says
 * (format notes, pitfall 2), so only streams encoded by apache-arrow reach it.
 *
 * `writeParquet` consumes the wasm table and the writer properties (format notes, pitfall 4); an
 * instance that trapped is dropped. The built-in calls releaseParquetWasmIfLarge() when it is done.
 */
export function writeParquetFromIpc(ipc: Uint8Array, compression: CompressionName, plainColumns: readonly string[] = []): Uint8Array {
  const pw = parquetWasmLib();
  try {
    const table = pw.Table.fromIPCStream(ipc);
    return pw.writeParquet(table, writerProperties(compression, plainColumns));
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) {
      discardParquetWasm();
      throw new ParquetWriteError(`parquet-wasm crashed on this data (${libraryMessage(err)})`);
    }
    throw new ParquetWriteError(libraryMessage(err));
  }
}
