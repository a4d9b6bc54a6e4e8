import { GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import { checkDeadline, describeValue, FORMAT_LIMITS, MiB, tooManyCells } from './conversion-guard.js';

/**
 * `ld.json2csv(jsonData)` → CSV text (spec "Format conversions").
 *
 * - `jsonData` is an array of objects. The header is the union of their keys in first-seen order
 *   (the keys of the first object in their own order, then each key not seen before as it appears);
 *   a key an object lacks is an empty cell.
 * - Cells: a string as is (an empty string as `""`), a number as JavaScript prints it, `true`/`false`,
 *   null and undefined as an empty cell, binary data as base64, and any object or array as its JSON
 *   text (`{"a":1}`, `[1,2]`).
 * - Fields are quoted only when they hold `,`, `"` or a line break (`"` doubled); records end with
 *   `\n`, the last one too. An empty array (or objects without keys) gives an empty string.
 *
 * The spec's result is a plain string, so failures throw: a TypeError when `jsonData` is not an
 * array or an item is not an object (the message names the item), a RangeError when the table would
 * have more than FORMAT_LIMITS.maxCells cells (rows × the union of keys, checked before any CSV is
 * built) or the CSV would pass the size cap, an Error when the call's time limit passes.
 */
export const json2csv: SyncBuiltin = (args, ctx) => {
  const rows = args[0];
  if (!Array.isArray(rows)) {
    throw new GuestFacingError('TypeError', `ld.json2csv(jsonData) takes an array of objects, got ${describeValue(rows)}`);
  }
  const columns: string[] = [];
  const columnOf = new Map<string, number>();
  let work = 0;
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (row === null || typeof row !== 'object' || Array.isArray(row) || row instanceof Uint8Array) {
      throw new GuestFacingError('TypeError', `ld.json2csv: item ${i} of the array is ${describeValue(row)}, not an object`);
    }
    const keys = Object.keys(row);
    for (const k of keys) {
      if (!columnOf.has(k)) {
        columnOf.set(k, columns.length);
        columns.push(k);
      }
    }
    work += keys.length + 1;
    if (work >= CELLS_PER_CHECK) {
      work = 0;
      checkDeadline(ctx);
    }
  }
  if (columns.length === 0) return '';
  // The table's shape is known now: a few distinct keys per object over many objects make a huge,
  // mostly empty table (5,000 objects of one distinct key each: 25 million cells) from a small input.
  const tooMany = tooManyCells(rows.length, columns.length);
  if (tooMany) throw new GuestFacingError('RangeError', `ld.json2csv: ${tooMany}`);
  const parts: string[] = [`${columns.map(field).join(',')}\n`];
  let size = parts[0]!.length;
  // Each line is joined from an array: `line += cell` would leave a rope of one node per cell (~32
  // bytes each) until the final join flattens it.
  const cells: string[] = new Array<string>(columns.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    // Only the row's own keys are looked up: a missing key is an empty cell, and looking up every
    // column in a sparse row is the slow part (~200 ns a missing key).
    cells.fill('');
    for (const k of Object.keys(row)) cells[columnOf.get(k)!] = cell(row[k]);
    const line = `${cells.join(',')}\n`;
    size += line.length;
    if (size > FORMAT_LIMITS.maxJsonCsvChars) {
      throw new GuestFacingError('RangeError', `ld.json2csv: the CSV would be larger than the limit of ${FORMAT_LIMITS.maxJsonCsvChars / MiB} MiB`);
    }
    parts.push(line);
    work += columns.length;
    if (work >= CELLS_PER_CHECK) {
      work = 0;
      checkDeadline(ctx);
    }
  }
  return parts.join('');
};

/** Cells (or keys) handled between two looks at the call's deadline and cancellation. */
const CELLS_PER_CHECK = 4096;

const NEEDS_QUOTES = /[",\n\r]/;

function field(s: string): string {
  if (s === '') return '""';
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

function cell(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return field(v);
    case 'number':
      return String(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return '';
    case 'bigint':
      return v.toString();
    default:
      if (v === null) return '';
      if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
      return field(JSON.stringify(v, binaryAsBase64) ?? '');
  }
}

function binaryAsBase64(_key: string, x: unknown): unknown {
  return x instanceof Uint8Array ? Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('base64') : x;
}
