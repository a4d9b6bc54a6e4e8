/**
 * Calls that wait for host work, in one run (npm run bench:io): a call that awaits `ld.request(...)` parks
 * and frees its sandbox, so a runner of 2 workers should hold thousands of such calls at once, at the rate
 * the remote end allows, for little memory each.
 *
 * Set-up: the runner is a child process (`ldbox runner`) with default settings except LDBOX_POOL_SIZE=2,
 * LDBOX_EGRESS_ALLOW=127.0.0.1 (ld.request refuses private addresses otherwise), LDBOX_LOG_LEVEL=warn and
 * its port; every other LDBOX_* variable of this process's environment is dropped. Its stderr is this
 * process's. Load comes from h2load (binary gRPC frames of Execute, `content-type: application/grpc`,
 * `te: trailers`). The API that `ld.request` reaches is a plain node:http server in a child process of its
 * own (bench/lib/slow-api.ts: its CPU is neither the runner's nor the bench's), keep-alive on, counting the
 * requests it gets. The I/O-bound call is
 *
 *   const r = await ld.request({ method: 'GET', url: API + '/x' }); return r.status
 *
 * h2load counts a gRPC error as HTTP 200, so every figure is confirmed by the runner's own counters:
 * `ldbox_runner_executions_total{outcome="ok"}` must rise by exactly the calls sent, and any other outcome
 * rising (busy = RESOURCE_EXHAUSTED, error, internal, ...) is a refused or failed call. One call of each
 * code through @grpc/grpc-js must return 1 and 200.
 *
 *   (ref) `return 1` at 64 in flight (2 connections × 32 streams), 20,000 calls: R64, calls/s.
 *   (a)   the I/O-bound call against an API that answers every request after exactly 1 s, 4,000 in flight
 *         (40 connections × 100 streams; the runner's LDBOX_MAX_STREAMS_PER_CONNECTION is 128), 40,000
 *         calls: calls/s against min(R64, 4,000/s) (4,000 in flight / 1 s is what the API allows).
 *         Targets: ≥ 0.8×; no call refused or failed; the API got exactly one request per call.
 *         (undici in the runner opens as many connections to the API as it has requests waiting: the peak
 *         is printed.)
 *   (b)   `return 1` at 4,000 in flight (40 × 100), 40,000 calls: goodput (calls answered ok per second of
 *         wall time) against R64. Targets: ≥ 0.8×; no call refused.
 *         (ref), (a) and (b) run on the same runner, in that order.
 *   (c)   memory of waiting calls, on a fresh runner: its RSS idle (after 200 `return 1` calls and 200
 *         ld.request calls answered at once, so the HTTP client is loaded), then with 10,000 I/O-bound calls
 *         waiting (h2load -n 10000 -c 100 -m 100 in the background, against the API in its hold mode, which
 *         answers nothing until POST /release; the bench waits until the API holds 10,000 requests). These
 *         calls carry limits.timeoutMs = 120 s (the default 30 s would count the ramp-up against them).
 *         Figure: (RSS − idle RSS) / 10,000 in KiB per waiting call. Target ≤ 256 KiB. Then the API
 *         releases them, and all 10,000 must be answered ok.
 *   (c2)  only with BENCH_LONG=1: on another fresh runner, 1M `return 1` calls at 64 in flight in chunks of
 *         100k, the runner's RSS after each; after 1M against after the first 100k. Target: within ±10 %.
 *
 * Each phase prints the CPU it used (the runner's main thread, its sandbox workers — the threads at
 * LDBOX_WORKER_NICE — and its other threads, from /proc/<pid>/task; the runner's CPU per call; the API
 * child's; the rest of the machine's, since a shared machine's other work weighs on every figure) and the
 * pool's gauges read every second (`ldbox_runner_pool_busy`: calls in a worker, computing or parked;
 * `ldbox_runner_pool_queue_depth`: calls not started yet), so that one can see where the time went. A summary table ends the run, with PASS/FAIL per
 * target. Exit code 0 whatever the figures (a bench reports, it does not fail CI), 1 when something broke:
 * a child never became ready, a wait timed out, a sample call returned the wrong value, the reference's
 * calls were not all ok.
 *
 * Env: BENCH_SCALE multiplies the call counts of (ref), (a), (b) and (c2) (default 1; 0.1 for a smoke run;
 * (c) always holds 10,000 calls); BENCH_LONG=1 runs (c2) (~2–3 minutes more). Needs h2load (Debian's
 * nghttp2-client) and a file-descriptor limit above ~11,000 (ulimit -n) for (c): the runner holds one socket
 * to the API per waiting call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { type ExecuteRequest, ExecuteRequestSchema, ExecuteResponseSchema, RunnerService } from '../src/gen/ldbox/runner/v1/runner_pb.js';
import { anyFreePort } from '../src/net/local-ports.js';
import { h2load, type H2loadResult } from './lib/h2load.js';
import type { ApiStats } from './lib/slow-api.js';

const SCALE = Number(process.env.BENCH_SCALE ?? '1') > 0 ? Number(process.env.BENCH_SCALE ?? '1') : 1;
const LONG = process.env.BENCH_LONG === '1';
const n = (x: number) => Math.max(100, Math.round(x * SCALE));
const WORKERS = 2;
const REF_CALLS = n(20_000);
const IO_CALLS = n(40_000);
const BURST_CALLS = n(40_000);
const HELD_CALLS = 10_000;
const LONG_CHUNK = n(100_000);
const LONG_CHUNKS = 10;
/** The API's answer time in (a), ms. */
const API_DELAY_MS = 1000;
/** (ref): 64 in flight. */
const REF = { connections: 2, streams: 32 };
/** (a), (b): 4,000 in flight. */
const WIDE = { connections: 40, streams: 100 };
/** (c): 10,000 in flight. */
const HELD = { connections: 100, streams: 100 };
const HELD_TIMEOUT_MS = 120_000;
const EXECUTE_PATH = `/${RunnerService.typeName}/${RunnerService.method.execute.name}`;
const GRPC_HEADERS = ['content-type: application/grpc', 'te: trailers'];
const TRIVIAL = 'return 1';
const ioCode = (api: string, path = '/x') =>
  `const API = ${JSON.stringify(api)};\nconst r = await ld.request({ method: 'GET', url: API + '${path}' });\nreturn r.status`;

