/**
 * Bench-only: one conversion in its own process, so that peak memory is comparable between sides.
 * Run by bench/formats.ts as
 *
 *   node --expose-gc dist/bench/lib/formats-child.js <mode> <input> <output>
 *
 * modes: js-csv2parquet, duck-csv2parquet, js-parquet2csv, duck-parquet2csv. Both sides start from
 * the same thing the built-in gets (the CSV as a JS string, or the Parquet file as base64) and end
 * with the same thing it returns (base64 text); DuckDB goes through files in between, as it must.
 *
 * Memory: after the input is loaded and a tiny warm-up conversion ran, the process is garbage-
 * collected and its RSS taken as the baseline; a sampler thread reads the process RSS every 2 ms
 * during the timed conversion. `peakDelta` is the highest sample minus the baseline. (maxRSS of the
 * whole process is reported too, but it also counts loading the input.)
 *
 * Prints one JSON line on stdout.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DuckDBInstance } from '@duckdb/node-api';
import { csvToParquet, emptyStats } from '../../runner/builtins/formats/csv-to-parquet.js';
import { emptyParquetStats, parquetToCsv } from '../../runner/builtins/formats/parquet-to-csv.js';
import { FORMATS } from '../../runner/builtins/formats/index.js';
import { DEFAULT_BUILTIN_CONFIG, type BuiltinContext } from '../../runner/builtins/index.js';

const [mode, input, output, detailArg] = process.argv.slice(2) as [string, string, string, string | undefined];
/** With `detail`, the JS conversion runs a second time, instrumented, for the time breakdown. */
const withDetail = detailArg === 'detail';
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

const ctx = {
  signal: new AbortController().signal,
  deadline: Number.POSITIVE_INFINITY,
  redact: (s: string) => s,
  config: DEFAULT_BUILTIN_CONFIG,
  counters: { requests: 0 },
  log: () => undefined,
  onEnd: () => () => undefined,
} as unknown as BuiltinContext;

