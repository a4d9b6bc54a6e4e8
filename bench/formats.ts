/**
 * csv2parquet and parquet2csv against DuckDB doing the same conversions, on a generated CSV.
 *
 *   npm run bench:formats      (= npm run build && node dist/bench/formats.js)
 *
 * One run: generates a deterministic ~100 MB CSV (bench/lib/formats-data.ts: ints, floats, bools,
 * dates, quoted text with commas/quotes/line breaks, a list-of-ints and a list-of-strings column,
 * empty cells, non-Latin-1 text) in a temp dir, then, REPS times in alternating order, runs each of
 * four conversions in its own child process (bench/lib/formats-child.ts):
 *
 *   JS csv2parquet      the built-in ld.csv2parquet(csvText, {compression: 'zstd'}) → {base64}
 *   DuckDB csv2parquet  the CSV string written to a file, COPY (SELECT * FROM read_csv_auto(…)) TO … (FORMAT
 *                       PARQUET, COMPRESSION ZSTD), the file read back as base64
 *   JS parquet2csv      the built-in ld.parquet2csv(base64) → {base64}
 *   DuckDB parquet2csv  the base64 decoded to a file, COPY (SELECT * FROM read_parquet(…)) TO … (HEADER),
 *                       the CSV read back as base64
 *
 * Both directions convert the same bytes (parquet2csv reads the Parquet the JS side wrote). Time is
 * wall time of the conversion; MB/s is CSV megabytes (10^6 bytes) per second in both directions;
 * peak memory is the highest RSS during the conversion above the RSS just before it (sampled every
 * 2 ms from a thread, see formats-child.ts). DuckDB uses its default threads (2 here), the built-ins
 * one thread. Ratios are JS / DuckDB end-to-end per run, then the median; the COPY-only ratio is
 * shown too.
 *
 * Each child does a tiny warm-up before the timed conversion, the same on both sides (JS: a conversion
 * of one to three rows; DuckDB: its conversion with LIMIT 1000), so the timed runs are the first real
 * conversion in a fresh process for both (for JS: cold JIT, and parquet-wasm's code not yet tiered up),
 * and peak memory is measured from the same kind of baseline. (DuckDB's csv2parquet warm-up used to
 * convert the whole file: its baseline then held that conversion's buffers, which it freed during the
 * timed run, so its peak Δ read ~95–210 MiB instead of its ~300 MiB working set.) The breakdown lines
 * come from a second, instrumented JS run in the same process, which is what a worker that has
 * converted before sees ("warm").
 *
 * Env: BENCH_FORMATS_MB (CSV size, default 100), BENCH_FORMATS_REPS (default 5).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Measured } from './lib/formats-child.js';
import { FORMATS_CSV_COLUMNS, writeFormatsCsv } from './lib/formats-data.js';

const MB = Number(process.env.BENCH_FORMATS_MB ?? '100') > 0 ? Number(process.env.BENCH_FORMATS_MB ?? '100') : 100;
const REPS = Math.max(1, Math.floor(Number(process.env.BENCH_FORMATS_REPS ?? '5')) || 5);
const MiB = 1024 * 1024;
const CHILD = new URL('./lib/formats-child.js', import.meta.url).pathname;

/** What a child prints: its mode and its measurement. */
type ChildResult = Measured & { mode: string };

function runChild(mode: string, input: string, output: string, detail = false): ChildResult {
  const args = ['--expose-gc', CHILD, mode, input, output];
  if (detail) args.push('detail');
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 * MiB });
  if (r.status !== 0) throw new Error(`${mode} exited with ${r.status}: ${r.stderr}`);
  const line = r.stdout.trim().split('\n').pop()!;
  return JSON.parse(line) as ChildResult;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const mib = (b: number) => fmt(b / MiB);
