/**
 * List cells of csv2parquet (parseList in runner/builtins/formats/column-types.ts) inside a quoted CSV
 * field that holds `""` pairs are parsed in place (`escaped`): random list-like cells (strings with
 * quotes, backslash escapes, commas, non-ASCII; numbers; nulls; broken syntax) must give the same
 * type, and the same items, as parsing the unescaped text.
 */
import t from 'tap';
import { ListItems } from '../../../runner/builtins/formats/column-builders.js';
import { cellType, parseList, T_FLOAT, T_INT, T_STRING, T_BOOL } from '../../../runner/builtins/formats/column-types.js';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const STRING_PIECES = ['a', 'x, y', '\\"', '\\\\', '\\n', '\\u00e9', '\\u12', '\\x', '"', '東', ' ', '[', ']', ','];
const ITEMS = ['1', '-22', '3.5', '1e3', 'null', 'true', 'false', 'nul', '007', '-', ''];

function randomCell(rand: () => number): string {
  const n = Math.floor(rand() * 4);
  const items: string[] = [];
  for (let i = 0; i < n; i++) {
    if (rand() < 0.6) {
      let s = '"';
      const len = Math.floor(rand() * 4);
      for (let k = 0; k < len; k++) s += STRING_PIECES[Math.floor(rand() * STRING_PIECES.length)]!;
      items.push(rand() < 0.95 ? `${s}"` : s);
    } else {
      items.push(ITEMS[Math.floor(rand() * ITEMS.length)]!);
    }
  }
  const body = items.join(rand() < 0.5 ? ', ' : ',');
  const r = rand();
  return r < 0.9 ? `[${body}]` : r < 0.95 ? `[${body}` : ` [${body}]`;
}

function itemsOf(kind: number, cell: string, escaped: boolean): unknown {
  const items = new ListItems(kind);
  const got = parseList(cell, 0, cell.length, items, escaped);
  if (got < 0) return got;
  const data = items.data();
  const v = data.values as ArrayBufferView;
  const bytes = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  const offsets = data.valueOffsets ? [...(data.valueOffsets as Int32Array)] : [];
  return { got, count: items.count, nulls: items.nulls, bytes, offsets };
}

t.test('escaped list cells parse like their unescaped text', async (t) => {
  const rand = rng(7);
  let lists = 0;
  let escapedQuotes = 0;
  for (let i = 0; i < 20_000; i++) {
    const cell = randomCell(rand);
    const raw = cell.replaceAll('"', '""');
    const plain = parseList(cell, 0, cell.length, undefined);
    if (plain >= 0) lists++;
    if (plain >= 0 && cell.includes('\\"')) escapedQuotes++;
    // In a CSV text: the cell between other fields, as the tokenizer leaves it.
    const text = `x,"${raw}",y`;
    if (parseList(text, 3, 3 + raw.length, undefined, true) !== plain) {
      t.fail(`type of ${JSON.stringify(cell)}`);
      return;
    }
    if (cellType(text, 3, 3 + raw.length, true) !== cellType(cell, 0, cell.length, false)) {
      t.fail(`cellType of ${JSON.stringify(cell)}`);
      return;
    }
    for (const kind of [T_STRING, T_INT, T_FLOAT, T_BOOL]) {
      const a = JSON.stringify(itemsOf(kind, cell, false));
      const b = JSON.stringify(itemsOf(kind, raw, true));
      if (a !== b) {
        t.fail(`items of ${JSON.stringify(cell)} as kind ${kind}: ${a} vs ${b}`);
        return;
      }
    }
  }
  t.ok(lists > 5000, `${lists} of the cells are lists`);
  t.ok(escapedQuotes > 100, `${escapedQuotes} of them hold an escaped quote`);
});
