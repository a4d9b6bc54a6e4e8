/**
 * Throughput of one trivial Execute call (`return 1`), from the bare QuickJS floor up to the gRPC path.
 *
 *   npm run bench:execute      (= npm run build && node dist/bench/execute.js)
 *
 * In one run, in one process, on loopback only:
 *   A  bare QuickJS: fresh runtime + context per call on the main thread, trivial async body, disposed;
 *   B  runSandbox in-process: the production sandbox (prelude, hardening, limits) on a WasmModulePool module;
 *   P  the runner's worker pool called directly (Piscina, no RPC) — separates pool cost from RPC cost;
 *   G  the gRPC path: startRunnerServer + the canonical @grpc/grpc-js client, one channel, N calls in flight;
 *   H  grpc.health.v1 Check through the same server and client: the RPC layer alone, no pool, no sandbox;
 *   C  the same server through a Connect-protocol client (HTTP/2).
 * A and B are single-threaded; their "×2" rows are the ideal for this 2-core machine. The goal line
 * compares the gRPC path with those. Note that the clients of G and C run on the server's main thread
 * (same process), so their CPU is counted against it; the per-thread CPU columns show where time goes.
 *
 * Env: BENCH_SCALE multiplies every duration (default 1; e.g. 0.3 for a smoke run).
 */
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten';
import { availableParallelism, cpus } from 'node:os';
import { loadRunnerConfig } from '../src/config/runner-config.js';
import { silentLogger } from '../src/logging/logger.js';
import { DEFAULT_BUILTIN_CONFIG } from '../runner/builtins/index.js';
import {
  type ExecuteRequest,
  ExecuteRequestSchema,
  type ExecuteResponse,
  ExecuteResponseSchema,
  RunnerService,
} from '../src/gen/ldbox/runner/v1/runner_pb.js';
import { HealthCheckRequestSchema, HealthCheckResponseSchema, Health } from '../src/gen/grpc/health/v1/health_pb.js';
import { startRunnerServer } from '../runner/server/runner-server.js';
import { capBytesFor, runSandbox, WasmModulePool, type SandboxLimits, type SandboxRequest } from '../runner/sandbox/index.js';
import { cpuSince, cpuSnapshot, type CpuReport } from './lib/cpu.js';
import { runAsyncLoop, runSyncLoop, type LoopResult } from './lib/stats.js';

const SCALE = Number(process.env.BENCH_SCALE ?? '1') > 0 ? Number(process.env.BENCH_SCALE ?? '1') : 1;
const ms = (n: number) => Math.round(n * SCALE);
const WARMUP_MS = ms(1000);
const REF_MS = ms(3000);
const POOL_MS = ms(3000);
const RPC_MS = ms(4000);
const GRPC_CONCURRENCY = [8, 32];
const CONNECT_CONCURRENCY = 8;
const POOL_CONCURRENCY = 8;
const HEALTH_CONCURRENCY = 8;
const CALL_DEADLINE_MS = 10_000;
/** A phase during which other processes used more CPU than this (in cores) is flagged as disturbed. */
const FOREIGN_WARN_CORES = 0.15;
const STACK_BYTES = 256 * 1024; // main thread: V8's stack is ~1 MB, QuickJS must stay well inside it
const MEMORY_BYTES = 64 << 20;

// Hard stop: if something keeps the event loop alive after the bench, say so instead of hanging.
function armExitGuard(): void {
  setTimeout(() => {
    console.error('bench: the process did not exit 15 s after finishing (a handle is still open)');
    process.exit(2);
  }, 15_000).unref();
}

// ---------------------------------------------------------------------------------------------- rows

interface Row {
  key: string;
  label: string;
  concurrency: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  calls: number;
  errors: number;
  cpu?: CpuReport;
  /** Server-reported mean time inside the worker's sandbox / waiting in the pool queue (RPC rows). */
  workerWallMs?: number;
  queueMs?: number;
  derived?: boolean;
}

const rows: Row[] = [];

