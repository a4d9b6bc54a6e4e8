/**
 * Cell-level parsing for csv2parquet, reading straight from the CSV text (no substring per cell).
 * The grammars are strict on purpose, so that a column is typed only when every value round-trips:
 * - integer: `-?(0|[1-9][0-9]*)` within int64 (`007`, `+5`, ` 5` and values beyond int64 are text);
 * - float: JSON number syntax with a fraction or an exponent, plus `NaN`, `Infinity`, `-Infinity`;
 * - boolean: `true` / `false` in any case.
 */

const ZERO = 48;
const NINE = 57;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;

/** Exact powers of ten (every one up to 1e22 is a double without rounding). */
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

const INT64_MAX = '9223372036854775807';
const INT64_MIN_ABS = '9223372036854775808';

export const NUM_NONE = 0;
export const NUM_INT = 1;
export const NUM_FLOAT = 2;

/**
 * Classifies `s[a, b)` as an integer (int64), a float, or neither. `b > a`.
 */
export function numberKind(s: string, a: number, b: number): number {
  let i = a;
  let c = s.charCodeAt(i);
  const neg = c === MINUS;
  if (neg) {
    i++;
    if (i === b) return NUM_NONE;
    c = s.charCodeAt(i);
    if (c === 73 /* I */) return b - i === 8 && s.startsWith('Infinity', i) ? NUM_FLOAT : NUM_NONE;
  }
  if (c < ZERO || c > NINE) {
    if (!neg && ((b - a === 3 && s.startsWith('NaN', a)) || (b - a === 8 && s.startsWith('Infinity', a)))) return NUM_FLOAT;
    return NUM_NONE;
  }
  const intStart = i;
  if (c === ZERO) {
    i++;
  } else {
    while (i < b) {
      c = s.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      i++;
    }
  }
  if (i === b) {
    const digits = i - intStart;
    if (digits < 19) return NUM_INT;
    if (digits > 19) return NUM_NONE;
    const text = s.slice(intStart, b);
    return text <= (neg ? INT64_MIN_ABS : INT64_MAX) ? NUM_INT : NUM_NONE;
  }
  return floatTail(s, i, b) ? NUM_FLOAT : NUM_NONE;
}

/** Checks `[.digits][(e|E)[+-]digits]` from `i` to `b`, with at least one of the two parts. */
function floatTail(s: string, i: number, b: number): boolean {
  let c = s.charCodeAt(i);
  if (c === DOT) {
    i++;
    const f = i;
    while (i < b) {
      c = s.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      i++;
    }
    if (i === f) return false;
    if (i === b) return true;
  }
  if (c !== 101 && c !== 69) return false;
  i++;
  if (i === b) return false;
  c = s.charCodeAt(i);
  if (c === PLUS || c === MINUS) i++;
  const e = i;
  while (i < b) {
    c = s.charCodeAt(i);
    if (c < ZERO || c > NINE) return false;
    i++;
  }
  return i > e;
}

/**
 * Writes the integer `s[a, b)` (already known to be NUM_INT) into `lohi` at slot `k` (two int32 words
 * of an int64, little-endian). Without a BigInt for |v| < 2^53.
 */
export function writeInt64(s: string, a: number, b: number, lohi: Int32Array, k: number, big: BigInt64Array): void {
  const neg = s.charCodeAt(a) === MINUS;
  const from = neg ? a + 1 : a;
  if (b - from > 15) {
    big[k] = BigInt(s.slice(a, b));
    return;
  }
  let v = 0;
  for (let i = from; i < b; i++) v = v * 10 + (s.charCodeAt(i) - ZERO);
  if (neg) v = -v;
  const hi = Math.floor(v / 4294967296);
  lohi[2 * k] = (v - hi * 4294967296) | 0;
  lohi[2 * k + 1] = hi | 0;
}

/**
 * The value of the number `s[a, b)` (already known to be NUM_INT or NUM_FLOAT). Exact (correctly
 * rounded) on the fast path: at most 15 significant digits and a decimal exponent within ±22 make
 * one exact product or quotient of two exact doubles; anything else goes through `Number()`.
 */
