/**
 * Bench-only: a deterministic CSV of mixed columns for bench/formats, written to a file in pieces.
 *
 * 12 columns: id (int), user (short text), amount (float), active (bool), visits (int with empty
 * cells), created (ISO date, a DATE column), city (text with non-Latin-1 names, so the JS string is
 * two-byte as in real data), comment (quoted text with commas, quotes and line breaks), scores
 * (a list of ints, `"[1, 2, 3]"`), tags (a list of strings, `"[""a"", ""x, y""]"`), ratio (float with
 * empty cells), note (mostly empty text).
 */
import { closeSync, openSync, writeSync } from 'node:fs';

export const FORMATS_CSV_COLUMNS = ['id', 'user', 'amount', 'active', 'visits', 'created', 'city', 'comment', 'scores', 'tags', 'ratio', 'note'] as const;

/** mulberry32: a small seeded PRNG, so every run converts the same bytes. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'omega',
  'sync',
  'queue',
  'retry',
  'order',
  'invoice',
  'shipment',
  'refund',
  'the',
  'and',
  'for',
  'with',
  'customer',
  'payment',
  'error',
  'status',
];
const CITIES = ['Paris', 'Zürich', 'São Paulo', '東京', 'Berlin', 'New York', 'Kraków', 'Reykjavík', 'Lagos', 'Mumbai'];
const TAGS = ['urgent', 'vip', 'x, y', 'beta', 'eu', 'us', 'say "hi"', 'ops'];

/** Writes about `targetBytes` of CSV to `path`; returns rows and bytes written. */
export function writeFormatsCsv(path: string, targetBytes: number, seed = 42): { rows: number; bytes: number } {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const fd = openSync(path, 'w');
  let bytes = 0;
  let rows = 0;
  let buf = `${FORMATS_CSV_COLUMNS.join(',')}\n`;
  let pending = Buffer.byteLength(buf);
  try {
    while (bytes + pending < targetBytes) {
      const id = rows + 1;
      const user = `user_${Math.floor(rand() * 100000)}`;
      const amount = (Math.round(rand() * 10_000_000) / 100).toFixed(2);
      const active = rand() < 0.5 ? 'true' : 'false';
      const visits = rand() < 0.1 ? '' : String(Math.floor(rand() * 5000));
      const day = Math.floor(rand() * 3650);
      const created = new Date(Date.UTC(2015, 0, 1) + day * 86_400_000).toISOString().slice(0, 10);
      const city = pick(CITIES);
      const nWords = 5 + Math.floor(rand() * 30);
      let comment = '';
      for (let i = 0; i < nWords; i++) comment += (i ? (rand() < 0.1 ? ', ' : ' ') : '') + pick(WORDS);
      if (rand() < 0.05) comment += ' "quoted"';
      if (rand() < 0.02) comment += '\nsecond line';
      const nScores = Math.floor(rand() * 6);
      const scores: number[] = [];
      for (let i = 0; i < nScores; i++) scores.push(Math.floor(rand() * 200_000) - 50_000);
      const nTags = Math.floor(rand() * 4);
      const tags: string[] = [];
      for (let i = 0; i < nTags; i++) tags.push(JSON.stringify(pick(TAGS)));
      const ratio = rand() < 0.2 ? '' : String(Math.round(rand() * 1e6) / 1e6);
      const note = rand() < 0.9 ? '' : `note ${pick(WORDS)}`;
      const row = `${id},${user},${amount},${active},${visits},${created},${city},${quote(comment)},"[${scores.join(', ')}]",${quote(`[${tags.join(', ')}]`)},${ratio},${note}\n`;
      buf += row;
      pending += Buffer.byteLength(row);
      rows++;
      if (buf.length > 1 << 20) {
        bytes += writeSync(fd, buf);
        buf = '';
        pending = 0;
      }
    }
    bytes += writeSync(fd, buf);
  } finally {
    closeSync(fd);
  }
  return { rows, bytes };
}

function quote(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}