function addRow(key: string, label: string, concurrency: number, r: LoopResult, cpu: CpuReport, extra: Partial<Row> = {}): Row {
  const row: Row = {
    key,
    label,
    concurrency,
    callsPerSec: r.callsPerSec,
    p50Ms: r.latency.percentile(0.5),
    p99Ms: r.latency.percentile(0.99),
    calls: r.calls,
    errors: r.errors,
    cpu,
    ...extra,
  };
  rows.push(row);
  const cpuText = formatCpu(cpu);
  console.log(
    `  ${label} c=${concurrency}: ${fmt(row.callsPerSec, 0)} calls/s, p50 ${fmt(row.p50Ms, 3)} ms, p99 ${fmt(row.p99Ms, 3)} ms ` +
      `(${r.calls} calls in ${fmt(r.elapsedMs / 1000, 2)} s${r.errors ? `, ${r.errors} ERRORS, first: ${r.firstError}` : ''})`,
  );
  console.log(`    cpu: ${cpuText}`);
  if (extra.workerWallMs !== undefined) {
    console.log(`    server-reported means: sandbox wall ${fmt(extra.workerWallMs, 3)} ms, pool queue ${fmt(extra.queueMs ?? NaN, 3)} ms`);
  }
  return row;
}

function addDerived(key: string, label: string, from: Row): Row {
  const row: Row = {
    key,
    label,
    concurrency: 2,
    callsPerSec: from.callsPerSec * 2,
    p50Ms: from.p50Ms,
    p99Ms: from.p99Ms,
    calls: 0,
    errors: 0,
    derived: true,
  };
  rows.push(row);
  return row;
}

function fmt(n: number | undefined, digits: number): string {
  return n === undefined || Number.isNaN(n) ? '-' : n.toFixed(digits);
}

/** CPU time per call in µs, from a CPU share (cores) and a call rate. */
function perCallUs(cores: number | undefined, callsPerSec: number): number | undefined {
  return cores === undefined || callsPerSec <= 0 ? undefined : (cores * 1e6) / callsPerSec;
}

function pct(n: number | undefined): string {
  return n === undefined ? '-' : `${Math.round(n * 100)}%`;
}

function formatCpu(c: CpuReport): string {
  const others = c.otherThreads.slice(0, 3).map(pct).join(' ');
  return (
    `process ${fmt(c.processCores, 2)} cores; main thread ${pct(c.mainThread)} of wall (event loop busy ${pct(c.mainElu)}); ` +
    `busiest other threads ${others || '-'}; outside this process ${fmt(c.foreignCores, 2)} cores`
  );
}

// ------------------------------------------------------------------------------ A: bare QuickJS context

const BARE_BODY = '(async () => { return 1\n})()';

/** One variant-(a) call: fresh runtime (limits, deadline interrupt) + context, trivial body, settle, read, dispose. */
function bareCall(mod: QuickJSWASMModule): void {
  const rt = mod.newRuntime();
  try {
    rt.setMaxStackSize(STACK_BYTES);
    rt.setMemoryLimit(MEMORY_BYTES);
    const deadline = performance.now() + 5000;
    rt.setInterruptHandler(() => performance.now() > deadline);
    const ctx = rt.newContext();
    try {
      const r = ctx.evalCode(BARE_BODY, 'user.js', { type: 'global', strict: true });
      if (r.error) {
        const e = ctx.dump(r.error) as unknown;
        r.error.dispose();
        throw new Error(`bare eval failed: ${JSON.stringify(e)}`);
      }
      const promise = r.value;
      try {
        const jobs = rt.executePendingJobs();
        if (jobs.error) jobs.error.dispose();
        const state = ctx.getPromiseState(promise);
        if (state.type !== 'fulfilled') {
          if (state.type === 'rejected') state.error.dispose();
          throw new Error(`bare call did not fulfil: ${state.type}`);
        }
        const value = ctx.getNumber(state.value);
        if (!state.notAPromise) state.value.dispose();
        if (value !== 1) throw new Error(`bare call returned ${value}`);
      } finally {
        promise.dispose();
      }
    } finally {
      ctx.dispose();
    }
  } finally {
    rt.dispose();
  }
}

async function benchBare(): Promise<Row> {
  // Same memory shape as production: a capped WebAssembly.Memory per module.
  const memory = new WebAssembly.Memory({ initial: 256, maximum: capBytesFor(MEMORY_BYTES) / 65536 });
  const mod = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmMemory: memory }));
  runSyncLoop(WARMUP_MS, () => bareCall(mod));
  const before = cpuSnapshot();
  const r = runSyncLoop(REF_MS, () => bareCall(mod));
  return addRow('refA', 'A bare QuickJS context, 1 thread', 1, r, cpuSince(before));
}

// ---------------------------------------------------------------------------- B: runSandbox in-process

const SANDBOX_LIMITS: SandboxLimits = { maxResultBytes: 8 << 20, maxLogEntries: 1000, maxLogChars: 1 << 20, maxStackBytes: STACK_BYTES, builtins: DEFAULT_BUILTIN_CONFIG };
const SANDBOX_REQUEST: SandboxRequest = {
  requestId: 'b',
  code: 'return 1',
  dataJson: '{"input":{},"auth":{}}',
  secrets: [],
  resultKind: 'generic',
  timeoutMs: 5000,
  memoryBytes: MEMORY_BYTES,
};