const pad = (s: string, n: number) => s.padStart(n);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-bench-formats-'));
  try {
    const csv = join(dir, 'input.csv');
    const t0 = performance.now();
    const gen = writeFormatsCsv(csv, MB * 1e6);
    const genMs = performance.now() - t0;
    const duckVersion = await (async () => {
      const db = await DuckDBInstance.create(':memory:');
      const con = await db.connect();
      const v = (await con.runAndReadAll('SELECT version()')).getRows()[0]![0] as string;
      con.closeSync();
      db.closeSync();
      return v;
    })();
    let cpu = '';
    try {
      cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], { encoding: 'utf8' }).trim();
    } catch {
      cpu = 'unknown CPU';
    }
    console.log(
      `formats bench: ${fmt(gen.bytes / 1e6, 1)} MB CSV, ${fmt(gen.rows)} rows × ${FORMATS_CSV_COLUMNS.length} columns (generated in ${fmt(genMs / 1000, 1)} s), ` +
        `${REPS} runs per side, Node ${process.version}, DuckDB ${duckVersion}, ${availableParallelism()} cores (${cpu})`,
    );

    const jsParquet = join(dir, 'js.parquet');
    const runs: Record<string, ChildResult[]> = { 'js-csv2parquet': [], 'duck-csv2parquet': [], 'js-parquet2csv': [], 'duck-parquet2csv': [] };
    for (let rep = 0; rep < REPS; rep++) {
      // Alternate which side goes first, so drift on a shared machine hits both.
      const first = rep % 2 === 0;
      const pair = (js: () => ChildResult, duck: () => ChildResult): void => {
        const a = first ? js() : duck();
        const b = first ? duck() : js();
        for (const r of [a, b]) runs[r.mode]!.push(r);
      };
      pair(
        () => runChild('js-csv2parquet', csv, jsParquet, rep === 0),
        () => runChild('duck-csv2parquet', csv, join(dir, 'duck.parquet')),
      );
      pair(
        () => runChild('js-parquet2csv', jsParquet, join(dir, 'js.csv'), rep === 0),
        () => runChild('duck-parquet2csv', jsParquet, join(dir, 'duck.csv')),
      );
      process.stderr.write(`  run ${rep + 1}/${REPS} done\n`);
    }

    // Both sides' outputs hold the same rows (checked by DuckDB).
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const count = async (sql: string) => Number((await con.runAndReadAll(sql)).getRows()[0]![0]);
    const checks = {
      jsParquetRows: await count(`SELECT count(*) FROM read_parquet('${jsParquet}')`),
      duckParquetRows: await count(`SELECT count(*) FROM read_parquet('${join(dir, 'duck.parquet')}')`),
      jsCsvRows: await count(`SELECT count(*) FROM read_csv('${join(dir, 'js.csv')}', header = true, all_varchar = true)`),
      duckCsvRows: await count(`SELECT count(*) FROM read_csv('${join(dir, 'duck.csv')}', header = true, all_varchar = true)`),
      jsListColumns: (await con.runAndReadAll(`SELECT column_name, column_type FROM (DESCRIBE SELECT scores, tags FROM read_parquet('${jsParquet}'))`))
        .getRows()
        .map((r) => `${String(r[0])} ${String(r[1])}`),
    };
    con.closeSync();
    db.closeSync();

    const sides = ['csv2parquet', 'parquet2csv'] as const;
    const summary: Record<string, unknown> = {};
    console.log('');
    console.log(
      `${'conversion'.padEnd(13)}${'side'.padEnd(12)}${pad('time ms', 9)}${pad('MB/s', 8)}${pad('peak Δ MiB', 12)}${pad('peak MiB', 10)}${pad('COPY-only ms', 14)}   runs (ms)`,
    );
    for (const side of sides) {
      const js = runs[`js-${side}`]!;
      const duck = runs[`duck-${side}`]!;
      const csvBytes = side === 'csv2parquet' ? js[0]!.inputBytes : js[0]!.outputBytes;
      const row = (label: string, rs: ChildResult[], first: boolean) => {
        const ms = median(rs.map((r) => r.ms));
        const copy = rs[0]!.copyMs === undefined ? '' : fmt(median(rs.map((r) => r.copyMs!)));
        console.log(
          `${(first ? side : '').padEnd(13)}${label.padEnd(12)}${pad(fmt(ms), 9)}${pad(fmt(csvBytes / 1e6 / (ms / 1000), 1), 8)}` +
            `${pad(mib(median(rs.map((r) => r.peakDelta))), 12)}${pad(mib(median(rs.map((r) => r.peakRss))), 10)}${pad(copy, 14)}   ${rs.map((r) => fmt(r.ms)).join(' / ')}`,
        );
      };
      row('JS', js, true);
      row('DuckDB e2e', duck, false);
      const timeRatios = js.map((r, i) => r.ms / duck[i]!.ms);
      const copyRatios = js.map((r, i) => r.ms / duck[i]!.copyMs!);
      const memRatios = js.map((r, i) => r.peakDelta / duck[i]!.peakDelta);
      summary[side] = {
        csvMB: csvBytes / 1e6,
        js: {
          ms: median(js.map((r) => r.ms)),
          mbPerSec: csvBytes / 1e6 / (median(js.map((r) => r.ms)) / 1000),
          peakDeltaMiB: median(js.map((r) => r.peakDelta)) / MiB,
          peakMiB: median(js.map((r) => r.peakRss)) / MiB,
          runsMs: js.map((r) => Math.round(r.ms)),
        },
        duckdb: {
          ms: median(duck.map((r) => r.ms)),
          copyMs: median(duck.map((r) => r.copyMs!)),
          mbPerSec: csvBytes / 1e6 / (median(duck.map((r) => r.ms)) / 1000),
          peakDeltaMiB: median(duck.map((r) => r.peakDelta)) / MiB,
          peakMiB: median(duck.map((r) => r.peakRss)) / MiB,
          runsMs: duck.map((r) => Math.round(r.ms)),
        },
        timeRatio: { median: median(timeRatios), min: Math.min(...timeRatios), max: Math.max(...timeRatios) },
        timeRatioCopyOnly: median(copyRatios),
        memoryRatio: median(memRatios),
        detail: js[0]!.detail,
      };
    }
    console.log('');
    const goals: string[] = [];
    for (const side of sides) {
      const s = summary[side] as { timeRatio: { median: number; min: number; max: number }; timeRatioCopyOnly: number; memoryRatio: number };
      const timeOk = s.timeRatio.median <= 3;
      const memOk = s.memoryRatio <= 1;
      console.log(
        `ratio ${side}: time ${fmt(s.timeRatio.median, 2)}× DuckDB e2e (runs ${fmt(s.timeRatio.min, 2)}–${fmt(s.timeRatio.max, 2)}; ${fmt(s.timeRatioCopyOnly, 2)}× its COPY alone), ` +
          `peak memory ${fmt(s.memoryRatio, 2)}× DuckDB's`,
      );
      goals.push(`${side} ${timeOk && memOk ? 'MET' : 'NOT MET'} (time ${timeOk ? '✓' : '✗'}, memory ${memOk ? '✓' : '✗'})`);
    }
    console.log(`goal (time ≤ 3× DuckDB, peak memory ≤ DuckDB): ${goals.join('; ')}`);
    const c2p = (summary.csv2parquet as { detail?: Record<string, number> }).detail;
    const p2c = (summary.parquet2csv as { detail?: Record<string, number> }).detail;
    const duckMs = (side: string) => (summary[side] as { duckdb: { ms: number } }).duckdb.ms;
    if (c2p) {
      console.log(
        `JS csv2parquet warm (2nd run in the same process): ${fmt(c2p.warmMs!)} ms = ${fmt(c2p.warmMs! / duckMs('csv2parquet'), 2)}× DuckDB e2e; ` +
          `breakdown: tokenize + type + build Arrow + IPC + join ${fmt(c2p.buildMs!)} ms, ` +
          `parquet-wasm (IPC in + encode + zstd) ${fmt(c2p.parquetMs!)} ms; ${fmt(c2p.chunks!)} chunks, ${fmt(c2p.restarts!)} restarts, ` +
          `IPC ${mib(c2p.ipcBytes!)} MiB, parquet-wasm memory ${mib(c2p.wasmBytes!)} MiB`,
      );
    }
    if (p2c) {
      console.log(
        `JS parquet2csv warm (2nd run in the same process): ${fmt(p2c.warmMs!)} ms = ${fmt(p2c.warmMs! / duckMs('parquet2csv'), 2)}× DuckDB e2e; ` +
          `breakdown: cut + parquet-wasm decode + IPC out ${fmt(p2c.decodeMs!)} ms, IPC in ${fmt(p2c.ipcMs!)} ms, ` +
          `CSV writing ${fmt(p2c.writeMs!)} ms; ${p2c.reads} reads of ${p2c.rowGroups} row groups, parquet-wasm memory ${mib(p2c.wasmBytes!)} MiB`,
      );
    }
    console.log(
      `check: rows in JS Parquet ${fmt(checks.jsParquetRows)}, DuckDB Parquet ${fmt(checks.duckParquetRows)}, JS CSV ${fmt(checks.jsCsvRows)}, DuckDB CSV ${fmt(checks.duckCsvRows)}; ` +
        `JS list columns: ${checks.jsListColumns.join(', ')}; Parquet sizes: JS ${mib(statSync(jsParquet).size)} MiB, DuckDB ${mib(statSync(join(dir, 'duck.parquet')).size)} MiB`,
    );
    console.log(
      `BENCH_JSON ${JSON.stringify({
        bench: 'formats',
        node: process.version,
        duckdb: duckVersion,
        cores: availableParallelism(),
        csvBytes: gen.bytes,
        rows: gen.rows,
        reps: REPS,
        ...summary,
        checks,
      })}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
