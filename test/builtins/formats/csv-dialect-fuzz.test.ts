/**
 * The hand-written CSV tokenizer of csv2parquet against csv-parse (an independent parser): random
 * tables of awkward cells (delimiters, quotes, CR/LF, spaces, non-Latin-1, digits), written with
 * random extra quoting and line endings, must come back cell for cell through
 * csv2parquet → parquet2csv → csv-parse, and through DuckDB reading the Parquet.
 */
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { csv2parquet, csvOf, Duck, parquet2csv } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

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

// No '-', '.', 'e', '[' or letters of true/false: every column is text or canonical integers.
const PIECES = ['a', 'b', ' ', ',', '"', '""', '\n', '\r\n', '\r', 'é', '東', '😀', '1', '7', '0', 'zz', '\t'];

function randomTable(rand: () => number): string[][] {
  const cols = 1 + Math.floor(rand() * 5);
  const rows = 1 + Math.floor(rand() * 30);
  const table: string[][] = [];
  for (let r = 0; r < rows; r++) {
    const row: string[] = [];
    for (let c = 0; c < cols; c++) {
      let cell = '';
      const len = rand() < 0.2 ? 0 : Math.floor(rand() * 6);
      for (let k = 0; k < len; k++) cell += PIECES[Math.floor(rand() * PIECES.length)]!;
      row.push(cell);
    }
    table.push(row);
  }
  return table;
}

function toCsv(table: string[][], rand: () => number): string {
  const eol = rand() < 0.5 ? '\n' : '\r\n';
  return table
    .map((row) => row.map((cell) => (/[",\r\n]/.test(cell) || (cell !== '' && rand() < 0.2) ? `"${cell.replaceAll('"', '""')}"` : cell)).join(','))
    .join(eol)
    .concat(rand() < 0.5 ? eol : '');
}

t.test('random CSVs: csv-parse and the round trip agree cell for cell', async (t) => {
  const rand = rng(20240601);
  let checked = 0;
  let duckChecked = 0;
  for (let i = 0; i < 300; i++) {
    const table = randomTable(rand);
    const header = table[0]!.map((_, c) => `c${c}`);
    const csv = toCsv([header, ...table], rand);
    // csv-parse's view of the data (blank lines skipped, as in our dialect).
    const expected = parse(csv, { skip_empty_lines: true, relax_quotes: true }) as string[][];
    const r = csv2parquet(csv);
    if (!r.success) {
      t.fail(`csv2parquet failed on ${JSON.stringify(csv)}: ${r.error}`);
      continue;
    }
    const back = parse(csvOf(parquet2csv(r.base64)), { skip_empty_lines: true }) as string[][];
    // A single column whose cells are all empty writes `""`; an empty row of one column is skipped by both.
    if (JSON.stringify(back) !== JSON.stringify(expected)) {
      t.same(back, expected, `round trip of ${JSON.stringify(csv)}`);
      continue;
    }
    if (i % 10 === 0) {
      const path = duck.file(r.base64);
      const rows = await duck.rows(`SELECT * FROM read_parquet('${path}')`);
      // DuckDB gives BIGINT as strings too, and nulls for the empty cells.
      const asDuck = expected.slice(1).map((row) => row.map((cell) => (cell === '' ? null : cell)));
      if (JSON.stringify(rows) !== JSON.stringify(asDuck)) t.same(rows, asDuck, `DuckDB reads the same cells of ${JSON.stringify(csv)}`);
      else duckChecked++;
    }
    checked++;
  }
  t.equal(checked, 300, 'all 300 round trips agree with csv-parse');
  t.equal(duckChecked, 30, 'and DuckDB reads the same cells in the 30 it checked');
});

t.test('a lone surrogate in the text is written as U+FFFD', async (t) => {
  const r = csv2parquet('a\nx\ud800y\n"\udc00"');
  t.equal(csvOf(parquet2csv(r.base64)), 'a\nx\ufffdy\n\ufffd\n');
});

t.test('random delimiters, comment lines and short rows: csv-parse with the same options agrees cell for cell', async (t) => {
  const rand = rng(20250301);
  const delimiters = ['\t', ';', '|', ' ', ','];
  let checked = 0;
  for (let i = 0; i < 200; i++) {
    const d = delimiters[i % delimiters.length]!;
    // Cells may hold the delimiter, '#' (data in the middle of a line) and line breaks.
    const table = randomTable(rand).map((row) => row.map((cell) => (rand() < 0.15 ? `${cell}${d}#${cell}` : cell)));
    const header = table[0]!.map((_, c) => `c${c}`);
    const eol = rand() < 0.5 ? '\n' : '\r\n';
    const quote = (cell: string, first: boolean) =>
      cell.includes(d) || /["\r\n]/.test(cell) || (first && cell.startsWith('#')) || (cell !== '' && rand() < 0.2) ? `"${cell.replaceAll('"', '""')}"` : cell;
    const lines: string[] = [];
    if (rand() < 0.5) lines.push('# a comment before the header');
    lines.push(header.join(d));
    for (const row of table) {
      if (rand() < 0.2) lines.push(`#${rand() < 0.5 ? ' comment' : ''}${d}with the delimiter`);
      // A short row: trailing fields left out (at least one field stays).
      const keep = rand() < 0.3 ? 1 + Math.floor(rand() * row.length) : row.length;
      lines.push(
        row
          .slice(0, keep)
          .map((cell, c) => quote(cell, c === 0))
          .join(d),
      );
    }
    const csv = lines.join(eol) + (rand() < 0.5 ? eol : '');
    const parsed = parse(csv, {
      delimiter: d,
      comment: '#',
      comment_no_infix: true,
      relax_column_count_less: true,
      skip_empty_lines: true,
      relax_quotes: true,
    }) as string[][];
    const expected = parsed.map((row) => [...row, ...Array<string>(header.length - row.length).fill('')]);
    const r = csv2parquet(csv, { delimiter: d, comment: '#', padShortRows: true });
    if (!r.success) {
      t.fail(`csv2parquet failed on ${JSON.stringify(csv)} with ${JSON.stringify(d)}: ${r.error}`);
      continue;
    }
    const back = parse(csvOf(parquet2csv(r.base64)), { skip_empty_lines: true }) as string[][];
    if (JSON.stringify(back) !== JSON.stringify(expected)) {
      t.same(back, expected, `round trip of ${JSON.stringify(csv)} with ${JSON.stringify(d)}`);
      continue;
    }
    checked++;
  }
  t.equal(checked, 200, 'all 200 agree with csv-parse');
});