async function benchSandbox(recycleAboveBytes: number, maxIdlePerCap: number): Promise<Row> {
  // The worker's module pool with the production options (see runner/pool/runner-pool.ts).
  const modules = new WasmModulePool({ maxIdlePerCap, recycleAboveBytes, maxCallsPerModule: 5000 });
  const call = async () => {
    const cm = await modules.acquire(SANDBOX_REQUEST.memoryBytes);
    try {
      const out = await runSandbox(cm, SANDBOX_REQUEST, SANDBOX_LIMITS);
      if (out.error || out.resultJson !== '1') throw new Error(`sandbox call failed: ${JSON.stringify(out.error ?? out.resultJson)}`);
    } finally {
      modules.release(cm);
    }
  };
  await runAsyncLoop(WARMUP_MS, 1, call);
  const before = cpuSnapshot();
  const r = await runAsyncLoop(REF_MS, 1, call);
  return addRow('refB', 'B runSandbox in-process, 1 thread', 1, r, cpuSince(before));
}

// ----------------------------------------------------------------------------------- RPC path helpers

interface ServerStats {
  wall: number;
  queue: number;
  n: number;
}

function noteResponse(res: ExecuteResponse, stats: ServerStats): void {
  if (res.error) throw new Error(`user-code error: ${res.error.name}: ${res.error.message}`);
  const v = res.result?.kind;
  if (v?.case !== 'numberValue' || v.value !== 1) throw new Error(`unexpected result ${JSON.stringify(v)}`);
  stats.wall += res.stats?.wallTimeMs ?? 0;
  stats.queue += res.stats?.queueTimeMs ?? 0;
  stats.n++;
}

function serverMeans(s: ServerStats): Partial<Row> {
  return s.n === 0 ? {} : { workerWallMs: s.wall / s.n, queueMs: s.queue / s.n };
}

async function measure(
  key: string,
  label: string,
  concurrency: number,
  durationMs: number,
  call: (stats: ServerStats) => Promise<void>,
): Promise<Row> {
  await runAsyncLoop(WARMUP_MS, concurrency, () => call({ wall: 0, queue: 0, n: 0 }));
  const stats: ServerStats = { wall: 0, queue: 0, n: 0 };
  const before = cpuSnapshot();
  const r = await runAsyncLoop(durationMs, concurrency, () => call(stats));
  return addRow(key, label, concurrency, r, cpuSince(before), serverMeans(stats));
}

