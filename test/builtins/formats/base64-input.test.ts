/**
 * decodeBase64 (runner/builtins/formats/parquet-to-csv.ts) decodes clean base64 without scanning it
 * with a regular expression first; random strings of alphabet and stray characters (whitespace, `=`
 * anywhere, other ASCII, Latin-1, characters above U+00FF whose low byte is a base64 letter) must
 * give the same bytes or the same error as the character-checking decoder it used before.
 */
import t from 'tap';
import { ConversionInputError } from '../../../runner/builtins/formats/conversion-guard.js';
import { decodeBase64 } from '../../../runner/builtins/formats/parquet-to-csv.js';

const BASE64_CHARS = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/** The decoder before: the regular expression, whitespace removed, the length checks. */
function before(s: string): Buffer {
  let clean = s;
  if (!BASE64_CHARS.test(clean)) {
    clean = s.replace(/\s+/g, '');
    if (!BASE64_CHARS.test(clean)) throw new ConversionInputError('the input is not valid base64');
  }
  const padded = clean.endsWith('=');
  if (padded ? clean.length % 4 !== 0 : clean.length % 4 === 1) {
    throw new ConversionInputError(padded ? 'the input is not valid base64' : 'the input is not valid base64 (truncated)');
  }
  return Buffer.from(clean, 'base64');
}

function outcome(f: () => Buffer): string {
  try {
    return f().toString('hex');
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

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

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_';
// 'ń' is U+0144 and 'ŁA'-like characters: cut to their low byte they would be base64 letters.
const STRAYS = [' ', '\n', '\t', '=', '==', '!', '.', '*', '\u0000', 'é', 'ń', 'Ł', '\u0241', '€', '😀'];

t.test('the same bytes or the same error as the character-checking decoder', async (t) => {
  const rand = rng(11);
  let clean = 0;
  for (let i = 0; i < 20_000; i++) {
    const len = Math.floor(rand() * 24);
    let s = '';
    for (let k = 0; k < len; k++) s += ALPHABET[Math.floor(rand() * ALPHABET.length)]!;
    const r = rand();
    if (r < 0.4) {
      const at = Math.floor(rand() * (s.length + 1));
      s = s.slice(0, at) + STRAYS[Math.floor(rand() * STRAYS.length)]! + s.slice(at);
    } else if (r < 0.6) {
      s += '='.repeat(Math.floor(rand() * 4));
    } else {
      clean++;
    }
    const expected = outcome(() => before(s));
    const got = outcome(() => decodeBase64(s));
    if (got !== expected) {
      t.fail(`${JSON.stringify(s)}: ${got}, expected ${expected}`);
      return;
    }
  }
  t.ok(clean > 5000, `${clean} clean strings`);
  const big = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919) & 255));
  t.ok(decodeBase64(big.toString('base64')).equals(big), 'a large clean file');
  t.ok(decodeBase64(big.toString('base64url')).equals(big), 'the URL alphabet');
});
