import { GuestFacingError } from '../../sandbox/guest-facing-error.js';
import type { SyncBuiltin } from '../builtin.js';
import { checkDeadline, describeValue, FORMAT_LIMITS, MiB } from './conversion-guard.js';

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
 * array or an item is not an object (the message names the item), a RangeError when the CSV would
 * pass the size cap, an Error when the call's time limit passes.
 */
export const json2csv: SyncBuiltin = (args, ctx) => {
  const rows = args[0];
  if (!Array.isArray(rows)) {
    throw new GuestFacingError('TypeError', `ld.json2csv(jsonData) takes an array of objects, got ${describeValue(rows)}`);
  }
  const columns: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (row === null || typeof row !== 'object' || Array.isArray(row) || row instanceof Uint8Array) {
      throw new GuestFacingError('TypeError', `ld.json2csv: item ${i} of the array is ${describeValue(row)}, not an object`);
    }
    for (const k of Object.keys(row)) {
      if (!seen.has(k)) {
        seen.add(k);
        columns.push(k);
      }
    }
    if ((i & 4095) === 4095) checkDeadline(ctx);
  }
  if (columns.length === 0) return '';
  const parts: string[] = [`${columns.map(field).join(',')}\n`];
  let size = parts[0]!.length;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    let line = '';
    for (let c = 0; c < columns.length; c++) {
      if (c) line += ',';
      line += cell(row[columns[c]!]);
    }
    line += '\n';
    size += line.length;
    if (size > FORMAT_LIMITS.maxJsonCsvChars) {
      throw new GuestFacingError('RangeError', `ld.json2csv: the CSV would be larger than the limit of ${FORMAT_LIMITS.maxJsonCsvChars / MiB} MiB`);
    }
    parts.push(line);
    if ((i & 4095) === 4095) checkDeadline(ctx);
  }
  return parts.join('');
};

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