// ------------------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  armExitGuardOnFailure();
  const config = loadRunnerConfig({ LDBOX_RUNNER_PORT: '0', LDBOX_POOL_SIZE: '2' });
  console.log(
    `bench:execute — node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? '?'}), ` +
      `pool ${config.pool.size} workers × ${config.pool.concurrentPerWorker} concurrent, scale ${SCALE}`,
  );
  console.log(`  durations: warm-up ${WARMUP_MS} ms, references ${REF_MS} ms, pool ${POOL_MS} ms, RPC ${RPC_MS} ms`);

  // References first, before any worker exists, so nothing else competes for the cores.
  console.log('\n[A] bare QuickJS context per call (main thread)');
  const refA = await benchBare();
  const refA2 = addDerived('refA2', 'A ×2 (derived, 2 threads)', refA);
  console.log('\n[B] runSandbox in-process (main thread)');
  const refB = await benchSandbox(config.pool.recycleAboveBytes, config.pool.concurrentPerWorker);
  const refB2 = addDerived('refB2', 'B ×2 (derived, 2 threads)', refB);

  console.log('\n[server] startRunnerServer, LDBOX_POOL_SIZE=2');
  const server = await startRunnerServer(config, silentLogger());
  const addr = `127.0.0.1:${server.port}`;
  const grpcClient = new grpc.Client(addr, grpc.credentials.createInsecure());
  const sessionManager = new Http2SessionManager(`http://${addr}`);
  const connect = createClient(
    RunnerService,
    createConnectTransport({ baseUrl: `http://${addr}`, httpVersion: '2', sessionManager }),
  );
  const grpcRows: Row[] = [];
  let connectRow: Row | undefined;
  let poolRow: Row | undefined;
  try {
    // P: the pool alone (what the RPC layer adds is the difference to G at the same concurrency).
    console.log('\n[P] RunnerPool.execute directly (Piscina, no RPC)');
    let seq = 0;
    poolRow = await measure('pool', 'P pool.execute direct', POOL_CONCURRENCY, POOL_MS, async (stats) => {
      const { outcome, queueTimeMs } = await server.pool.execute({ ...SANDBOX_REQUEST, requestId: `p${seq++}`, timeoutMs: 30_000 });
      if (outcome.error || outcome.resultJson !== '1') throw new Error(`pool call failed: ${JSON.stringify(outcome.error)}`);
      stats.wall += outcome.wallTimeMs;
      stats.queue += queueTimeMs;
      stats.n++;
    });

    // G: grpc-js, one channel.
    const request: ExecuteRequest = create(ExecuteRequestSchema, { code: 'return 1' });
    const path = `/${RunnerService.typeName}/Execute`;
    const serialize = (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m));
    const deserialize = (b: Buffer) => fromBinary(ExecuteResponseSchema, b);
    const grpcExecute = () =>
      new Promise<ExecuteResponse>((resolve, reject) => {
        grpcClient.makeUnaryRequest(path, serialize, deserialize, request, new grpc.Metadata(), { deadline: Date.now() + CALL_DEADLINE_MS }, (err, res) =>
          err || !res ? reject(err ?? new Error('empty response')) : resolve(res),
        );
      });
    // H: the RPC floor — same server, same channel, a handler that does no work.
    const healthRequest = create(HealthCheckRequestSchema, { service: '' });
    const healthPath = `/${Health.typeName}/Check`;
    console.log(`\n[H] gRPC health Check (RPC layer only), @grpc/grpc-js client, ${HEALTH_CONCURRENCY} in flight`);
    await measure('health', 'H gRPC health Check (no sandbox)', HEALTH_CONCURRENCY, POOL_MS, () =>
      new Promise<void>((resolve, reject) => {
        grpcClient.makeUnaryRequest(
          healthPath,
          (m: typeof healthRequest) => Buffer.from(toBinary(HealthCheckRequestSchema, m)),
          (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
          healthRequest,
          new grpc.Metadata(),
          { deadline: Date.now() + CALL_DEADLINE_MS },
          (err, res) => (err || !res ? reject(err ?? new Error('empty response')) : resolve()),
        );
      }),
    );

    for (const c of GRPC_CONCURRENCY) {
      console.log(`\n[G] gRPC, @grpc/grpc-js client, one channel, ${c} in flight`);
      grpcRows.push(await measure(`grpc_c${c}`, 'G gRPC (grpc-js)', c, RPC_MS, async (stats) => noteResponse(await grpcExecute(), stats)));
    }

    // C: Connect protocol over HTTP/2.
    console.log(`\n[C] Connect protocol (connect-node, HTTP/2), ${CONNECT_CONCURRENCY} in flight`);
    connectRow = await measure('connect_c' + CONNECT_CONCURRENCY, 'C Connect (HTTP/2)', CONNECT_CONCURRENCY, RPC_MS, async (stats) =>
      noteResponse(await connect.execute({ code: 'return 1' }, { timeoutMs: CALL_DEADLINE_MS }), stats),
    );
  } finally {
    grpcClient.close();
    sessionManager.abort();
    await server.close(5000);
  }

  report(refA2, refB2, poolRow, grpcRows, connectRow);
}

