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
 *   (d)   end to end, one executor and that runner (2 workers): the whole pipeline as bench:soak starts it —
 *         a nats-server (bench/lib/webhook-nats.ts), the gateway (bench/lib/webhook-server.js, LDBOX_WEBHOOK_RATE=0),
 *         the runner (LDBOX_POOL_SIZE=2, LDBOX_EGRESS_ALLOW=127.0.0.1) and the executor
 *         (bench/lib/webhook-e2e.js), every LDBOX_* variable of this process's environment dropped, logs at
 *         warn — and an API in delay mode (1 s). Two one-node workflows through the control plane, webhook
 *         without auth: `return 1`, and the I/O-bound call above. After a warm-up that is not counted (64
 *         `return 1` and 16 ld.request webhooks), burst 1: 4,000 webhooks of `return 1`, 64 POSTs in flight
 *         (keep-alive connections, as bench:webhook); its time T1 runs from the first POST to the last
 *         execution's final record, seen by a watch on the `ldbox-executions` KV bucket (updates only).
 *         Burst 2: the same with the ld.request workflow, time T2; then, once the JOBS stream is empty and
 *         1.5 s more, the API's request count. Target: T2 ≤ (T1 + 1 s) / 0.8, every execution succeeded,
 *         and the API got exactly one request per webhook (every node ran exactly once). A burst is waited
 *         for at most BENCH_D_WAIT_S (400) s from its first POST; what was done by then is reported (and
 *         FAIL). It runs once per executor setting, each on a fresh pipeline: (d1) LDBOX_EXECUTOR_CONCURRENCY
 *         unset (the executor's default, 16: at 1 s a node, ≥ 250 s for 4,000), (d2) 4096 (its maximum is
 *         65,536). Each burst prints the CPU of every process of the pipeline and the runner's pool gauges;
 *         progress lines every 30 s.
 *
 * Each phase prints the CPU it used (the runner's main thread, its sandbox workers — the threads at
 * LDBOX_WORKER_NICE — and its other threads, from /proc/<pid>/task; the runner's CPU per call; the API
 * child's; the rest of the machine's, since a shared machine's other work weighs on every figure) and the
 * pool's gauges read every second (`ldbox_runner_pool_busy`: calls in a worker, computing or parked;
 * `ldbox_runner_pool_queue_depth`: calls not started yet), so that one can see where the time went. A summary table ends the run, with PASS/FAIL per
 * target. Exit code 0 whatever the figures (a bench reports, it does not fail CI), 1 when something broke:
 * a child never became ready, a wait timed out, a sample call returned the wrong value, the reference's
 * calls were not all ok, (d)'s warm-up or `return 1` burst did not all succeed.
 *
 * Env: BENCH_SCALE multiplies the call counts of (ref), (a), (b) and (c2) and the bursts of (d) (default 1;
 * 0.1 for a smoke run; (c) always holds 10,000 calls); BENCH_LONG=1 runs (c2) (~2–3 minutes more);
 * BENCH_ONLY=d runs (d) alone, BENCH_ONLY=abc everything but (d) (unset: all); BENCH_EXECUTOR_CONCURRENCY,
 * the executor settings of (d)'s sub-parts, comma-separated, each a number (LDBOX_EXECUTOR_CONCURRENCY) or
 * `default` (unset) — default `default,4096`, e.g. `4096` for (d2) alone; BENCH_D_WAIT_S (400), the longest
 * wait for a burst of (d). Needs h2load (Debian's nghttp2-client), nats-server for (d)
 * (scripts/ensure-nats-server.sh finds it) and a file-descriptor limit above ~11,000 (ulimit -n) for (c): the
 * runner holds one socket to the API per waiting call ((d2): ~4,000).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type KV, Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type ExecuteRequest, ExecuteRequestSchema, ExecuteResponseSchema, RunnerService } from '../src/gen/ldbox/runner/v1/runner_pb.js';
import { anyFreePort } from '../src/net/local-ports.js';
import { h2load, type H2loadResult } from './lib/h2load.js';
import type { ApiStats } from './lib/slow-api.js';
import { type Child, createWorkflow, post, startChild } from './lib/webhook-e2e.js';
import { type BenchNatsServer, procCpuMicros, startBenchNats } from './lib/webhook-nats.js';

