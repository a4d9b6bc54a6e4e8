/**
 * Date and timestamp cells of csv2parquet, read straight from the CSV text (no substring per cell).
 * The grammar is strict, so that a typed cell always stands for exactly one value:
 *
 *     date       Y-MM-DD                       Y: 4 or 5 digits, optionally signed (`0000`, `-0044`, `+10000`, `99999`)
 *     timestamp  date(T| )HH:MM[:SS[.f{1,9}]][zone]
 *     zone       Z | ±HH | ±HH:MM | ±HHMM      (normalised to the UTC instant)
 *
 * Months 01–12, days that exist in that month (proleptic Gregorian: 2024-02-29 yes, 2023-02-29 no),
 * hours 00–23, minutes and seconds 00–59 (no `24:00:00`, no leap second), offsets up to ±23:59.
 * These are the texts parquet2csv writes for date32/date64 and for timestamps of every unit (see
 * arrow-csv-cells.ts), plus the space separator, the offsets and the missing seconds of DuckDB's and
 * pandas' CSV writers. DuckDB's sniffer also reads `2024/02/29`, `2024-2-9`, `24:00:00` and more than
 * nine fraction digits (truncated); here those stay text. Years are limited to five digits so that
 * every value fits a microsecond timestamp (int64 µs reach ±292,277 years).
 *
 * Test: test/builtins/formats/date-cells.test.ts.
 */

export const DATE_NONE = 0;
export const DATE_DAY = 1;
export const DATE_TIME = 2;
export const DATE_TIME_ZONED = 3;

/** The value of the last cell `dateCell` accepted. */
export const parsedDate = {
  /** Days since 1970-01-01 (a date, or the day of a timestamp in UTC). */
  days: 0,
  /** Whole seconds since 1970-01-01T00:00:00 (UTC when zoned); exact as a double. */
  seconds: 0,
  /** Nanoseconds within the second, 0–999,999,999. */
  nanos: 0,
  /** Digits of the fraction without its trailing zeros (0–9): over 6 needs nanoseconds. */
  fractionDigits: 0,
};

const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/** Two digits at i as a number, or -1. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a valid proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/**
 * Reads `s[a, b)` as a date or a timestamp: DATE_DAY, DATE_TIME (no zone), DATE_TIME_ZONED, or
 * DATE_NONE when it is neither (or not a real calendar value). The value is left in `parsedDate`.
 */