function report(refA2: Row, refB2: Row, poolRow: Row | undefined, grpcRows: Row[], connectRow: Row | undefined): void {
  const head = ['what', 'conc', 'calls/s', 'p50 ms', 'p99 ms', 'main thr', 'main µs/call', 'proc cores', 'proc µs/call', 'top threads', 'foreign'];
  const table: string[][] = [];
  for (const r of rows) {
    table.push([
      r.label,
      String(r.concurrency),
      fmt(r.callsPerSec, 0),
      r.derived ? '' : fmt(r.p50Ms, 3),
      r.derived ? '' : fmt(r.p99Ms, 3),
      r.cpu ? pct(r.cpu.mainThread) : '',
      r.cpu ? fmt(perCallUs(r.cpu.mainThread, r.callsPerSec), 0) : '',
      r.cpu ? fmt(r.cpu.processCores, 2) : '',
      r.cpu ? fmt(perCallUs(r.cpu.processCores, r.callsPerSec), 0) : '',
      r.cpu ? r.cpu.otherThreads.slice(0, 2).map(pct).join(' ') : '',
      r.cpu ? fmt(r.cpu.foreignCores, 2) : '',
    ]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log('\n==== bench:execute summary ====');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const t of table) console.log(line(t));

  const disturbed = rows.filter((r) => (r.cpu?.foreignCores ?? 0) > FOREIGN_WARN_CORES);
  for (const r of disturbed) {
    console.log(
      `WARNING: other processes used ${fmt(r.cpu?.foreignCores, 2)} cores during "${r.label}" c=${r.concurrency}: ` +
        'that row (and any ratio using it) is not a clean measurement on this 2-core machine',
    );
  }

  console.log('\nratios (gRPC calls/s ÷ two-thread reference):');
  const ratios: Record<string, { vsA2: number; vsB2: number }> = {};
  for (const g of [...grpcRows, ...(connectRow ? [connectRow] : []), ...(poolRow ? [poolRow] : [])]) {
    const vsA2 = g.callsPerSec / refA2.callsPerSec;
    const vsB2 = g.callsPerSec / refB2.callsPerSec;
    ratios[g.key] = { vsA2, vsB2 };
    console.log(`  ${g.label} c=${g.concurrency}: ${fmt(vsA2, 2)}× A×2 (${fmt(refA2.callsPerSec, 0)}/s), ${fmt(vsB2, 2)}× B×2 (${fmt(refB2.callsPerSec, 0)}/s)`);
  }
  const best = grpcRows.reduce<Row | undefined>((b, r) => (!b || r.callsPerSec > b.callsPerSec ? r : b), undefined);
  console.log('\ngoal: gRPC path ≥ 0.5× the raw rate of two threads');
  if (best) {
    const vsA = best.callsPerSec / refA2.callsPerSec;
    const vsB = best.callsPerSec / refB2.callsPerSec;
    console.log(
      `  best gRPC (c=${best.concurrency}, ${fmt(best.callsPerSec, 0)}/s): ${fmt(vsA, 2)}× bare QuickJS ×2 → ${vsA >= 0.5 ? 'MET' : 'NOT MET'}; ` +
        `${fmt(vsB, 2)}× runSandbox ×2 → ${vsB >= 0.5 ? 'MET' : 'NOT MET'}`,
    );
  }

  const json = {
    node: process.version,
    cores: availableParallelism(),
    scale: SCALE,
    durationsMs: { warmup: WARMUP_MS, reference: REF_MS, pool: POOL_MS, rpc: RPC_MS },
    rows: rows.map((r) => ({
      key: r.key,
      label: r.label,
      concurrency: r.concurrency,
      callsPerSec: round(r.callsPerSec, 1),
      p50Ms: r.derived ? null : round(r.p50Ms, 4),
      p99Ms: r.derived ? null : round(r.p99Ms, 4),
      calls: r.calls,
      errors: r.errors,
      derived: r.derived ?? false,
      cpu: r.cpu
        ? {
            processCores: round(r.cpu.processCores, 3),
            mainThread: r.cpu.mainThread === undefined ? null : round(r.cpu.mainThread, 3),
            mainThreadUsPerCall: round(perCallUs(r.cpu.mainThread, r.callsPerSec) ?? NaN, 1),
            processUsPerCall: round(perCallUs(r.cpu.processCores, r.callsPerSec) ?? NaN, 1),
            mainEventLoopUtilization: round(r.cpu.mainElu, 3),
            otherThreads: r.cpu.otherThreads.slice(0, 4).map((x) => round(x, 3)),
            foreignCores: r.cpu.foreignCores === undefined ? null : round(r.cpu.foreignCores, 3),
          }
        : null,
      serverMeans: r.workerWallMs === undefined ? null : { sandboxWallMs: round(r.workerWallMs, 4), queueMs: round(r.queueMs ?? NaN, 4) },
    })),
    ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, { vsRefA2: round(v.vsA2, 3), vsRefB2: round(v.vsB2, 3) }])),
    disturbedRows: disturbed.map((r) => r.key),
    goal: best
      ? {
          text: 'gRPC path >= 0.5x the raw rate of two threads',
          bestGrpcKey: best.key,
          vsRefA2: round(best.callsPerSec / refA2.callsPerSec, 3),
          vsRefB2: round(best.callsPerSec / refB2.callsPerSec, 3),
        }
      : null,
  };
  console.log(`BENCH_JSON ${JSON.stringify(json)}`);
}

function round(n: number, digits: number): number | null {
  if (!Number.isFinite(n)) return null;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function armExitGuardOnFailure(): void {
  process.on('unhandledRejection', (err) => {
    console.error('bench: unhandled rejection', err);
    process.exitCode = 1;
  });
}

main().then(
  () => armExitGuard(),
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exitCode = 1;
    armExitGuard();
  },
);
