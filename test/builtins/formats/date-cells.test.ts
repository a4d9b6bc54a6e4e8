/**
 * The date and date-time cells of csv2parquet (runner/builtins/formats/date-cells.ts): the grammar
 * case by case with the exact values, the calendar checked against JavaScript's own (an independent
 * implementation) for every day of 0000–9999 and the 5-digit years, the int64 arithmetic against
 * BigInt, the nanosecond range at its exact ends, and hostile cells.
 */
import t from 'tap';
import {
  DATE_DAY,
  DATE_NONE,
  DATE_TIME,
  DATE_TIME_ZONED,
  dateCell,
  daysFromCivil,
  fitsNanoseconds,
  parsedDate,
  writeScaled,
} from '../../../runner/builtins/formats/date-cells.js';

/** `[kind, seconds, nanos, fractionDigits]` of a whole cell. */
function parse(cell: string): [number, number, number, number] | 'none' {
  const k = dateCell(cell, 0, cell.length);
  return k === DATE_NONE ? 'none' : [k, parsedDate.seconds, parsedDate.nanos, parsedDate.fractionDigits];
}

/** Seconds since 1970 of a UTC date-time, computed by JavaScript's Date (years 0–99 included). */
function utcSeconds(y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  return date.getTime() / 1000;
}

t.test('accepted forms, with their exact values', async (t) => {
  const cases: [string, [number, number, number, number]][] = [
    ['2024-02-29', [DATE_DAY, utcSeconds(2024, 2, 29), 0, 0]],
    ['1970-01-01', [DATE_DAY, 0, 0, 0]],
    ['1969-12-31', [DATE_DAY, -86400, 0, 0]],
    ['0000-01-01', [DATE_DAY, utcSeconds(0, 1, 1), 0, 0]],
    ['-0044-03-15', [DATE_DAY, utcSeconds(-44, 3, 15), 0, 0]],
    ['+10000-01-01', [DATE_DAY, utcSeconds(10000, 1, 1), 0, 0]],
    ['99999-12-31', [DATE_DAY, utcSeconds(99999, 12, 31), 0, 0]],
    ['2024-02-29T12:34:56', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 0, 0]],
    ['2024-02-29 12:34:56', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 0, 0]],
    ['2024-02-29 12:34', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34), 0, 0]],
    ['2024-02-29T12:34:56.5', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 500_000_000, 1]],
    ['2024-02-29T12:34:56.789012', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 789_012_000, 6]],
    ['2024-02-29T12:34:56.123456789', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 123_456_789, 9]],
    ['2024-02-29T12:34:56.120000000', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 120_000_000, 2]],
    ['2024-02-29T12:34:56.000', [DATE_TIME, utcSeconds(2024, 2, 29, 12, 34, 56), 0, 0]],
    ['1969-12-31T23:59:59.999999999', [DATE_TIME, -1, 999_999_999, 9]],
    ['2024-02-29T12:34:56Z', [DATE_TIME_ZONED, utcSeconds(2024, 2, 29, 12, 34, 56), 0, 0]],
    ['2024-02-29 12:34:56+00', [DATE_TIME_ZONED, utcSeconds(2024, 2, 29, 12, 34, 56), 0, 0]],
    ['2024-02-29 12:34:56+01', [DATE_TIME_ZONED, utcSeconds(2024, 2, 29, 11, 34, 56), 0, 0]],
    ['2024-02-29T00:10:00+01:00', [DATE_TIME_ZONED, utcSeconds(2024, 2, 28, 23, 10), 0, 0]],
    ['2024-02-29T23:00:00-0530', [DATE_TIME_ZONED, utcSeconds(2024, 3, 1, 4, 30), 0, 0]],
    ['2024-02-29T12:34:56.25-00:00', [DATE_TIME_ZONED, utcSeconds(2024, 2, 29, 12, 34, 56), 250_000_000, 2]],
    ['+99999-12-31T23:59:59.999999999+23:59', [DATE_TIME_ZONED, utcSeconds(99999, 12, 31, 0, 0, 59), 999_999_999, 9]],
  ];
  for (const [cell, want] of cases) t.same(parse(cell), want, cell);
});

t.test('refused: not calendar values, other notations, out of range', async (t) => {
  const refused = [
    // Calendar
    '2023-02-29',
    '1900-02-29',
    '2023-02-30',
    '2024-04-31',
    '2024-13-01',
    '2024-00-10',
    '2024-01-00',
    '2024-01-32',
    '2024-02-29T24:00:00',
    '2024-02-29T23:60:00',
    '2024-02-29T23:59:60',
    '2024-02-29T12:34:56+24:00',
    '2024-02-29T12:34:56+01:60',
    // Other notations (DuckDB reads some of them; here they stay text)
    '2024/02/29',
    '2024-2-9',
    '24-02-29',
    '20240229',
    '2024-02-29t12:34:56',
    '2024-02-29T12',
    '2024-02-29T12:34:5',
    '2024-02-29T12:34:56.',
    '2024-02-29T12:34.5',
    '2024-02-29T12:34:56,5',
    '2024-02-29T12:34:56 UTC',
    '2024-02-29T12:34:56z',
    '2024-02-29T12:34:56Z ',
    ' 2024-02-29',
    '2024-02-29 ',
    '2024-02-29T',
    '2024-02-29T12:34:56+1',
    '2024-02-29T12:34:56+01:0',
    '2024-02-29T12:34:56+01:000',
    '2024-02-29T12:34:56.1234567890',
    '0001-01-01 (BC)',
    '+2024',
    '100000-01-01',
    '-100000-01-01',
    '123-01-01',
    '2024-01-01x',
    '２０２４-01-01',
  ];
  for (const cell of refused) t.equal(parse(cell), 'none', JSON.stringify(cell));
});