/** A bad setting: says so and exits with code 2. */
function usage(message: string): never {
  console.error(`bench:io: ${message}`);
  process.exit(2);
}

const SCALE = Number(process.env.BENCH_SCALE ?? '1') > 0 ? Number(process.env.BENCH_SCALE ?? '1') : 1;
const LONG = process.env.BENCH_LONG === '1';
/** BENCH_ONLY: unset runs every part; `abc` runs (ref) to (c2) only; `d` runs (d) only. */
const ONLY = process.env.BENCH_ONLY ?? '';
if (ONLY !== '' && ONLY !== 'abc' && ONLY !== 'd') usage(`BENCH_ONLY must be unset, "abc" or "d", got "${ONLY}"`);
const RUN_ABC = ONLY !== 'd';
const RUN_D = ONLY !== 'abc';
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

// ------------------------------------------------------------------------------------ (d) end to end

/** (d): webhooks per burst. */
const D_BURST = n(4000);
/** (d): POSTs in flight (keep-alive connections, one request each), as bench:webhook's 64. */
const D_CONNS = 64;
/** (d): the longest wait for a burst, first POST → every execution final; what was done by then is reported. */
const D_WAIT_MS = (() => {
  const raw = process.env.BENCH_D_WAIT_S;
  const s = raw === undefined || raw === '' ? 400 : Number(raw);
  if (!Number.isFinite(s) || s <= 0) usage(`BENCH_D_WAIT_S must be a positive number of seconds, got "${raw}"`);
  return s * 1000;
})();
/** (d): uncounted webhooks before the bursts (`return 1`, then the I/O node), sent 16 at a time. */
const D_WARMUP = { trivial: 64, io: 16, conns: 16 };
/** (d): a progress line this often during a burst. */
const D_PROGRESS_MS = 30_000;
/** (d): nats-server's max_payload (fits the gateway's default body limit, as bench:soak). */
const D_MAX_PAYLOAD = 8 * 1024 * 1024;
const EXECUTIONS_BUCKET = 'ldbox-executions';

/**
 * (d)'s sub-parts: LDBOX_EXECUTOR_CONCURRENCY of each executor, undefined = unset (the executor's default,
 * 16). BENCH_EXECUTOR_CONCURRENCY: a comma-separated list of numbers or `default`; default `default,4096`.
 */
const D_CONCURRENCIES: Array<number | undefined> = (process.env.BENCH_EXECUTOR_CONCURRENCY || 'default,4096').split(',').map((raw) => {
  const s = raw.trim();
  if (s === 'default') return undefined;
  const c = Number(s);
  if (!Number.isInteger(c) || c < 1 || c > 65_536) usage(`BENCH_EXECUTOR_CONCURRENCY: "${s}" is neither "default" nor an integer in 1..65536`);
  return c;
});

/** The whole pipeline of (d): nats-server, then gateway, runner and executor as child processes. */
interface Pipeline {
  nats: BenchNatsServer;
  nc: NatsConnection;
  kv: KV;
  jsm: JetStreamManager;
  gateway: Child;
  runner: Child;
  executor: Child;
  adminToken: string;
  /** Executor first (it drains its jobs in flight), then the gateway, the runner, the connection, nats-server. */
  stop(): Promise<void>;
}

/** This process's environment without any LDBOX_* variable (set to undefined: spawn leaves those out). */
function withoutLdbox(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of Object.keys(process.env)) if (k.startsWith('LDBOX_')) env[k] = undefined;
  return env;
}