const TARGET_RATIO = 0.8;
const TARGET_KIB_PER_CALL = 256;
const TARGET_FLAT = 0.1;

// ------------------------------------------------------------------------------------ child processes

/** Every child this process started; all are killed when it exits, however it exits. */
const children = new Set<ChildProcess>();
function track(proc: ChildProcess): ChildProcess {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  return proc;
}
function killAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAll();
    process.exit(1);
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function exitOf(proc: ChildProcess): Promise<void> {
  return proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise((r) => proc.once('exit', () => r()));
}

/** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
async function stopChild(proc: ChildProcess, graceMs: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = exitOf(proc);
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every `everyMs` until it returns a value (not undefined); throws `what` after `timeoutMs`. */
async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number, everyMs: number, what: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s: ${what()}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------- runner

interface Runner {
  proc: ChildProcess;
  pid: number;
  port: number;
  stop(): Promise<void>;
}

async function startRunner(): Promise<Runner> {
  const port = await anyFreePort();
  // Default settings: nothing of this process's LDBOX_* environment reaches the runner.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('LDBOX_')) env[k] = v;
  Object.assign(env, {
    LDBOX_RUNNER_PORT: String(port),
    LDBOX_POOL_SIZE: String(WORKERS),
    LDBOX_EGRESS_ALLOW: '127.0.0.1',
    LDBOX_LOG_LEVEL: 'warn',
  });
  const bin = new URL('../../bin/ldbox.js', import.meta.url).pathname;
  const proc = track(spawn(process.execPath, [bin, 'runner'], { env, stdio: ['ignore', 'inherit', 'inherit'] }));
  await waitFor(
    async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the runner exited (${proc.exitCode ?? proc.signalCode}) before it was ready`);
      try {
        return (await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined;
      } catch {
        return undefined; // not listening yet
      }
    },
    60_000,
    100,
    () => 'the runner did not become ready (GET /readyz)',
  );
  return { proc, pid: proc.pid!, port, stop: () => stopChild(proc, 15_000) };
}

interface Rss {
  rss: number;
  anon: number;
  file: number;
}

/** The process's resident set from /proc (the runner's includes its worker threads). */
function rssOf(pid: number): Rss {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile') };
}

function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** `ldbox_runner_executions_total` by outcome, from the runner's /metrics. */
async function executions(port: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^ldbox_runner_executions_total\{outcome="(\w+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** The pool's gauges: calls in a worker (computing or parked) and calls waiting for one. */
async function poolGauges(port: number): Promise<{ busy: number; queued: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { busy: gauge('ldbox_runner_pool_busy'), queued: gauge('ldbox_runner_pool_queue_depth') };
}

/** Reads the pool's gauges every second until stopped: their means and maxima over a run. */
function samplePool(port: number): { stop(): Promise<string> } {
  const samples: Array<{ busy: number; queued: number }> = [];
  let scrape: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    scrape = poolGauges(port).then(
      (g) => void samples.push(g),
      () => undefined, // a slow scrape under load: skipped
    );
  }, 1000);
  return {
    async stop() {
      clearInterval(timer);
      await scrape;
      if (samples.length === 0) return 'pool gauges: no sample';
      const stat = (k: 'busy' | 'queued') => {
        const v = samples.map((x) => x[k]);
        return `mean ${fmt(v.reduce((a, b) => a + b, 0) / v.length)}, max ${fmt(Math.max(...v))}`;
      };
      return `pool gauges, ${samples.length} samples 1 s apart: calls in a worker (computing or parked) ${stat('busy')}; calls waiting for a worker ${stat('queued')}`;
    },
  };
}

function rise(before: Record<string, number>, after: Record<string, number>): { ok: number; others: Record<string, number>; notOk: number } {
  const others: Record<string, number> = {};
  let notOk = 0;
  for (const k of Object.keys(after)) {
    const d = after[k]! - (before[k] ?? 0);
    if (k !== 'ok' && d !== 0) {
      others[k] = d;
      notOk += d;
    }
  }
  return { ok: (after['ok'] ?? 0) - (before['ok'] ?? 0), others, notOk };
}

// ------------------------------------------------------------------------------------------------- CPU

const TICK_MS = 10; // USER_HZ
const cpuCount = availableParallelism();

interface ThreadTicks {
  comm: string;
  ticks: number;
  nice: number;
}

function threadTicks(pid: number): Map<number, ThreadTicks> {
  const out = new Map<number, ThreadTicks>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        // After "(comm) ": state is field 3, utime 14, stime 15, nice 19.
        out.set(Number(tid), { comm, ticks: Number(rest[11]) + Number(rest[12]), nice: Number(rest[16]) });
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // the process ended
  }
  return out;
}

function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
}

interface CpuMark {
  at: number;
  runnerPid: number;
  threads: Map<number, ThreadTicks>;
  machine: { busy: number; total: number };
  api: ApiStats | undefined;
}

async function cpuMark(runner: Runner, api: Api | undefined): Promise<CpuMark> {
  return { at: performance.now(), runnerPid: runner.pid, threads: threadTicks(runner.pid), machine: machineTicks(), api: api ? await api.stats() : undefined };
}

/**
 * One line: the runner's cores (its main thread and busiest other threads) and CPU per call, the API's, the
 * rest of the machine's (h2load, this process and whatever else runs there).
 */
async function cpuLine(before: CpuMark, runner: Runner, api: Api | undefined, calls: number): Promise<string> {
  const after = await cpuMark(runner, api);
  const wallMs = after.at - before.at;
  const cores = (ticks: number) => (ticks * TICK_MS) / wallMs;
  // The sandbox workers are the threads that lowered their priority (LDBOX_WORKER_NICE, 10 by default);
  // the rest besides the main thread are V8's platform threads (GC, compiler) and libuv's pool.
  const mainNice = after.threads.get(runner.pid)?.nice ?? 0;
  let total = 0;
  let main = 0;
  let rest = 0;
  const workers: number[] = [];
  for (const [tid, t] of after.threads) {
    const d = t.ticks - (before.threads.get(tid)?.ticks ?? 0);
    total += d;
    if (tid === runner.pid) main = cores(d);
    else if (t.nice > mainNice) workers.push(cores(d));
    else rest += cores(d);
  }
  const others = `sandbox workers ${workers.map((w) => fmt(w, 2)).join(' + ') || 'none'}, other threads (V8 GC/compiler, libuv) ${fmt(rest, 2)}`;
  const machine = ((after.machine.busy - before.machine.busy) * TICK_MS) / wallMs;
  let apiPart = '';
  let apiCores = 0;
  if (before.api && after.api) {
    const us = after.api.cpuUserUs + after.api.cpuSystemUs - before.api.cpuUserUs - before.api.cpuSystemUs;
    apiCores = us / 1000 / wallMs;
    apiPart = `; API child ${fmt(apiCores, 2)} cores`;
  }
  const perCall = calls > 0 ? `, ${fmt((total * TICK_MS) / calls, 2)} ms CPU per call` : '';
  return `CPU over ${fmt(wallMs / 1000, 1)} s: runner ${fmt(cores(total), 2)} cores${perCall} (main thread ${fmt(main, 2)}, ${others})${apiPart}; machine busy ${fmt(machine, 2)} of ${cpuCount} cores, of which ${fmt(Math.max(0, machine - cores(total) - apiCores), 2)} outside the runner and the API (h2load, this process, other work)`;
}

// ------------------------------------------------------------------------------------------ slow API

interface Api {
  proc: ChildProcess;
  port: number;
  url: string;
  stats(): Promise<ApiStats>;
  release(): Promise<number>;
  resetPeak(): Promise<void>;
  stop(): Promise<void>;
}

async function startApi(mode: 'delay' | 'hold'): Promise<Api> {
  const script = new URL('./lib/slow-api.js', import.meta.url).pathname;
  const args = mode === 'delay' ? [script, 'delay', String(API_DELAY_MS)] : [script, 'hold'];
  const proc = track(spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      proc.once('message', (m: { type?: string; port?: number }) =>
        m.type === 'ready' && m.port ? resolve(m.port) : reject(new Error(`slow-api said ${JSON.stringify(m)}`)),
      );
      proc.once('exit', (code) => reject(new Error(`the API child (${mode}) exited (${code}) before it was ready`)));
      proc.once('error', reject);
    }),
    10_000,
    `the API child (${mode}) start`,
  );
  const url = `http://127.0.0.1:${port}`;
  const call = async (method: string, path: string) => {
    const res = await fetch(url + path, { method, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`API ${method} ${path}: HTTP ${res.status}`);
    return res.text();
  };
  return {
    proc,
    port,
    url,
    stats: async () => JSON.parse(await call('GET', '/stats')) as ApiStats,
    release: async () => Number(await call('POST', '/release')),
    resetPeak: async () => void (await call('POST', '/reset-peak')),
    async stop() {
      proc.disconnect();
      await stopChild(proc, 5000);
    },
  };
}

// -------------------------------------------------------------------------------------------- calls

function grpcFrame(bytes: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(bytes.byteLength, 1);
  return Buffer.concat([head, bytes]);
}

function bodyFile(dir: string, name: string, request: ExecuteRequest): string {
  const file = join(dir, `${name}.bin`);
  writeFileSync(file, grpcFrame(toBinary(ExecuteRequestSchema, request)));
  return file;
}

/** One Execute through @grpc/grpc-js: its result as JSON, or a description of its error. */
async function sampleCall(port: number, code: string): Promise<unknown> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    const res = await withTimeout(
      new Promise<ReturnType<typeof fromBinary<typeof ExecuteResponseSchema>>>((resolve, reject) => {
        client.makeUnaryRequest(
          EXECUTE_PATH,
          (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
          (b: Buffer) => fromBinary(ExecuteResponseSchema, b),
          create(ExecuteRequestSchema, { code }),
          new grpc.Metadata(),
          {},
          (err, r) => (err ? reject(err) : resolve(r!)),
        );
      }),
      30_000,
      'a sample call through @grpc/grpc-js',
    );
    if (res.error !== undefined) return `error: ${res.error.message}`;
    return res.result === undefined ? 'no result' : toJson(ValueSchema, res.result);
  } finally {
    client.close();
  }
}

interface Run {
  h2: H2loadResult;
  requests: number;
  ok: number;
  notOk: number;
  others: Record<string, number>;
  elapsedSec: number;
  /** Work requests the API received during the run (when an API was given). */
  apiRequests: number | undefined;
  apiPeakOpen: number | undefined;
  cpu: string;
  pool: string;
}

/** An h2load run of Execute, confirmed by the runner's counters (and the API's, when given). */
async function executeRun(runner: Runner, body: string, requests: number, shape: { connections: number; streams: number }, api?: Api): Promise<Run> {
  await api?.resetPeak();
  const apiBefore = await api?.stats();
  const before = await executions(runner.port);
  const mark = await cpuMark(runner, api);
  const pool = samplePool(runner.port);
  const h2 = await withTimeout(
    h2load({ url: `http://127.0.0.1:${runner.port}${EXECUTE_PATH}`, bodyFile: body, requests, ...shape, headers: GRPC_HEADERS }),
    120_000 + requests * 5,
    `h2load -n ${requests} -c ${shape.connections} -m ${shape.streams}`,
  );
  const cpu = await cpuLine(mark, runner, api, requests);
  const poolLine = await pool.stop();
  const after = await executions(runner.port);
  const apiAfter = await api?.stats();
  const r = rise(before, after);
  return {
    h2,
    requests,
    ...r,
    elapsedSec: h2.elapsedSec,
    apiRequests: apiBefore && apiAfter ? apiAfter.requests - apiBefore.requests : undefined,
    apiPeakOpen: apiAfter?.peakOpen,
    cpu,
    pool: poolLine,
  };
}

function describeRun(label: string, r: Run): void {
  const rate = r.ok / r.elapsedSec;
  console.log(
    `${label}: ${r.requests} calls in ${fmt(r.elapsedSec, 2)} s → ${fmt(rate)} ok calls/s; runner: ok +${r.ok}${r.notOk ? `, ${JSON.stringify(r.others)}` : ', nothing else'}; h2load: ${r.h2.succeeded} HTTP 200, ${r.h2.failed} failed, mean ${fmt(r.h2.meanMs, 1)} ms (sd ${fmt(r.h2.sdMs, 1)})`,
  );
  if (r.apiRequests !== undefined) console.log(`  API: ${r.apiRequests} requests received, at most ${r.apiPeakOpen} connections open at once`);
  console.log(`  ${r.cpu}`);
  console.log(`  ${r.pool}`);
}

/** h2load in the background, killable, with its summary's counts once it exits. */
function h2loadBackground(
  url: string,
  body: string,
  requests: number,
  shape: { connections: number; streams: number },
): { proc: ChildProcess; done: Promise<{ succeeded: number; failed: number; stdout: string }> } {
  const args = ['-n', String(requests), '-c', String(shape.connections), '-m', String(shape.streams), '-t', '1', '-d', body];
  for (const h of GRPC_HEADERS) args.push('-H', h);
  args.push(url);
  const proc = track(spawn('h2load', args, { stdio: ['ignore', 'pipe', 'inherit'] }));
  let stdout = '';
  proc.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  const done = new Promise<{ succeeded: number; failed: number; stdout: string }>((resolve, reject) => {
    proc.once('error', reject);
    // 'close', not 'exit': its stdout is read to the end by then.
    proc.once('close', () => {
      const m = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(stdout);
      if (!m) reject(new Error(`cannot read h2load's output:\n${stdout}`));
      else resolve({ succeeded: Number(m[1]), failed: Number(m[2]), stdout });
    });
  });
  done.catch(() => undefined); // awaited later; never an unhandled rejection meanwhile
  return { proc, done };
}

// --------------------------------------------------------------------------------------------- main

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));
const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MiB`;

interface Row {
  figure: string;
  value: string;
  target: string;
  pass: boolean | undefined;
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-bench-io-'));
  const rows: Row[] = [];
  let broken = 0;
  let runner: Runner | undefined;
  let api: Api | undefined;
  try {
    console.log(
      `bench:io — runner with ${WORKERS} workers, default settings; BENCH_SCALE=${SCALE}${LONG ? ', BENCH_LONG=1' : ''}; h2load, calls confirmed by the runner's counters`,
    );
    console.log(
      `machine: ${cpuCount} cores, load average ${loadavg()
        .map((x) => fmt(x, 2))
        .join(' ')} at the start\n`,
    );
    runner = await startRunner();
    api = await startApi('delay');
    const trivialBody = bodyFile(dir, 'trivial', create(ExecuteRequestSchema, { code: TRIVIAL }));
    const ioBody = bodyFile(dir, 'io', create(ExecuteRequestSchema, { code: ioCode(api.url) }));

    const sampleTrivial = await sampleCall(runner.port, TRIVIAL);
    const sampleIo = await sampleCall(runner.port, ioCode(api.url));
    console.log(`sample calls (grpc-js): \`return 1\` → ${JSON.stringify(sampleTrivial)}, ld.request → ${JSON.stringify(sampleIo)}`);
    if (sampleTrivial !== 1 || sampleIo !== 200) {
      broken++;
      console.log('  BROKEN: the sample calls must return 1 and 200');
    }

    // (ref)
    const ref = await executeRun(runner, trivialBody, REF_CALLS, REF);
    describeRun(`(ref) \`return 1\`, ${REF.connections}×${REF.streams} in flight`, ref);
    const r64 = ref.ok / ref.elapsedSec;
    if (ref.ok !== REF_CALLS || ref.notOk !== 0) {
      broken++;
      console.log('  BROKEN: the reference calls were not all ok');
    }
    rows.push({ figure: '(ref) R64: `return 1` at 64 in flight', value: `${fmt(r64)} calls/s`, target: '—', pass: undefined });

    // (a)
    const inFlightA = WIDE.connections * WIDE.streams;
    const ideal = inFlightA / (API_DELAY_MS / 1000);
    const a = await executeRun(runner, ioBody, IO_CALLS, WIDE, api);
    describeRun(`(a) ld.request to a 1 s API, ${WIDE.connections}×${WIDE.streams} in flight`, a);
    const rateA = a.ok / a.elapsedSec;
    const bound = Math.min(r64, ideal);
    const ratioA = rateA / bound;
    const failedA = a.notOk + (a.requests - a.ok - a.notOk);
    rows.push({
      figure: `(a) ld.request (1 s API), ${inFlightA} in flight: calls/s / min(R64, ${fmt(ideal)})`,
      value: `${fmt(rateA)} / ${fmt(bound)} = ${fmt(ratioA, 2)}×`,
      target: `≥ ${TARGET_RATIO}×`,
      pass: ratioA >= TARGET_RATIO,
    });
    rows.push({
      figure: '(a) calls refused or failed',
      value: `${failedA}${a.notOk ? ` ${JSON.stringify(a.others)}` : ''}`,
      target: '0',
      pass: failedA === 0,
    });
    rows.push({
      figure: '(a) API requests received / calls',
      value: `${a.apiRequests} / ${a.requests}`,
      target: 'equal',
      pass: a.apiRequests === a.requests,
    });

    // (b)
    const b = await executeRun(runner, trivialBody, BURST_CALLS, WIDE);
    describeRun(`(b) \`return 1\`, ${WIDE.connections}×${WIDE.streams} in flight`, b);
    const goodput = b.ok / b.elapsedSec;
    const ratioB = goodput / r64;
    const refusedB = b.requests - b.ok;
    rows.push({
      figure: `(b) \`return 1\` at ${inFlightA} in flight: goodput / R64`,
      value: `${fmt(goodput)} / ${fmt(r64)} = ${fmt(ratioB, 2)}×`,
      target: `≥ ${TARGET_RATIO}×`,
      pass: ratioB >= TARGET_RATIO,
    });
    rows.push({
      figure: '(b) calls refused (not ok)',
      value: `${refusedB}${b.notOk ? ` ${JSON.stringify(b.others)}` : ''}${b.h2.failed ? `, h2load failed ${b.h2.failed}` : ''}`,
      target: '0',
      pass: refusedB === 0,
    });

    await runner.stop();
    runner = undefined;
    await api.stop();
    api = undefined;

    // (c) on a fresh runner.
    console.log('\n(c) on a fresh runner');
    runner = await startRunner();
    api = await startApi('hold');
    const rssReady = rssOf(runner.pid);
    // Idle: a few trivial calls, and a few ld.request calls answered at once (GET /now, which the API answers
    // in any mode), so that the workers' HTTP client is loaded.
    await executeRun(runner, trivialBody, 200, REF);
    const nowBody = bodyFile(dir, 'now', create(ExecuteRequestSchema, { code: ioCode(api.url, '/now') }));
    const warm = await executeRun(runner, nowBody, 200, REF);
    if (warm.ok !== 200) {
      broken++;
      console.log(`  BROKEN: the idle warm-up's ld.request calls were not all ok: ${JSON.stringify(warm.others)}`);
    }
    const idle = rssOf(runner.pid);
    const idleFds = openFds(runner.pid);
    console.log(
      `  runner RSS when ready ${mib(rssReady.rss)}; idle after 200 + 200 calls ${mib(idle.rss)} (anon ${mib(idle.anon)}, file ${mib(idle.file)}), ${idleFds} fds`,
    );

    const heldBody = bodyFile(dir, 'held', create(ExecuteRequestSchema, { code: ioCode(api.url), limits: { timeoutMs: HELD_TIMEOUT_MS } }));
    const before = await executions(runner.port);
    const mark = await cpuMark(runner, api);
    const t0 = performance.now();
    const bg = h2loadBackground(`http://127.0.0.1:${runner.port}${EXECUTE_PATH}`, heldBody, HELD_CALLS, HELD);
    let lastHeld = 0;
    let lastNotOk = 0;
    const reached = await waitFor(
      async () => {
        lastHeld = (await api!.stats()).held;
        if (lastHeld >= HELD_CALLS) return 'all';
        lastNotOk = rise(before, await executions(runner!.port)).notOk;
        // Some calls were refused or failed: 10,000 will never be held.
        if (lastHeld + lastNotOk >= HELD_CALLS || bg.proc.exitCode !== null) return 'partial';
        return undefined;
      },
      90_000,
      100,
      () => `the API held ${lastHeld} of ${HELD_CALLS} requests (runner: ${lastNotOk} calls not ok)`,
    );
    const rampSec = (performance.now() - t0) / 1000;
    const heldRss = rssOf(runner.pid);
    const heldFds = openFds(runner.pid);
    const apiHeld = await api.stats();
    const heldPool = await poolGauges(runner.port);
    const rampCpu = await cpuLine(mark, runner, api, HELD_CALLS);
    const heldNow = apiHeld.held;
    const perCallKib = (heldRss.rss - idle.rss) / heldNow / 1024;
    console.log(
      `  ${heldNow} calls waiting (${reached === 'all' ? 'all' : 'NOT ALL'}) ${fmt(rampSec, 1)} s after h2load started: runner RSS ${mib(heldRss.rss)} (anon ${mib(heldRss.anon)}, file ${mib(heldRss.file)}), ${heldFds} fds; API: ${apiHeld.open} connections open`,
    );
    console.log(
      `  (RSS − idle) / ${heldNow} = ${fmt(perCallKib, 1)} KiB per waiting call (anon only: ${fmt((heldRss.anon - idle.anon) / heldNow / 1024, 1)} KiB)`,
    );
    console.log(`  ramp-up ${rampCpu}`);
    console.log(`  pool gauges then: ${heldPool.busy} calls in a worker (parked), ${heldPool.queued} waiting for a worker`);
    const released = await api.release();
    const markRelease = await cpuMark(runner, api);
    const t1 = performance.now();
    const bgResult = await withTimeout(bg.done, 120_000, 'the 10,000 calls after release');
    const drainSec = (performance.now() - t1) / 1000;
    const afterHeld = rise(before, await executions(runner.port));
    console.log(
      `  released ${released}; h2load ended ${fmt(drainSec, 1)} s later: ${bgResult.succeeded} HTTP 200, ${bgResult.failed} failed; runner: ok +${afterHeld.ok}${afterHeld.notOk ? `, ${JSON.stringify(afterHeld.others)}` : ', nothing else'}`,
    );
    console.log(`  drain ${await cpuLine(markRelease, runner, api, HELD_CALLS)}`);
    console.log(`  runner RSS after the drain ${mib(rssOf(runner.pid).rss)}`);
    rows.push({
      figure: `(c) runner RSS per waiting ld.request call ((RSS − idle) / ${heldNow})`,
      value: `${fmt(perCallKib, 1)} KiB (${mib(idle.rss)} → ${mib(heldRss.rss)})`,
      target: `≤ ${TARGET_KIB_PER_CALL} KiB`,
      pass: perCallKib <= TARGET_KIB_PER_CALL && heldNow === HELD_CALLS,
    });
    rows.push({
      figure: `(c) the ${HELD_CALLS} held calls answered ok after release`,
      value: `${afterHeld.ok}${afterHeld.notOk ? ` ${JSON.stringify(afterHeld.others)}` : ''}`,
      target: String(HELD_CALLS),
      pass: afterHeld.ok === HELD_CALLS && afterHeld.notOk === 0,
    });

    await runner.stop();
    runner = undefined;
    await api.stop();
    api = undefined;

    // (c2)
    if (LONG) {
      console.log(`\n(c2) on a fresh runner: ${LONG_CHUNKS} × ${LONG_CHUNK} \`return 1\` calls at ${REF.connections}×${REF.streams} in flight`);
      runner = await startRunner();
      const rss: number[] = [];
      for (let i = 1; i <= LONG_CHUNKS; i++) {
        const r = await executeRun(runner, trivialBody, LONG_CHUNK, REF);
        rss.push(rssOf(runner.pid).rss);
        const note = r.ok === LONG_CHUNK && r.notOk === 0 ? '' : ` (ok ${r.ok}, ${JSON.stringify(r.others)})`;
        console.log(`  after ${i * LONG_CHUNK} calls: RSS ${mib(rss[i - 1]!)}, ${fmt(r.ok / r.elapsedSec)} calls/s${note}`);
        if (i === 1 || i === LONG_CHUNKS) console.log(`    ${r.cpu}`);
      }
      const drift = rss[LONG_CHUNKS - 1]! / rss[0]! - 1;
      rows.push({
        figure: `(c2) runner RSS after ${LONG_CHUNKS * LONG_CHUNK} calls vs after ${LONG_CHUNK}`,
        value: `${mib(rss[0]!)} → ${mib(rss[LONG_CHUNKS - 1]!)} (${drift >= 0 ? '+' : ''}${fmt(drift * 100, 1)} %)`,
        target: `±${TARGET_FLAT * 100} %`,
        pass: Math.abs(drift) <= TARGET_FLAT,
      });
      await runner.stop();
      runner = undefined;
    } else {
      rows.push({
        figure: '(c2) runner RSS after 1M calls vs after 100k',
        value: 'skipped (BENCH_LONG=1 npm run bench:io runs it, ~2–3 min more)',
        target: `±${TARGET_FLAT * 100} %`,
        pass: undefined,
      });
    }
  } catch (err) {
    broken++;
    console.error(`\nbench:io BROKE: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  } finally {
    if (api) await api.stop().catch(() => undefined);
    if (runner) await runner.stop().catch(() => undefined);
    killAll();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    `\nload average at the end: ${loadavg()
      .map((x) => fmt(x, 2))
      .join(' ')} (${cpuCount} cores)`,
  );
  console.log('\n| figure | value | target | result |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.figure} | ${r.value} | ${r.target} | ${r.pass === undefined ? '—' : r.pass ? 'PASS' : 'FAIL'} |`);
  if (broken) console.log(`\nsomething broke (${broken}): exit code 1`);
  return broken === 0 ? 0 : 1;
}

process.exit(await main());
