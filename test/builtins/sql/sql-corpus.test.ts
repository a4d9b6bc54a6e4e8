/**
 * ld.ensureReadOnlySqlQuery against real SQL (test/fixtures/sql-corpus, sources in its README): at most
 * 5 % of the read statements of each dialect, and of all of them, may be refused; every statement of
 * the must-refuse corpus (writes, DDL, locking reads, session and transaction control, the tricks of
 * hand-written.jsonl) must be refused. The refusal rates are printed per dialect.
 */
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { ensureReadOnlySqlQuery } from '../../../runner/builtins/sql/sql-checks.js';
import { call } from './sql-test-helpers.js';

const CORPUS = new URL('../../../../test/fixtures/sql-corpus/', import.meta.url);
const DIALECTS = ['postgresql', 'mysql', 'bigquery', 'snowflake', 'transactsql'];
const MAX_REFUSED = 0.05;

interface CorpusRow {
  sql: string;
  source: string;
}

function load(folder: string, file: string): CorpusRow[] {
  const text = readFileSync(new URL(`${folder}/${file}`, CORPUS), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as CorpusRow);
}

t.test('the corpus has every dialect, with real statements in each', async (t) => {
  t.same(readdirSync(new URL('read/', CORPUS)).sort(), DIALECTS.map((d) => `${d}.jsonl`).sort());
  t.same(readdirSync(new URL('must-refuse/', CORPUS)).sort(), [...DIALECTS, 'hand-written'].map((d) => `${d}.jsonl`).sort());
  for (const d of DIALECTS) {
    t.ok(load('read', `${d}.jsonl`).length >= 100, `${d}: at least 100 read statements`);
    t.ok(load('must-refuse', `${d}.jsonl`).length >= 50, `${d}: at least 50 statements to refuse`);
  }
});

t.test(`at most ${MAX_REFUSED * 100} % of the read statements are refused, per dialect and overall`, async (t) => {
  let total = 0;
  let refusedTotal = 0;
  const lines: string[] = [];
  for (const d of DIALECTS) {
    const rows = load('read', `${d}.jsonl`);
    const refused = rows.filter((row) => 'message' in call(ensureReadOnlySqlQuery, [row.sql]));
    total += rows.length;
    refusedTotal += refused.length;
    const rate = refused.length / rows.length;
    lines.push(`${d}: ${refused.length} of ${rows.length} refused (${(rate * 100).toFixed(1)} %)`);
    t.ok(rate <= MAX_REFUSED, `${d}: ${(rate * 100).toFixed(1)} % refused`);
    for (const row of refused) t.comment(`refused (${d}, ${row.source}): ${row.sql.replace(/\s+/g, ' ').slice(0, 160)}`);
  }
  const rate = refusedTotal / total;
  lines.push(`overall: ${refusedTotal} of ${total} refused (${(rate * 100).toFixed(1)} %)`);
  for (const line of lines) t.comment(line);
  t.ok(rate <= MAX_REFUSED, `overall: ${(rate * 100).toFixed(1)} % refused`);
});

t.test('every statement of the must-refuse corpus is refused', async (t) => {
  for (const file of [...DIALECTS, 'hand-written']) {
    const rows = load('must-refuse', `${file}.jsonl`);
    const accepted = rows.filter((row) => 'value' in call(ensureReadOnlySqlQuery, [row.sql]));
    t.same(
      accepted.map((row) => `${row.source}: ${row.sql}`),
      [],
      `${file}: all ${rows.length} refused`,
    );
  }
});
