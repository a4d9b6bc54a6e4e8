import { ConversionInputError, MiB } from './conversion-guard.js';

/**
 * A growable byte buffer for writing CSV (and the JSON-ish text of list cells) without building JS
 * strings per cell. The buffer is reserved large up front: an ArrayBuffer's untouched pages cost no
 * memory, so a generous reservation avoids regrowth copies; past `limit` bytes, writing fails with
 * `overLimit` (a ConversionInputError message).
 */
export class ByteWriter {
  buf: Buffer;
  pos = 0;

  constructor(
    reserve: number,
    private readonly limit = Number.MAX_SAFE_INTEGER,
    private readonly overLimit = '',
  ) {
    this.buf = Buffer.alloc(Math.max(256, Math.min(reserve, limit + MiB)));
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    if (need > this.limit + MiB) throw new ConversionInputError(this.overLimit || 'the output is too large');
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.alloc(Math.min(cap, this.limit + MiB));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Whether room for `n` more bytes can be made without passing the limit. */
  canGrow(n: number): boolean {
    return this.pos + n <= this.limit + MiB;
  }

  /** Fails when more than `limit` bytes have been written. */
  checkLimit(): void {
    if (this.pos > this.limit) throw new ConversionInputError(this.overLimit || 'the output is too large');
  }

  byte(c: number): void {
    if (this.pos >= this.buf.length) this.ensure(1);
    this.buf[this.pos++] = c;
  }

  /** An ASCII string (digits, dates, `true`). */
  ascii(s: string): void {
    const n = s.length;
    this.ensure(n);
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) b[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  /** Any string, as UTF-8. */
  text(s: string): void {
    this.ensure(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A non-negative integer below 2^53, in decimal. */
  uint(v: number): void {
    if (v < 10) {
      this.byte(48 + v);
      return;
    }
    this.ensure(16);
    const b = this.buf;
    let digits = 1;
    for (let x = v; x >= 10; x = Math.floor(x / 10)) digits++;
    let p = this.pos + digits;
    this.pos = p;
    while (v >= 10) {
      const q = Math.floor(v / 10);
      b[--p] = 48 + (v - q * 10);
      v = q;
    }
    b[--p] = 48 + v;
  }

  /** An integer with |v| < 2^53. */
  int(v: number): void {
    if (v < 0) {
      this.byte(45);
      this.uint(-v);
    } else {
      this.uint(v);
    }
  }

  /** `len` zero-padded decimal digits of v (for dates and times). */
  padded(v: number, len: number): void {
    this.ensure(len);
    const b = this.buf;
    let p = this.pos + len;
    this.pos = p;
    for (let i = 0; i < len; i++) {
      const q = Math.floor(v / 10);
      b[--p] = 48 + (v - q * 10);
      v = q;
    }
  }

  /**
   * Bytes `src[a, b)` as one CSV field: as is, or quoted with `"` doubled when they hold a
   * delimiter, a quote or a line break. An empty field is written as `""` (an empty string, as
   * opposed to a null, which is nothing at all).
   */
  csvField(src: Uint8Array, a: number, b: number): void {
    if (a === b) {
      this.ensure(2);
      this.buf[this.pos++] = 34;
      this.buf[this.pos++] = 34;
      return;
    }
    // -1: nothing to quote; 0: quote (a delimiter or line break) but no `"` to double; n: n quotes.
    let quotes = -1;
    for (let i = a; i < b; i++) {
      const c = src[i]!;
      if (c === 44 || c === 10 || c === 13) {
        if (quotes < 0) quotes = 0;
      } else if (c === 34) {
        quotes = quotes < 0 ? 1 : quotes + 1;
      }
    }
    const n = b - a;
    if (quotes <= 0) {
      this.ensure(n + 2);
      const out = this.buf;
      if (quotes === 0) out[this.pos++] = 34;
      if (n > 32) {
        out.set(src.subarray(a, b), this.pos);
        this.pos += n;
      } else {
        let p = this.pos;
        for (let i = a; i < b; i++) out[p++] = src[i]!;
        this.pos = p;
      }
      if (quotes === 0) out[this.pos++] = 34;
      return;
    }
    this.ensure(n + quotes + 2);
    const out = this.buf;
    let p = this.pos;
    out[p++] = 34;
    for (let i = a; i < b; i++) {
      const c = src[i]!;
      out[p++] = c;
      if (c === 34) out[p++] = 34;
    }
    out[p++] = 34;
    this.pos = p;
  }

  /** Bytes `src[a, b)` as is (natively for long runs). `src` must be a Buffer view. */
  raw(src: Buffer, a: number, b: number): void {
    const n = b - a;
    this.ensure(n);
    if (n > 24) {
      src.copy(this.buf, this.pos, a, b);
      this.pos += n;
      return;
    }
    const out = this.buf;
    let p = this.pos;
    for (let i = a; i < b; i++) out[p++] = src[i]!;
    this.pos = p;
  }

  /**
   * A double as the shortest text that reads back as the same value, like `String(v)`, but always
   * with a fraction or an exponent (`floatText`), with a fast path for values with up to 6 decimals
   * (V8's shortest-text algorithm costs ~250 ns). With |v·s| < 2^52 every decimal of ≤ log10(s)
   * fraction digits is more than one ulp from any other, so the one that reads back as v is the
   * shortest text.
   */
  float64(v: number): void {
    const a = v < 0 ? -v : v;
    if (a >= 1e-6 && a < 4e9) {
      for (let s = 1, digits = 0; digits <= 6; s *= 10, digits++) {
        const k = Math.round(a * s);
        if (k / s === a) {
          if (v < 0) this.byte(45);
          if (digits === 0) {
            this.uint(k);
            this.byte(46);
            this.byte(48);
            return;
          }
          const whole = Math.floor(k / s);
          this.uint(whole);
          this.byte(46);
          this.padded(k - whole * s, digits);
          return;
        }
      }
    }
    this.ascii(floatText(v));
  }

  /**
   * Bytes `src[a, b)` (UTF-8) as a JSON string literal. With `inCsvQuotes` the literal is being
   * written inside a quoted CSV field, so each `"` it contains is doubled.
   */
  jsonString(src: Uint8Array, a: number, b: number, inCsvQuotes = false): void {
    this.ensure((b - a) * 7 + 4);
    const out = this.buf;
    let p = this.pos;
    out[p++] = 34;
    if (inCsvQuotes) out[p++] = 34;
    for (let i = a; i < b; i++) {
      const c = src[i]!;
      if (c === 34 || c === 92) {
        out[p++] = 92;
        out[p++] = c;
        if (c === 34 && inCsvQuotes) out[p++] = 34;
      } else if (c < 32) {
        const esc = c === 10 ? 110 : c === 13 ? 114 : c === 9 ? 116 : c === 8 ? 98 : c === 12 ? 102 : 0;
        out[p++] = 92;
        if (esc) {
          out[p++] = esc;
        } else {
          out[p++] = 117; // \u00XX
          out[p++] = 48;
          out[p++] = 48;
          out[p++] = HEX[c >> 4]!;
          out[p++] = HEX[c & 15]!;
        }
      } else {
        out[p++] = c;
      }
    }
    out[p++] = 34;
    if (inCsvQuotes) out[p++] = 34;
    this.pos = p;
  }

  /** The bytes written so far, as a view. */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

const HEX = Buffer.from('0123456789abcdef');

/**
 * The CSV text of a float (float16/32/64) whose shortest round-trip text is `shortest` (`String(v)`
 * for a double): a whole value gets `.0` (`1.0`, `-0.0`, `100000000000000000000.0`) so that the text
 * still says "float". csv2parquet types `1` as int64 (and a whole number beyond int64 as text), so
 * without it a float column whose values happen to be whole came back from parquet2csv → csv2parquet
 * as int64 (or string). DuckDB's CSV writer and pandas' `to_csv` write `1.0` too; `-0.0` keeps the
 * sign that `String(-0)` drops. `1e+21`, `NaN`, `Infinity` and `-Infinity` are left as they are
 * (csv2parquet reads all of them back as float64).
 */
export function floatText(v: number, shortest = String(v)): string {
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  if (!Number.isFinite(v) || shortest.includes('.') || shortest.includes('e')) return shortest;
  return `${shortest}.0`;
}