t.test('the calendar agrees with JavaScript on every day of 0000–9999 and of the 5-digit years sampled', async (t) => {
  let wrong = 0;
  let checked = 0;
  const check = (y: number, m: number, d: number) => {
    const text = `${y < 0 ? '-' : y > 9999 ? '+' : ''}${String(Math.abs(y)).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
    const js = new Date(0);
    js.setUTCFullYear(y, m - 1, d);
    const real = js.getUTCMonth() === m - 1 && js.getUTCDate() === d;
    const k = dateCell(text, 0, text.length);
    checked++;
    if (real ? k !== DATE_DAY || parsedDate.days * 86_400_000 !== js.getTime() : k !== DATE_NONE) {
      if (wrong++ < 5) t.fail(`${text}: ${k} ${parsedDate.days}`);
    }
  };
  for (let y = 0; y <= 9999; y++) for (let m = 1; m <= 12; m++) for (const d of [1, 28, 29, 30, 31]) check(y, m, d);
  for (const y of [-9999, -400, -100, -4, -1, 10000, 10400, 12345, 99996, 99999]) for (let m = 1; m <= 12; m++) for (let d = 1; d <= 31; d++) check(y, m, d);
  t.equal(wrong, 0, `${checked} dates`);
  t.equal(daysFromCivil(1970, 1, 1), 0);
  t.equal(daysFromCivil(2000, 3, 1), 11017);
});

t.test('writeScaled is the exact int64 of seconds × unit + fraction, both signs', async (t) => {
  const lohi = new Int32Array(2);
  const big = new BigInt64Array(lohi.buffer);
  let seed = 42;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const samples: [number, number, number][] = [
    [0, 1e6, 0],
    [-1, 1e9, 999_999_999],
    [9223372036, 1e9, 854_775_807],
    [-9223372037, 1e9, 145_224_192],
    [utcSeconds(99999, 12, 31, 23, 59, 59), 1e6, 999_999],
    [utcSeconds(-99999, 1, 1), 1e6, 0],
  ];
  for (let i = 0; i < 20_000; i++) {
    const perSecond = i % 2 ? 1e9 : 1e6;
    const range = perSecond === 1e9 ? 9.2e9 : 3.1e12;
    samples.push([Math.round((rand() * 2 - 1) * range), perSecond, Math.floor(rand() * perSecond)]);
  }
  let wrong = 0;
  for (const [s, p, u] of samples) {
    if (p === 1e9 && !fitsNanoseconds(s, u)) continue;
    writeScaled(s, p, u, lohi, 0);
    if (big[0] !== BigInt(s) * BigInt(p) + BigInt(u) && wrong++ < 5) t.fail(`${s} × ${p} + ${u}: ${big[0]}`);
  }
  t.equal(wrong, 0, `${samples.length} values`);
  writeScaled(-9223372037, 1e9, 145_224_192, lohi, 0);
  t.equal(big[0], -9223372036854775808n, 'the int64 minimum');
  writeScaled(9223372036, 1e9, 854_775_807, lohi, 0);
  t.equal(big[0], 9223372036854775807n, 'the int64 maximum');
});

t.test('the nanosecond range ends exactly at int64', async (t) => {
  t.equal(fitsNanoseconds(9223372036, 854_775_807), true);
  t.equal(fitsNanoseconds(9223372036, 854_775_808), false);
  t.equal(fitsNanoseconds(-9223372037, 145_224_192), true);
  t.equal(fitsNanoseconds(-9223372037, 145_224_191), false);
  t.equal(fitsNanoseconds(9223372037, 0), false);
  t.equal(fitsNanoseconds(-9223372038, 999_999_999), false);
  t.same(parse('2262-04-11T23:47:16.854775807'), [DATE_TIME, 9223372036, 854_775_807, 9]);
});

t.test('hostile cells: long digit runs, huge years, many fraction digits, control characters', async (t) => {
  const hostile = [
    '9'.repeat(5_000_000),
    `${'9'.repeat(1000)}-01-01`,
    `2024-01-01T00:00:00.${'1'.repeat(1_000_000)}`,
    `2024-01-01T00:00:00${'+'.repeat(100)}`,
    '99999999999999999999-01-01',
    '0000-00-00',
    '9999-99-99T99:99:99',
    '2024-01-01\u0000',
    '2024-01-01T00:00:00\u0000Z',
    '\uD800024-01-01',
  ];
  for (const cell of hostile) t.equal(parse(cell), 'none', `${JSON.stringify(cell.slice(0, 40))} (${cell.length} characters)`);
  // A cell inside a larger text is read only within its bounds.
  const text = 'x,2024-02-29,2024-02-29T12:34:56.5Z,y';
  t.equal(dateCell(text, 2, 12), DATE_DAY);
  t.equal(dateCell(text, 13, 35), DATE_TIME_ZONED);
  t.equal(dateCell(text, 2, 11), DATE_NONE, 'a cut cell is not a date');
});
