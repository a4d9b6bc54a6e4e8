import type { BuiltinModule } from '../guest-boundary.js';
import { arrow2parquet } from './arrow-to-parquet.js';
import { csv2parquet } from './csv-to-parquet.js';
import { json2csv } from './json-to-csv.js';
import { parquet2csv } from './parquet-to-csv.js';

/**
 * Spec "Format conversions": ld.csv2parquet, ld.parquet2csv, ld.arrow2parquet, ld.json2csv. All four
 * are synchronous built-ins (a call returns its value; `await` on it works too). Each function's
 * file documents its input rules and which failures return `success: false` and which throw.
 */
export const FORMATS: BuiltinModule = {
  sync: { csv2parquet, parquet2csv, arrow2parquet, json2csv },
  bindings: [
    { guest: 'csv2parquet', host: 'csv2parquet', mode: 'sync' },
    { guest: 'parquet2csv', host: 'parquet2csv', mode: 'sync' },
    { guest: 'arrow2parquet', host: 'arrow2parquet', mode: 'sync' },
    { guest: 'json2csv', host: 'json2csv', mode: 'sync' },
  ],
};

export { FORMAT_LIMITS } from './conversion-guard.js';
export { parquetWasmMemoryBytes, PARQUET_WASM_KEEP_BYTES } from './format-libs.js';