/** Samples the process RSS every 2 ms from another thread while the main thread is busy. */
function startSampler(): { stop(): number } {
  const shared = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const { workerData } = require('node:worker_threads');
     const s = workerData;
     while (Atomics.load(s, 0) === 0) {
       const kb = Math.round(process.memoryUsage.rss() / 1024);
       if (kb > Atomics.load(s, 1)) Atomics.store(s, 1, kb);
       Atomics.wait(s, 0, 0, 2);
     }`,
    { eval: true, workerData: shared },
  );
  return {
    stop() {
      const kb = Math.max(Atomics.load(shared, 1), Math.round(process.memoryUsage.rss() / 1024));
      Atomics.store(shared, 0, 1);
      Atomics.notify(shared, 0);
      void worker.terminate();
      return kb * 1024;
    },
  };
}

export interface Measured {
  ms: number;
  copyMs?: number;
  inputBytes: number;
  outputBytes: number;
  baseRss: number;
  peakRss: number;
  peakDelta: number;
  maxRss: number;
  detail?: unknown;
}

async function measure(run: () => Promise<Omit<Measured, 'ms' | 'baseRss' | 'peakRss' | 'peakDelta' | 'maxRss'>>): Promise<Measured> {
  gc();
  gc();
  const sampler = startSampler();
  await new Promise((r) => setTimeout(r, 50));
  const baseRss = process.memoryUsage.rss();
  const started = performance.now();
  const r = await run();
  const ms = performance.now() - started;
  const peakRss = sampler.stop();
  return { ms, ...r, baseRss, peakRss, peakDelta: peakRss - baseRss, maxRss: process.resourceUsage().maxRSS * 1024 };
}

async function duck() {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run('SELECT 1');
  return { db, con };
}

async function main(): Promise<Measured> {
  switch (mode) {
    case 'js-csv2parquet': {
      const text = readFileSync(input, 'utf8');
      FORMATS.sync!.csv2parquet!(['a,b,c\n1,x,"[1]"\n'], ctx);
      let b64 = '';
      const stats = emptyStats();
      const m = await measure(async () => {
        const r = FORMATS.sync!.csv2parquet!([text, { compression: 'zstd' }], ctx) as { base64: string; success: boolean; error?: string };
        if (!r.success) throw new Error(r.error);
        b64 = r.base64;
        return { inputBytes: Buffer.byteLength(text), outputBytes: (b64.length * 3) / 4 };
      });
      writeFileSync(output, Buffer.from(b64, 'base64'));
      if (!withDetail) return m;
      // The same conversion again, instrumented, for the breakdown (not the timed run): JIT and wasm warm.
      gc();
      const t0 = performance.now();
      const again = csvToParquet(text, 'zstd', ctx, stats);
      Buffer.from(again.buffer, again.byteOffset, again.byteLength).toString('base64');
      return { ...m, detail: { ...stats, warmMs: performance.now() - t0 } };
    }
    case 'duck-csv2parquet': {
      const text = readFileSync(input, 'utf8');
      const { con } = await duck();
      // A tiny warm-up, like every other mode (LIMIT 1000, as duck-parquet2csv does). Converting the
      // whole file here left DuckDB's buffers of that conversion in the baseline; it frees them during
      // the timed run (its RSS fell 50–140 MiB below the baseline mid-COPY), so its peak Δ measured
      // 95–210 MiB instead of its ~300 MiB working set, and its time was that of a second conversion.
      await con.run(
        `COPY (SELECT * FROM read_csv_auto('${input}', sample_size = 1000) LIMIT 1000) TO '${output}.warm.parquet' (FORMAT PARQUET, COMPRESSION ZSTD)`,
      );
      let copyMs = 0;
      const m = await measure(async () => {
        // e2e: the CSV arrives as a string, the Parquet leaves as base64, like the built-in.
        writeFileSync(`${output}.in.csv`, text);
        const t0 = performance.now();
        await con.run(`COPY (SELECT * FROM read_csv_auto('${output}.in.csv')) TO '${output}' (FORMAT PARQUET, COMPRESSION ZSTD)`);
        copyMs = performance.now() - t0;
        const b64 = readFileSync(output).toString('base64');
        return { inputBytes: Buffer.byteLength(text), outputBytes: (b64.length * 3) / 4 };
      });
      return { ...m, copyMs };
    }
    case 'js-parquet2csv': {
      const b64 = readFileSync(input).toString('base64');
      const warm = FORMATS.sync!.csv2parquet!(['a\n1'], ctx) as { base64: string };
      FORMATS.sync!.parquet2csv!([warm.base64], ctx);
      let out = '';
      const m = await measure(async () => {
        const r = FORMATS.sync!.parquet2csv!([b64], ctx) as { base64: string; success: boolean; error?: string };
        if (!r.success) throw new Error(r.error);
        out = r.base64;
        return { inputBytes: statSync(input).size, outputBytes: Buffer.byteLength(out, 'base64') };
      });
      writeFileSync(output, Buffer.from(out, 'base64'));
      if (!withDetail) return m;
      gc();
      const stats = emptyParquetStats();
      const t0 = performance.now();
      parquetToCsv(Buffer.from(b64, 'base64'), ctx, stats).toString('base64');
      return { ...m, detail: { ...stats, warmMs: performance.now() - t0 } };
    }
    case 'duck-parquet2csv': {
      const b64 = readFileSync(input).toString('base64');
      const { con } = await duck();
      await con.run(`COPY (SELECT * FROM read_parquet('${input}') LIMIT 1000) TO '${output}.warm.csv' (HEADER)`);
      let copyMs = 0;
      const m = await measure(async () => {
        writeFileSync(`${output}.in.parquet`, Buffer.from(b64, 'base64'));
        const t0 = performance.now();
        await con.run(`COPY (SELECT * FROM read_parquet('${output}.in.parquet')) TO '${output}' (HEADER)`);
        copyMs = performance.now() - t0;
        const out = readFileSync(output).toString('base64');
        return { inputBytes: statSync(input).size, outputBytes: Buffer.byteLength(out, 'base64') };
      });
      return { ...m, copyMs };
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

main().then(
  (m) => {
    process.stdout.write(`${JSON.stringify({ mode, ...m })}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    process.stderr.write(`${mode} failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