async function startPipeline(concurrency: number | undefined): Promise<Pipeline> {
  const base = withoutLdbox();
  const children: Child[] = [];
  let nats: BenchNatsServer | undefined;
  let nc: NatsConnection | undefined;
  const stop = async () => {
    for (const kind of ['executor', 'gateway', 'runner'] as const) {
      const c = children.find((x) => x.kind === kind);
      if (c) await c.stop().catch(() => c.proc.kill('SIGKILL'));
    }
    await nc?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
  };
  try {
    nats = await startBenchNats({ maxPayload: D_MAX_PAYLOAD });
    nc = await connect({ servers: nats.url, name: 'bench-io-d' });
    const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`;
    const dataKey = randomBytes(32).toString('base64');
    const started = await Promise.allSettled([
      startChild('gateway', {
        ...base,
        LDBOX_GATEWAY_PORT: '0',
        LDBOX_GATEWAY_HOST: '127.0.0.1',
        LDBOX_ADMIN_TOKEN: adminToken,
        LDBOX_DATA_KEY: dataKey,
        NATS_URL: nats.url,
        LDBOX_WEBHOOK_RATE: '0',
        LDBOX_LOG_LEVEL: 'warn',
      }),
      startChild('runner', {
        ...base,
        LDBOX_RUNNER_PORT: '0',
        LDBOX_POOL_SIZE: String(WORKERS),
        LDBOX_EGRESS_ALLOW: '127.0.0.1',
        LDBOX_LOG_LEVEL: 'warn',
      }),
    ]);
    for (const r of started) if (r.status === 'fulfilled') children.push(r.value);
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    const [gateway, runner] = children as [Child, Child];
    // After the gateway: it creates the JOBS stream and the buckets the executor opens.
    const executor = await startChild('executor', {
      ...base,
      NATS_URL: nats.url,
      LDBOX_EXECUTOR_PORT: '0',
      LDBOX_DATA_KEY: dataKey,
      LDBOX_RUNNER_URLS: `http://127.0.0.1:${runner.port}`,
      LDBOX_LOG_LEVEL: 'warn',
      ...(concurrency === undefined ? {} : { LDBOX_EXECUTOR_CONCURRENCY: String(concurrency) }),
    });
    children.push(executor);
    const kv = await new Kvm(jetstream(nc)).open(EXECUTIONS_BUCKET);
    const jsm = await jetstreamManager(nc);
    return { nats, nc, kv, jsm, gateway, runner, executor, adminToken, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** CPU so far of the pipeline's processes, µs. */
function pipelineCpu(p: Pipeline, api: Api): Record<string, number> {
  const self = process.cpuUsage();
  return {
    gateway: procCpuMicros(p.gateway.proc.pid!),
    executor: procCpuMicros(p.executor.proc.pid!),
    runner: procCpuMicros(p.runner.proc.pid!),
    'nats-server': procCpuMicros(p.nats.pid),
    API: procCpuMicros(api.proc.pid!),
    'this process': self.user + self.system,
  };
}

interface BurstResult {
  sent: number;
  accepted: number;
  /** Not 202 or no answer. */
  rejected: number;
  firstRejection: string | undefined;
  succeeded: number;
  failed: number;
  firstFailure: string | undefined;
  /** Every accepted execution final within D_WAIT_MS of the first POST. */
  done: boolean;
  /** First POST → the last POST answered, ms. */
  postMs: number;
  /** First POST → the last final record seen (when not done: → the give-up time), ms. */
  wallMs: number;
  /** The runner's `ldbox_runner_executions_total` rises over the burst. */
  runner: ReturnType<typeof rise>;
  cpu: string;
  pool: string;
}

/**
 * `count` webhooks of `workflowId`, `conns` POSTs in flight, as fast as the gateway answers; then waits
 * until every accepted execution's final record (`succeeded` or `failed`) was seen by a KV watch (updates
 * only), at most `waitMs` after the first POST. The first final record of each execution counts (the
 * executor writes a finished record again when it charges it).
 */
async function webhookBurst(
  p: Pipeline,
  api: Api,
  workflowId: string,
  count: number,
  conns: number,
  waitMs: number,
  progress?: (line: string) => void,
): Promise<BurstResult> {
  const finals = new Map<string, { status: 'succeeded' | 'failed'; at: number; error?: string }>();
  const prefix = `${workflowId}.`;
  const watch = await p.kv.watch({ key: `${workflowId}.*`, include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true });
  const watching = (async () => {
    for await (const e of watch) {
      const at = performance.now();
      if (e.operation !== 'PUT' || !e.key.startsWith(prefix)) continue;
      let rec: { status?: string; error?: string };
      try {
        rec = e.json();
      } catch {
        continue;
      }
      const id = e.key.slice(prefix.length);
      if ((rec.status === 'succeeded' || rec.status === 'failed') && !finals.has(id)) finals.set(id, { status: rec.status, at, error: rec.error });
    }
  })();
  watching.catch(() => undefined);
  const agent = new http.Agent({ keepAlive: true, maxSockets: conns });
  const path = `/api/hooks/workflows/${workflowId}`;
  const ids: string[] = [];
  let rejected = 0;
  let firstRejection: string | undefined;
  const runnerBefore = await executions(p.runner.port);
  const pool = samplePool(p.runner.port);
  const cpu0 = pipelineCpu(p, api);
  const machine0 = machineTicks();
  const t0 = performance.now();
  const deadline = t0 + waitMs;
  let sent = 0;
  let postsDone = false;
  const ticker = progress
    ? setInterval(() => {
        const s = [...finals.values()].filter((f) => f.status === 'succeeded').length;
        api.stats().then(
          (st) =>
            progress(
              `  … ${fmt((performance.now() - t0) / 1000)} s: ${postsDone ? `all ${ids.length} accepted` : `${ids.length} accepted so far`}, ${s} succeeded, ${finals.size - s} failed; API ${st.requests} requests, ${st.held} waiting`,
            ),
          () => undefined,
        );
      }, D_PROGRESS_MS)
    : undefined;
  try {
    await Promise.all(
      Array.from({ length: conns }, async () => {
        while (sent < count) {
          const nth = sent++;
          try {
            const r = await post(agent, p.gateway.port, path, JSON.stringify({ n: nth }));
            const id = r.status === 202 ? (JSON.parse(r.text) as { executionId?: string }).executionId : undefined;
            if (id) ids.push(id);
            else {
              rejected++;
              firstRejection ??= `HTTP ${r.status}: ${r.text.slice(0, 200)}`;
            }
          } catch (err) {
            rejected++;
            firstRejection ??= `POST failed: ${(err as Error).message}`;
          }
        }
      }),
    );
    postsDone = true;
    const postMs = performance.now() - t0;
    let pending = ids.filter((id) => !finals.has(id));
    while (pending.length > 0 && performance.now() < deadline) {
      await sleep(50);
      pending = pending.filter((id) => !finals.has(id));
    }
    const done = pending.length === 0;
    const tEnd = performance.now();
    const cpu1 = pipelineCpu(p, api);
    const machine1 = machineTicks();
    const mine = ids.map((id) => finals.get(id)).filter((f) => f !== undefined);
    const wallMs = done ? Math.max(t0, ...mine.map((f) => f.at)) - t0 : deadline - t0;
    const cpuWallMs = tEnd - t0;
    const cores = (us: number) => us / 1000 / cpuWallMs;
    const parts = Object.keys(cpu1).map((k) => `${k} ${fmt(cores(cpu1[k]! - cpu0[k]!), 2)}`);
    const machine = ((machine1.busy - machine0.busy) * TICK_MS) / cpuWallMs;
    return {
      sent: count,
      accepted: ids.length,
      rejected,
      firstRejection,
      succeeded: mine.filter((f) => f.status === 'succeeded').length,
      failed: mine.filter((f) => f.status === 'failed').length,
      firstFailure: mine.find((f) => f.status === 'failed')?.error,
      done,
      postMs,
      wallMs,
      runner: rise(runnerBefore, await executions(p.runner.port)),
      cpu: `CPU over ${fmt(cpuWallMs / 1000, 1)} s, cores: ${parts.join(', ')}; machine busy ${fmt(machine, 2)} of ${cpuCount} cores`,
      pool: await pool.stop(),
    };
  } finally {
    if (ticker) clearInterval(ticker);
    await pool.stop().catch(() => undefined);
    watch.stop();
    await watching.catch(() => undefined);
    agent.destroy();
  }
}

function describeBurst(label: string, b: BurstResult): void {
  const finished = b.done
    ? `first POST → last execution final ${fmt(b.wallMs / 1000, 2)} s (${fmt(b.succeeded / (b.wallMs / 1000))} executions/s)`
    : `NOT ALL FINAL ${fmt(b.wallMs / 1000)} s after the first POST: ${b.accepted - b.succeeded - b.failed} of ${b.accepted} still pending`;
  console.log(
    `${label}: ${b.sent} webhooks, ${D_CONNS} POSTs in flight: ${b.accepted} accepted (202) in ${fmt(b.postMs / 1000, 2)} s${b.rejected ? `, ${b.rejected} NOT (${b.firstRejection})` : ''}; executions ${b.succeeded} succeeded, ${b.failed} failed; ${finished}`,
  );
  if (b.firstFailure) console.log(`  first failed execution: ${b.firstFailure}`);
  console.log(`  runner: ok +${b.runner.ok}${b.runner.notOk ? `, ${JSON.stringify(b.runner.others)}` : ', nothing else'}`);
  console.log(`  ${b.cpu}`);
  console.log(`  runner ${b.pool}`);
}

/** Waits until the JOBS stream is empty (every job acknowledged after its final record), at most `ms`; its message count then. */
async function jobsLeft(jsm: JetStreamManager, ms: number): Promise<number> {
  const until = performance.now() + ms;
  for (;;) {
    const left = (await jsm.streams.info('JOBS')).state.messages;
    if (left === 0 || performance.now() >= until) return left;
    await sleep(100);
  }
}

/**
 * (d) with one executor setting: a fresh pipeline and API; a warm-up; the `return 1` burst; the I/O burst.
 * Adds its rows; returns the number of things that broke (a trivial burst not all succeeded).
 */
async function partD(label: string, concurrency: number | undefined, rows: Row[]): Promise<number> {
  const setting = concurrency === undefined ? 'LDBOX_EXECUTOR_CONCURRENCY unset (the default, 16)' : `LDBOX_EXECUTOR_CONCURRENCY=${concurrency}`;
  console.log(`\n(${label}) end to end, executor ${setting}: fresh nats-server, gateway, runner (${WORKERS} workers), executor, API (1 s)`);
  let broken = 0;
  let pipeline: Pipeline | undefined;
  let api: Api | undefined;
  try {
    [pipeline, api] = await Promise.all([startPipeline(concurrency), startApi('delay')]);
    const p = pipeline;
    console.log(
      `  nats-server pid ${p.nats.pid}, gateway ${p.gateway.proc.pid}, executor ${p.executor.proc.pid}, runner ${p.runner.proc.pid}, API ${api.proc.pid}; load average ${loadavg()
        .map((x) => fmt(x, 2))
        .join(' ')}`,
    );
    const trivialWf = await createWorkflow(p.gateway.port, p.adminToken, 'bench-io-trivial', { code: TRIVIAL });
    const ioWf = await createWorkflow(p.gateway.port, p.adminToken, 'bench-io-request', { code: ioCode(api.url) });

    // Warm-up, not counted: JIT, connections (gateway, NATS, runner, the runner's HTTP client to the API).
    const wt = await webhookBurst(p, api, trivialWf, D_WARMUP.trivial, D_WARMUP.conns, 60_000);
    const wi = await webhookBurst(p, api, ioWf, D_WARMUP.io, D_WARMUP.conns, 60_000);
    console.log(
      `  warm-up (not counted): ${wt.succeeded}/${D_WARMUP.trivial} \`return 1\` and ${wi.succeeded}/${D_WARMUP.io} ld.request executions succeeded in ${fmt(wt.wallMs / 1000, 1)} s and ${fmt(wi.wallMs / 1000, 1)} s`,
    );
    if (wt.succeeded !== D_WARMUP.trivial || wi.succeeded !== D_WARMUP.io) {
      broken++;
      console.log(
        `  BROKEN: the warm-up's executions did not all succeed${wi.firstFailure || wt.firstFailure ? `: ${wt.firstFailure ?? wi.firstFailure}` : ''}`,
      );
    }
    await jobsLeft(p.jsm, 10_000);

    // Burst 1: `return 1`.
    const trivial = await webhookBurst(p, api, trivialWf, D_BURST, D_CONNS, D_WAIT_MS, (l) => console.log(l));
    describeBurst(`  (${label}) burst 1, \`return 1\``, trivial);
    const trivialOk = trivial.done && trivial.succeeded === D_BURST;
    if (!trivialOk) {
      broken++;
      console.log('  BROKEN: the `return 1` burst did not all succeed in time');
    }
    const leftAfterTrivial = await jobsLeft(p.jsm, 30_000);
    if (leftAfterTrivial) console.log(`  JOBS still holds ${leftAfterTrivial} jobs 30 s after the \`return 1\` burst`);

    // Burst 2: the I/O-bound node; the API counts its requests.
    const apiBefore = await api.stats();
    await api.resetPeak();
    const io = await webhookBurst(p, api, ioWf, D_BURST, D_CONNS, D_WAIT_MS, (l) => console.log(l));
    describeBurst(`  (${label}) burst 2, ld.request to the 1 s API`, io);
    // Every job acknowledged (a job is acknowledged after its final record), and a second's grace for a late duplicate run.
    const left = io.done ? await jobsLeft(p.jsm, 30_000) : (await p.jsm.streams.info('JOBS')).state.messages;
    if (io.done) await sleep(API_DELAY_MS + 500);
    const apiAfter = await api.stats();
    const apiRequests = apiAfter.requests - apiBefore.requests;
    console.log(
      `  API: ${apiRequests} requests during the burst${io.done ? ` (read once JOBS was ${left ? `NOT empty: ${left} jobs left` : 'empty'} and ${fmt((API_DELAY_MS + 500) / 1000, 1)} s more)` : ` by the give-up time (JOBS still holds ${left} jobs)`}, at most ${apiAfter.peakOpen} connections open at once`,
    );

    const goalMs = (trivial.wallMs + API_DELAY_MS) / TARGET_RATIO;
    const pass = trivialOk && io.done && io.succeeded === D_BURST && io.wallMs <= goalMs;
    console.log(
      `  (${label}) goal: (${fmt(trivial.wallMs / 1000, 2)} s + ${API_DELAY_MS / 1000} s) / ${TARGET_RATIO} = ${fmt(goalMs / 1000, 2)} s; the ld.request burst ${io.done ? `took ${fmt(io.wallMs / 1000, 2)} s` : `was not done after ${fmt(io.wallMs / 1000)} s`} → ${pass ? 'PASS' : 'FAIL'}`,
    );
    const tag = `(${label}) ${concurrency === undefined ? 'executor default (16)' : `executor ${concurrency}`}`;
    rows.push({
      figure: `${tag}: ${D_BURST} webhooks, \`return 1\`: first POST → last succeeded`,
      value: trivial.done ? `${fmt(trivial.wallMs / 1000, 2)} s` : `not done in ${fmt(trivial.wallMs / 1000)} s (${trivial.succeeded} succeeded)`,
      target: '—',
      pass: undefined,
    });
    rows.push({
      figure: `${tag}: ${D_BURST} webhooks, ld.request (1 s API): first POST → last succeeded`,
      value: io.done
        ? `${fmt(io.wallMs / 1000, 2)} s`
        : `not done in ${fmt(io.wallMs / 1000)} s: ${io.succeeded} succeeded by then (${fmt(io.succeeded / (io.wallMs / 1000), 1)}/s)`,
      target: `≤ (${fmt(trivial.wallMs / 1000, 2)} + 1) / ${TARGET_RATIO} = ${fmt(goalMs / 1000, 2)} s`,
      pass,
    });
    rows.push({
      figure: `${tag}: executions succeeded / failed (\`return 1\`; ld.request)`,
      value: `${trivial.succeeded} / ${trivial.failed}; ${io.succeeded} / ${io.failed}${trivial.rejected + io.rejected ? `; ${trivial.rejected + io.rejected} webhooks not accepted` : ''}`,
      target: `${D_BURST} / 0 each`,
      pass: trivial.succeeded === D_BURST && trivial.failed === 0 && io.succeeded === D_BURST && io.failed === 0,
    });
    rows.push({
      figure: `${tag}: API requests / ld.request webhooks (each node run exactly once)`,
      value: `${apiRequests} / ${D_BURST}${io.done ? '' : ' (not done)'}`,
      target: 'equal',
      pass: apiRequests === D_BURST,
    });
  } catch (err) {
    broken++;
    console.error(`\n(${label}) BROKE: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  } finally {
    await pipeline?.stop().catch(() => undefined);
    await api?.stop().catch(() => undefined);
  }
  return broken;
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
        .join(' ')} at the start${ONLY ? `; BENCH_ONLY=${ONLY}` : ''}\n`,
    );
    if (RUN_ABC) {
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
    }

    // (d), one sub-part per executor setting, each on a fresh pipeline.
    if (RUN_D) {
      console.log(
        `\n(d) end to end: ${D_BURST} webhooks of \`return 1\`, then ${D_BURST} of the ld.request node, ${D_CONNS} POSTs in flight, each burst waited for at most ${fmt(D_WAIT_MS / 1000)} s; executor settings: ${D_CONCURRENCIES.map((c) => c ?? 'default').join(', ')}`,
      );
      for (const [i, c] of D_CONCURRENCIES.entries()) broken += await partD(`d${i + 1}`, c, rows);
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