export function dateCell(s: string, a: number, b: number): number {
  // The shortest cell is `YYYY-MM-DD`; the longest `+YYYYY-MM-DDTHH:MM:SS.fffffffff+HH:MM` (37).
  if (b - a < 10 || b - a > 37) return DATE_NONE;
  let i = a;
  const sign = s.charCodeAt(i);
  if (sign === 45 || sign === 43) i++;
  let y = 0;
  const y0 = i;
  while (i < b && i - y0 < 6) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    y = y * 10 + c;
    i++;
  }
  const ydigits = i - y0;
  if (ydigits !== 4 && ydigits !== 5) return DATE_NONE;
  if (sign === 45) y = -y;
  if (b - i < 6 || s.charCodeAt(i) !== 45 || s.charCodeAt(i + 3) !== 45) return DATE_NONE;
  const m = two(s, i + 1);
  const d = two(s, i + 4);
  if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return DATE_NONE;
  i += 6;
  const days = daysFromCivil(y, m, d);
  parsedDate.days = days;
  parsedDate.seconds = days * 86400;
  parsedDate.nanos = 0;
  parsedDate.fractionDigits = 0;
  if (i === b) return DATE_DAY;

  // The time: (T| )HH:MM[:SS[.fraction]]
  const sep = s.charCodeAt(i);
  if ((sep !== 84 && sep !== 32) || b - i < 6 || s.charCodeAt(i + 3) !== 58) return DATE_NONE;
  const hh = two(s, i + 1);
  const mm = two(s, i + 4);
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59) return DATE_NONE;
  i += 6;
  let ss = 0;
  if (i < b && s.charCodeAt(i) === 58) {
    ss = b - i >= 3 ? two(s, i + 1) : -1;
    if (ss < 0 || ss > 59) return DATE_NONE;
    i += 3;
    if (i < b && s.charCodeAt(i) === 46) {
      i++;
      const f0 = i;
      let f = 0;
      let lastNonZero = 0;
      while (i < b) {
        const c = s.charCodeAt(i) - 48;
        if (c < 0 || c > 9) break;
        if (i - f0 === 9) return DATE_NONE;
        f = f * 10 + c;
        i++;
        if (c !== 0) lastNonZero = i - f0;
      }
      if (i === f0) return DATE_NONE;
      parsedDate.nanos = f * POW10[9 - (i - f0)]!;
      parsedDate.fractionDigits = lastNonZero;
    }
  }
  let seconds = days * 86400 + hh * 3600 + mm * 60 + ss;
  if (i === b) {
    parsedDate.seconds = seconds;
    return DATE_TIME;
  }

  // The zone: Z | ±HH | ±HH:MM | ±HHMM
  const z = s.charCodeAt(i);
  if (z === 90) {
    if (i + 1 !== b) return DATE_NONE;
  } else if (z === 43 || z === 45) {
    const oh = two(s, i + 1);
    let om = 0;
    const rest = b - i;
    if (rest === 6 && s.charCodeAt(i + 3) === 58) om = two(s, i + 4);
    else if (rest === 5) om = two(s, i + 3);
    else if (rest !== 3) return DATE_NONE;
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return DATE_NONE;
    const offset = oh * 3600 + om * 60;
    seconds += z === 43 ? -offset : offset;
  } else {
    return DATE_NONE;
  }
  parsedDate.seconds = seconds;
  parsedDate.days = Math.floor(seconds / 86400);
  return DATE_TIME_ZONED;
}

/** The int64 range in nanoseconds since 1970: 1677-09-21T00:12:43.145224192 to 2262-04-11T23:47:16.854775807. */
const NS_MAX_SECONDS = 9223372036;
const NS_MAX_NANOS = 854775807;
const NS_MIN_SECONDS = -9223372037;
const NS_MIN_NANOS = 145224192;

/** Whether the instant `seconds` + `nanos` fits an int64 count of nanoseconds. */
export function fitsNanoseconds(seconds: number, nanos: number): boolean {
  if (seconds > NS_MAX_SECONDS || seconds < NS_MIN_SECONDS) return false;
  if (seconds === NS_MAX_SECONDS) return nanos <= NS_MAX_NANOS;
  if (seconds === NS_MIN_SECONDS) return nanos >= NS_MIN_NANOS;
  return true;
}

const TWO11 = 2048;
const TWO21 = 2097152;
const TWO32 = 4294967296;

/**
 * Writes `seconds` × `perSecond` + `units` into slot k of `lohi` (two int32 words of an int64,
 * little-endian), exactly and without a BigInt, for |seconds| < 2^42 and perSecond ≤ 1e9 (the
 * caller has checked that the result fits an int64). Every product below stays under 2^53:
 * seconds = sHi·2^21 + sLo, sHi·perSecond = aHi·2^11 + aLo, and the value is
 * aHi·2^32 + (aLo·2^21 + sLo·perSecond + units).
 */
export function writeScaled(seconds: number, perSecond: number, units: number, lohi: Int32Array, k: number): void {
  const sHi = Math.floor(seconds / TWO21);
  const sLo = seconds - sHi * TWO21;
  const aFull = sHi * perSecond;
  const aHi = Math.floor(aFull / TWO11);
  const aLo = aFull - aHi * TWO11;
  const c = aLo * TWO21 + sLo * perSecond + units;
  const cHi = Math.floor(c / TWO32);
  lohi[2 * k] = (c - cHi * TWO32) | 0;
  lohi[2 * k + 1] = (aHi + cHi) | 0;
}