export function parseFloatSpan(s: string, a: number, b: number): number {
  let i = a;
  let c = s.charCodeAt(i);
  const neg = c === MINUS;
  if (neg) {
    i++;
    c = s.charCodeAt(i);
  }
  if (c < ZERO || c > NINE) return Number(s.slice(a, b));
  let m = 0;
  let digits = 0;
  let exp = 0;
  while (i < b) {
    c = s.charCodeAt(i);
    if (c < ZERO || c > NINE) break;
    m = m * 10 + (c - ZERO);
    if (m !== 0) digits++;
    i++;
  }
  if (c === DOT && i < b) {
    i++;
    while (i < b) {
      c = s.charCodeAt(i);
      if (c < ZERO || c > NINE) break;
      m = m * 10 + (c - ZERO);
      if (m !== 0) digits++;
      exp--;
      i++;
    }
  }
  if (i < b) {
    // exponent
    i++;
    let eneg = false;
    c = s.charCodeAt(i);
    if (c === PLUS || c === MINUS) {
      eneg = c === MINUS;
      i++;
    }
    let e = 0;
    while (i < b && e < 100000) {
      e = e * 10 + (s.charCodeAt(i) - ZERO);
      i++;
    }
    exp += eneg ? -e : e;
  }
  if (digits > 15 || exp > 22 || exp < -22) return Number(s.slice(a, b));
  const v = exp < 0 ? m / POW10[-exp]! : m * POW10[exp]!;
  return neg ? -v : v;
}

/** 1 for true, 0 for false, -1 for neither (case-insensitive `true` / `false`). */
export function boolValue(s: string, a: number, b: number): number {
  const n = b - a;
  if (n === 4) {
    return (s.charCodeAt(a) | 32) === 116 && (s.charCodeAt(a + 1) | 32) === 114 && (s.charCodeAt(a + 2) | 32) === 117 && (s.charCodeAt(a + 3) | 32) === 101
      ? 1
      : -1;
  }
  if (n === 5) {
    return (s.charCodeAt(a) | 32) === 102 &&
      (s.charCodeAt(a + 1) | 32) === 97 &&
      (s.charCodeAt(a + 2) | 32) === 108 &&
      (s.charCodeAt(a + 3) | 32) === 115 &&
      (s.charCodeAt(a + 4) | 32) === 101
      ? 0
      : -1;
  }
  return -1;
}

/** Node's Buffer#utf8Write: Buffer#write without the argument juggling (about 2× faster per call). */
type Utf8Writer = (this: Buffer, s: string, offset: number, length?: number) => number;
const utf8Write: Utf8Writer =
  (Buffer.prototype as unknown as { utf8Write?: Utf8Writer }).utf8Write ??
  function (this: Buffer, s: string, offset: number, length?: number) {
    return this.write(s, offset, length ?? this.length - offset, 'utf8');
  };

/** Cells longer than this are encoded by V8 (substring + native UTF-8 write), shorter ones by hand. */
const NATIVE_FROM = 12;

/**
 * A growable UTF-8 byte buffer, filled from JS string ranges. Short ranges are encoded by hand
 * (UTF-16 to UTF-8, lone surrogates become U+FFFD as TextEncoder does); long ones by Node's native
 * encoder, which is 2–3× faster per character but costs a substring and a call.
 */
export class Utf8Sink {
  bytes: Buffer;
  length = 0;

  constructor(capacity: number) {
    this.bytes = Buffer.alloc(Math.max(64, capacity));
  }

  reserve(extra: number): void {
    const need = this.length + extra;
    if (need <= this.bytes.length) return;
    let cap = this.bytes.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.alloc(cap);
    this.bytes.copy(next, 0, 0, this.length);
    this.bytes = next;
  }

  /** Appends `s[a, b)`; with `unescapeQuotes`, each `""` is written as one `"`. */
  append(s: string, a: number, b: number, unescapeQuotes: boolean): void {
    this.reserve((b - a) * 3);
    if (b - a > NATIVE_FROM) {
      const sub = s.slice(a, b);
      this.length += utf8Write.call(this.bytes, unescapeQuotes ? sub.replaceAll('""', '"') : sub, this.length);
      return;
    }
    const out = this.bytes;
    let o = this.length;
    for (let i = a; i < b; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        out[o++] = c;
        if (c === 34 && unescapeQuotes) i++;
      } else if (c < 0x800) {
        out[o++] = 0xc0 | (c >> 6);
        out[o++] = 0x80 | (c & 63);
      } else {
        if (c >= 0xd800 && c <= 0xdfff) {
          const d = i + 1 < b ? s.charCodeAt(i + 1) : 0;
          if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
            c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
            i++;
            out[o++] = 0xf0 | (c >> 18);
            out[o++] = 0x80 | ((c >> 12) & 63);
            out[o++] = 0x80 | ((c >> 6) & 63);
            out[o++] = 0x80 | (c & 63);
            continue;
          }
          c = 0xfffd;
        }
        out[o++] = 0xe0 | (c >> 12);
        out[o++] = 0x80 | ((c >> 6) & 63);
        out[o++] = 0x80 | (c & 63);
      }
    }
    this.length = o;
  }
}
