/**
 * Soak: the whole pipeline at half its measured capacity for minutes, to show that memory, latency and NATS
 * storage stay flat and that no accepted webhook is lost (issue 11, point 8).
 *
 *   npm run bench:soak      (= npm run build && node dist/bench/soak.js)
 *   BENCH_SCALE=0.1 npm run bench:soak      (every duration × 0.1: a smoke run of a minute)
 *   SOAK_NODE=waiting node dist/bench/soak.js      (nodes that wait 0.5–40 s: no node runs twice; see below)
 *
 * Set-up: one nats-server (bench/lib/webhook-nats.ts: temp dir, JetStream, 8 MB max_payload) and three child
 * processes, through the entry points bench:webhook's part 2 uses: the gateway (bench/lib/webhook-server.js
 * `gateway`, LDBOX_WEBHOOK_RATE=0), the runner (bench/lib/webhook-e2e.js `runner`, LDBOX_POOL_SIZE=2) and the
 * executor (bench/lib/webhook-e2e.js `executor`, its default concurrency). One workflow with one code node
 * (`return { ok: true, n: data.input.n }`), created through the control plane, webhook without auth. None of
 * them is pinned to a CPU. This process sends the webhooks and watches the `ldbox-executions` KV bucket
 * (updates only, not polling): an execution is done when its record's `succeeded` or `failed` arrives.
 *
 * Phases:
 *   1. capacity: a closed loop of SOAK_CAPACITY_INFLIGHT (64) webhooks in flight, each POST → 202 →
 *      `succeeded` → the next, 3 s not counted, then SOAK_CAPACITY_S (15) s counted: capacity = succeeded/s.
 *      SOAK_RATE (webhooks/s) skips this and sets the soak rate directly.
 *   2. soak: an open loop at SOAK_LOAD (0.5) × capacity webhooks/s for SOAK_MINUTES (10): requests are sent
 *      on their schedule whatever the answers (SOAK_CONNS, 16, keep-alive connections; a request waits for a
 *      free connection rather than being skipped), and latency runs from the moment a request was due, so a
 *      stall is not hidden by sending less (no coordinated omission).
 *      Every SOAK_SAMPLE_S (30) s one row: accepted/s and succeeded/s, webhook → `succeeded` p50/p99 of the
 *      executions that finished in the window, the JOBS backlog (its messages: a work queue holds only jobs
 *      not yet acknowledged), the RSS of each process (/proc/<pid>/status VmRSS; the runner's includes its
 *      worker threads), the executor's V8 heap in use (`process.memoryUsage()` over IPC; after a full
 *      collection with SOAK_NODE_FLAGS=--expose-gc, so a retainer shows apart from garbage and native memory)
 *      and NATS storage (`$JS.API.INFO` account storage, the executions bucket's stream).
 *   3. drain: the load stops; every accepted webhook must end `succeeded` (waited for up to 60 s, 120 s with
 *      SOAK_NODE=waiting, the stragglers then read from the bucket). Non-202 answers, `failed` records and
 *      executions never finished are counted.
 *
 * SOAK_NODE=waiting (default `echo`, the node above): shows that no node runs twice without a fault when nodes
 * wait long, past the executor's 30 s ack_wait (it heartbeats its jobs) and on the runner's long-lived
 * ExecuteStream (which the runner once reset 30 s after it opened, the executor then re-running the nodes in
 * flight on it). The node draws a wait of 0.5–40 s (Math.random; not scaled by BENCH_SCALE), POSTs `{n, ms}`
 * to `/start` of a counting server (node:http on 127.0.0.1 in this process; the runner gets
 * LDBOX_EGRESS_ALLOW=127.0.0.1 so that ld.request may reach it), waits (ld.wait takes at most 30 s: two calls
 * beyond), POSTs `/end` and returns; its limits.timeoutMs is 60 s. The counter records each run of each `n`.
 * No capacity phase: the soak runs at SOAK_RATE, 10 webhooks/s by default (~200 nodes in flight), with the
 * executor at LDBOX_EXECUTOR_CONCURRENCY=1024 unless the environment sets it; each row has the
 * runs in flight (`running`); the drain waits up to 120 s. RSS, heap and JOBS backlog (which holds the jobs
 * whose node waits) are compared from the first sample after the 45 s ramp, the backlog with 10 % slack, and
 * the latency thirds go by due time. The verdict adds: webhooks accepted, executions succeeded / failed /
 * never finished, the node durations at the counter (start → end, min / p50 / max, and how many ran longer
 * than 30 s), the `n` whose node ran more than once and the accepted `n` whose node never ran (both must be 0,
 * as must runs started and never ended: the exit code is 1 otherwise).
 *
 * Verdict: each process's RSS at the last sample against the first one (within 10 % is flat), the executor's
 * heap growth per execution between them, p99 of the last
 * third against the first third, the JOBS backlog (flat: the last third's mean is within one second of
 * arrivals of the first third's), the executions bucket's bytes per execution (records are kept for
 * LDBOX_EXECUTION_RETENTION, 7 days by default, so the bucket grows by that much per execution until the
 * retention removes them), and the lost or failed webhooks (must be none: the exit code is 1 otherwise).
 *
 * Env: SOAK_NODE (echo, or waiting), SOAK_MINUTES (10), BENCH_SCALE (1; multiplies every duration, the capacity
 * window is at least 5 s and a sample at least 3 s; not the drain nor the waiting node's waits), SOAK_LOAD (0.5),
 * SOAK_RATE (unset; 10 with SOAK_NODE=waiting), SOAK_SAMPLE_S (30), SOAK_CAPACITY_S (15),
 * SOAK_CAPACITY_INFLIGHT (64), SOAK_CONNS (16), LDBOX_LOG_LEVEL (the roles' level, info; their logs go to
 * /dev/null), LDBOX_EXECUTOR_CONCURRENCY (the executor's own default, 16; 1024 with SOAK_NODE=waiting),
 * SOAK_NODE_FLAGS (node flags of the three roles, not of this process: `--expose-gc
 * --heapsnapshot-signal=SIGUSR2` to compare heap snapshots of the executor, written to the working directory,
 * taken with `kill -USR2 <its pid>`).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { type KV, Kvm, KvWatchInclude } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Samples } from './lib/stats.js';
import { type Child, type ChildKind, createWorkflow, post, startChild } from './lib/webhook-e2e.js';
import { type BenchNatsServer, procCpuMicros, startBenchNats } from './lib/webhook-nats.js';

// ------------------------------------------------------------------------------------------- settings

function positive(name: string, dflt: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

const SCALE = positive('BENCH_SCALE', 1);
const SOAK_MS = positive('SOAK_MINUTES', 10) * 60_000 * SCALE;
const SAMPLE_MS = Math.max(3000, positive('SOAK_SAMPLE_S', 30) * 1000 * SCALE);
const CAPACITY_MS = Math.max(5000, positive('SOAK_CAPACITY_S', 15) * 1000 * SCALE);
const CAPACITY_WARMUP_MS = 3000;
const CAPACITY_INFLIGHT = Math.floor(positive('SOAK_CAPACITY_INFLIGHT', 64));
const LOAD = positive('SOAK_LOAD', 0.5);
/** SOAK_NODE: `echo` (the default: the node returns at once) or `waiting` (it waits 0.5–40 s; see the file comment). */
const NODE_KIND = ((): 'echo' | 'waiting' => {
  const raw = process.env.SOAK_NODE ?? '';
  if (raw === '' || raw === 'echo') return 'echo';
  if (raw === 'waiting') return 'waiting';
  throw new Error(`SOAK_NODE must be "echo" or "waiting", got "${raw}"`);
})();
const WAITING = NODE_KIND === 'waiting';
/** SOAK_NODE=waiting without SOAK_RATE: webhooks/s (no capacity phase: it means nothing for nodes that wait). */
const WAITING_RATE = 10;
const FIXED_RATE = process.env.SOAK_RATE ? positive('SOAK_RATE', 1) : WAITING ? WAITING_RATE : undefined;
const CONNS = Math.floor(positive('SOAK_CONNS', 16));
/** The drain: the last executions' nodes (SOAK_NODE=waiting: up to 40 s each, and queued behind others) plus margin. */
const DRAIN_MS = WAITING ? 120_000 : 60_000;
/** SOAK_NODE=waiting: each run of the node waits a random time in [WAIT_MIN_MS, WAIT_MAX_MS), not scaled by BENCH_SCALE. */
const WAIT_MIN_MS = 500;
const WAIT_MAX_MS = 40_000;
/** ld.wait's largest argument: a longer wait is two calls. */
const LD_WAIT_MAX_MS = 30_000;
/** SOAK_NODE=waiting: the node's limits.timeoutMs (its longest wait, two counter requests and margin; at most LDBOX_MAX_TIMEOUT_MS, 120 s by default). */
const WAITING_TIMEOUT_MS = 60_000;
/**
 * SOAK_NODE=waiting: the executor's LDBOX_EXECUTOR_CONCURRENCY unless the environment sets it (its maximum):
 * at 10/s and ~20 s per node ~200 nodes are in flight, far above the executor's default 16.
 */
const WAITING_CONCURRENCY = process.env.LDBOX_EXECUTOR_CONCURRENCY || '1024';
/** SOAK_NODE=waiting: samples before this many seconds are the ramp (nodes in flight still growing), left out of the flatness checks. */
const WAITING_RAMP_S = (WAIT_MAX_MS + 5000) / 1000;
/** RSS within this fraction of the first sample is "flat". */
const FLAT_RSS = 0.1;
/** The last third's p99 at most this many times the first third's is "flat" (p99 is noisy on a shared machine). */
const FLAT_P99 = 1.5;
/** Node flags of the three roles (not of this process), e.g. `--expose-gc --heapsnapshot-signal=SIGUSR2`. */
const NODE_FLAGS = (process.env.SOAK_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const MAX_PAYLOAD = 8 * 1024 * 1024; // fits maxJobBytes(5 MiB), the gateway's default body limit

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (n: number | undefined, d = 0): string => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
const mib = (bytes: number): string => fmt(bytes / 1024 / 1024, 1);

// ------------------------------------------------------------------------------------- child processes

type Role = ChildKind;
type RoleProcess = Child;

/**
 * The V8 heap in use of the executor or the runner (bench/lib/webhook-e2e.js answers `memory` over IPC),
 * bytes: after a full collection when the roles run with `--expose-gc` (SOAK_NODE_FLAGS); NaN when the
 * child does not answer within 5 s.
 */
function heapUsed(r: RoleProcess): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (m: { type: string; heapUsed?: number }) => {
      if (m.type !== 'memory') return;
      done(m.heapUsed ?? Number.NaN);
    };
    const done = (bytes: number) => {
      clearTimeout(timer);
      r.proc.off('message', onMessage);
      resolve(bytes);
    };
    const timer = setTimeout(() => done(Number.NaN), 5000);
    r.proc.on('message', onMessage);
    if (r.proc.connected) r.proc.send({ type: 'memory' });
  });
}

/** A role as a child process, with the soak's node flags (SOAK_NODE_FLAGS). */
const startRole = (role: Role, env: NodeJS.ProcessEnv): Promise<RoleProcess> => startChild(role, env, NODE_FLAGS);

/** Resident set size of a process, bytes (/proc/<pid>/status VmRSS); NaN when unreadable. */
function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

// ------------------------------------------------------------------------------------------ tracking

type Final = 'succeeded' | 'failed';

/** Counters of one sample window (or of a whole phase). */
interface Window {
  accepted: number;
  succeeded: number;
  failed: number;
  /** Non-202 answers and requests that got no answer. */
  rejected: number;
  /** Intended send → `succeeded` seen, ms, of the executions that finished in the window. */
  latency: Samples;
}

const newWindow = (): Window => ({ accepted: 0, succeeded: 0, failed: 0, rejected: 0, latency: new Samples() });

/**
 * Follows every webhook from its POST to its final record. The watch can see the record before the POST's
 * 202 is read (the executor is that fast), so a final status for an id not yet accepted waits in `early`.
 */
class Tracker {
  /** Accepted, not final yet: id → intended send time (performance.now()). */
  readonly pending = new Map<string, number>();
  private readonly early = new Map<string, { status: Final; at: number; error?: string }>();
  private readonly waiters = new Map<string, (s: Final) => void>();
  window = newWindow();
  readonly total = newWindow();
  /** Where a finished execution's latency also goes (the soak's thirds); undefined outside the soak. */
  bucketOf: ((at: number) => Samples | undefined) | undefined;
  /** {@link bucketOf} by the time the webhook was due rather than the time its execution finished. */
  byDueTime = false;
  firstFailure: string | undefined;
  readonly rejectedBy = new Map<string, number>();

  accepted(id: string, intendedAt: number): void {
    this.window.accepted++;
    this.total.accepted++;
    const e = this.early.get(id);
    if (e) {
      this.early.delete(id);
      this.pending.set(id, intendedAt);
      this.finished(id, e.status, e.at, e.error);
    } else this.pending.set(id, intendedAt);
  }

  rejected(why: string): void {
    this.window.rejected++;
    this.total.rejected++;
    this.rejectedBy.set(why, (this.rejectedBy.get(why) ?? 0) + 1);
    this.firstFailure ??= why;
  }

  finished(id: string, status: Final, at: number, error?: string): void {
    const intendedAt = this.pending.get(id);
    if (intendedAt === undefined) {
      this.early.set(id, { status, at, error });
      return;
    }
    this.pending.delete(id);
    if (status === 'succeeded') {
      const ms = at - intendedAt;
      this.window.succeeded++;
      this.total.succeeded++;
      this.window.latency.push(ms);
      this.bucketOf?.(this.byDueTime ? intendedAt : at)?.push(ms);
    } else {
      this.window.failed++;
      this.total.failed++;
      this.firstFailure ??= `execution ${id} ended failed: ${error ?? ''}`;
    }
    this.waiters.get(id)?.(status);
    this.waiters.delete(id);
  }

  /** Resolves when `id` is final (or after `timeoutMs`, with undefined). */
  done(id: string, timeoutMs: number): Promise<Final | undefined> {
    if (!this.pending.has(id)) return Promise.resolve(this.early.get(id)?.status ?? 'succeeded');
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.waiters.set(id, (s) => {
        clearTimeout(timer);
        resolve(s);
      });
    });
  }

  /** Starts a new sample window; returns the one that ended. */
  cut(): Window {
    // A final status nobody claimed within a minute was not early but a repeat: the executor writes a
    // finished record again to mark it charged. Dropped, or this process would keep one per execution.
    const old = performance.now() - 60_000;
    for (const [id, e] of this.early) if (e.at < old) this.early.delete(id);
    const w = this.window;
    this.window = newWindow();
    return w;
  }
}

function watchExecutions(kv: KV, workflowId: string, tracker: Tracker): Promise<{ stop(): void }> {
  const prefix = `${workflowId}.`;
  return kv.watch({ key: `${workflowId}.*`, include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true }).then((watch) => {
    void (async () => {
      for await (const e of watch) {
        const at = performance.now();
        if (e.operation !== 'PUT' || !e.key.startsWith(prefix)) continue;
        let rec: { status?: string; error?: string };
        try {
          rec = e.json();
        } catch {
          continue;
        }
        if (rec.status === 'succeeded' || rec.status === 'failed') tracker.finished(e.key.slice(prefix.length), rec.status, at, rec.error);
      }
    })().catch(() => undefined);
    return { stop: () => watch.stop() };
  });
}

// --------------------------------------------------------------------------- SOAK_NODE=waiting: run counting

/** One run of the node, as reported to the {@link RunCounter}: performance.now() of its start and end. */
interface Run {
  start: number;
  end?: number;
  /** The wait the run drew, ms. */
  ms: number;
}

/**
 * The counting server of SOAK_NODE=waiting: a node:http server on 127.0.0.1 in this process to which every
 * run of the node POSTs `/start` before its wait and `/end` after it (`{n, ms}`: the webhook's `n` and the
 * wait drawn). Counts the runs of each `n`: a node that runs twice shows as two starts.
 */
class RunCounter {
  /** String(n) → its runs, in the order they started. */
  readonly runs = new Map<string, Run[]>();
  started = 0;
  ended = 0;
  /** Requests that were not a well-formed start or end (answered 400/404). */
  malformed = 0;
  firstMalformed: string | undefined;
  private readonly server = http.createServer((req, res) => this.handle(req, res));

  /** Listens on 127.0.0.1, any free port; resolves to its origin (`http://127.0.0.1:<port>`). */
  listen(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        const addr = this.server.address();
        resolve(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`);
      });
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  /** Runs started and not ended (now in their wait, or never to end). */
  get running(): number {
    return this.started - this.ended;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const answer = (status: number, why?: string) => {
        if (why !== undefined) {
          this.malformed++;
          this.firstMalformed ??= `${req.method} ${req.url}: ${why}`;
        }
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(why === undefined ? { ok: true } : { error: why }));
      };
      if (req.method !== 'POST' || (req.url !== '/start' && req.url !== '/end')) return answer(404, 'not POST /start or /end');
      let body: { n?: unknown; ms?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer(400, 'body not JSON');
      }
      if (body.n === undefined || body.n === null || typeof body.ms !== 'number') return answer(400, `no n or ms in ${JSON.stringify(body)}`);
      const key = String(body.n);
      let runs = this.runs.get(key);
      if (req.url === '/start') {
        if (!runs) this.runs.set(key, (runs = []));
        runs.push({ start: at, ms: body.ms });
        this.started++;
        return answer(200);
      }
      // The end of this n's first run still open that drew the same wait (two runs draw different waits).
      const run = runs?.find((r) => r.end === undefined && r.ms === body.ms) ?? runs?.find((r) => r.end === undefined);
      if (!run) return answer(400, `an end of n=${key} without an open start`);
      run.end = at;
      this.ended++;
      return answer(200);
    });
  }
}

/**
 * The code of SOAK_NODE=waiting's node: draws a wait in [WAIT_MIN_MS, WAIT_MAX_MS), reports its start to the
 * counter at `counter`, waits (ld.wait takes at most 30 s: a longer wait is two calls), reports its end.
 */
function waitingNodeCode(counter: string): string {
  return [
    `const ms = ${WAIT_MIN_MS} + Math.floor(Math.random() * ${WAIT_MAX_MS - WAIT_MIN_MS});`,
    'const count = async (what) => {',
    `  const r = await ld.request({ method: 'POST', url: ${JSON.stringify(counter)} + '/' + what, body: { n: data.input.n, ms } });`,
    "  if (r.status !== 200) throw new Error('counter answered ' + r.status + ' to ' + what + ': ' + r.text);",
    '};',
    "await count('start');",
    `await ld.wait(Math.min(ms, ${LD_WAIT_MAX_MS}));`,
    `if (ms > ${LD_WAIT_MAX_MS}) await ld.wait(ms - ${LD_WAIT_MAX_MS});`,
    "await count('end');",
    'return { ok: true, n: data.input.n, ms };',
  ].join('\n');
}

/** SOAK_NODE=waiting's findings, from the counter after the drain. */
interface WaitingFigures {
  /** `n` accepted (202) during the soak. */
  acceptedN: number;
  /** Accepted `n` whose node started more than once; a few of them with their runs. */
  ranTwice: number;
  ranTwiceExamples: string[];
  /** Runs beyond the first, over all `n`. */
  extraRuns: number;
  /** Accepted `n` whose node never started. */
  neverRan: number;
  neverRanExamples: string[];
  /** Runs started and not ended when the counter was read. */
  unended: number;
  /** Runs of an `n` that was not accepted (a non-202 whose job ran anyway). */
  runsNotAccepted: number;
  /** Of the ended runs: start → end at the counter, ms, and the waits drawn. */
  measured: Samples;
  drawn: Samples;
  /** Ended runs longer than LD_WAIT_MAX_MS (two ld.wait calls, past the executor's 30 s ack_wait). */
  over30s: number;
  malformed: number;
  firstMalformed: string | undefined;
  executorConcurrency: string;
}

function waitingFigures(counter: RunCounter, acceptedN: ReadonlySet<string>): WaitingFigures {
  const f: WaitingFigures = {
    acceptedN: acceptedN.size,
    ranTwice: 0,
    ranTwiceExamples: [],
    extraRuns: 0,
    neverRan: 0,
    neverRanExamples: [],
    unended: counter.running,
    runsNotAccepted: 0,
    measured: new Samples(),
    drawn: new Samples(),
    over30s: 0,
    malformed: counter.malformed,
    firstMalformed: counter.firstMalformed,
    executorConcurrency: WAITING_CONCURRENCY,
  };
  for (const [n, runs] of counter.runs) {
    if (!acceptedN.has(n)) f.runsNotAccepted += runs.length;
    if (runs.length > 1) {
      f.ranTwice++;
      f.extraRuns += runs.length - 1;
      if (f.ranTwiceExamples.length < 5) {
        const t0 = runs[0]!.start;
        f.ranTwiceExamples.push(
          `n=${n}: ${runs.map((r) => `+${fmt((r.start - t0) / 1000, 1)} s (drew ${r.ms} ms, ${r.end === undefined ? 'never ended' : `ended after ${fmt((r.end - r.start) / 1000, 1)} s`})`).join(', ')}`,
        );
      }
    }
    for (const r of runs) {
      if (r.end === undefined) continue;
      const ms = r.end - r.start;
      f.measured.push(ms);
      f.drawn.push(r.ms);
      if (ms > LD_WAIT_MAX_MS) f.over30s++;
    }
  }
  for (const n of acceptedN) {
    if (counter.runs.has(n)) continue;
    f.neverRan++;
    if (f.neverRanExamples.length < 5) f.neverRanExamples.push(`n=${n}`);
  }
  return f;
}

// ------------------------------------------------------------------------------------------- sampling

interface NatsFigures {
  /** JOBS stream messages: jobs not yet acknowledged (work-queue retention). */
  backlog: number;
  jobsBytes: number;
  /** The `ldbox-executions` bucket's stream: one message per kept execution record. */
  execRecords: number;
  execBytes: number;
  /** `$JS.API.INFO`: the account's JetStream file storage, all streams. */
  accountBytes: number;
}

async function natsFigures(jsm: JetStreamManager): Promise<NatsFigures> {
  const [jobs, exec, account] = await Promise.all([jsm.streams.info('JOBS'), jsm.streams.info('KV_ldbox-executions'), jsm.getAccountInfo()]);
  return {
    backlog: jobs.state.messages,
    jobsBytes: jobs.state.bytes,
    execRecords: exec.state.messages,
    execBytes: exec.state.bytes,
    accountBytes: account.storage,
  };
}

const PROCS = ['gateway', 'executor', 'runner', 'nats', 'bench'] as const;
type ProcName = (typeof PROCS)[number];

interface Sample extends NatsFigures {
  /** Seconds since the soak's start. */
  t: number;
  acceptedPerSec: number;
  succeededPerSec: number;
  failed: number;
  rejected: number;
  p50Ms: number;
  p99Ms: number;
  rss: Record<ProcName, number>;
  /** The executor's V8 heap in use, bytes (see {@link heapUsed}). */
  execHeap: number;
  load1: number;
  /** SOAK_NODE=waiting: runs of the node started and not ended (the counter's). */
  running?: number;
}

// ------------------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  process.on('unhandledRejection', (err) => {
    console.error('bench: unhandled rejection', err);
    process.exitCode = 1;
  });
  console.log(
    `bench:soak — node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? '?'}), ` +
      `soak ${fmt(SOAK_MS / 60_000, 1)} min at ${
        FIXED_RATE ? `${FIXED_RATE}/s (${process.env.SOAK_RATE ? 'SOAK_RATE' : `SOAK_NODE=waiting's default`})` : `${LOAD} × the measured capacity`
      }, ` +
      `a sample every ${fmt(SAMPLE_MS / 1000)} s, ${CONNS} keep-alive connections, load average ${fmt(loadavg()[0], 2)}`,
  );
  if (WAITING)
    console.log(
      `SOAK_NODE=waiting: the node waits ${fmt(WAIT_MIN_MS / 1000, 1)}–${fmt(WAIT_MAX_MS / 1000)} s at random (limits.timeoutMs ${WAITING_TIMEOUT_MS}) and reports ` +
        `each run's start and end to a counting server in this process (the runner gets LDBOX_EGRESS_ALLOW=127.0.0.1); ` +
        `executor LDBOX_EXECUTOR_CONCURRENCY=${WAITING_CONCURRENCY} (${process.env.LDBOX_EXECUTOR_CONCURRENCY ? 'from the environment' : "this mode's default; the executor's own is 16"}); ` +
        `no capacity phase; drain up to ${DRAIN_MS / 1000} s`,
    );
  const nats: BenchNatsServer = await startBenchNats({ maxPayload: MAX_PAYLOAD });
  const roles: RoleProcess[] = [];
  let nc: NatsConnection | undefined;
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNS });
  let watch: { stop(): void } | undefined;
  const counter = WAITING ? new RunCounter() : undefined;
  try {
    const counterUrl = await counter?.listen();
    nc = await connect({ servers: nats.url, name: 'bench-soak' });
    const jsm = await jetstreamManager(nc);
    const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`;
    // Required by the gateway and the executor (encryption at rest of node auth values); this workflow has none.
    const dataKey = randomBytes(32).toString('base64');
    const first = await Promise.allSettled([
      startRole('gateway', {
        LDBOX_GATEWAY_PORT: '0',
        LDBOX_GATEWAY_HOST: '127.0.0.1',
        LDBOX_ADMIN_TOKEN: adminToken,
        LDBOX_DATA_KEY: dataKey,
        NATS_URL: nats.url,
        LDBOX_WEBHOOK_RATE: '0',
      }),
      startRole('runner', {
        LDBOX_RUNNER_PORT: '0',
        LDBOX_POOL_SIZE: '2',
        // SOAK_NODE=waiting: ld.request may reach the counting server on 127.0.0.1.
        ...(WAITING ? { LDBOX_EGRESS_ALLOW: [process.env.LDBOX_EGRESS_ALLOW, '127.0.0.1'].filter(Boolean).join(',') } : {}),
      }),
    ]);
    for (const r of first) if (r.status === 'fulfilled') roles.push(r.value);
    for (const r of first) if (r.status === 'rejected') throw r.reason;
    const [gateway, runner] = roles as [RoleProcess, RoleProcess];
    // After the gateway: it creates the stream and the buckets the executor opens.
    const executor = await startRole('executor', {
      NATS_URL: nats.url,
      LDBOX_DATA_KEY: dataKey,
      LDBOX_EXECUTOR_PORT: '0',
      LDBOX_RUNNER_URLS: `http://127.0.0.1:${runner.port}`,
      ...(WAITING ? { LDBOX_EXECUTOR_CONCURRENCY: WAITING_CONCURRENCY } : {}),
    });
    roles.push(executor);
    const pids: Record<ProcName, number> = {
      gateway: gateway.proc.pid!,
      executor: executor.proc.pid!,
      runner: runner.proc.pid!,
      nats: nats.pid,
      bench: process.pid,
    };
    console.log(
      `nats-server ${nc.info?.version ?? '?'} (pid ${nats.pid}); gateway pid ${pids.gateway}, executor ${pids.executor}, runner ${pids.runner} (2 workers)`,
    );

    const workflowId = counterUrl
      ? await createWorkflow(gateway.port, adminToken, 'bench-soak-waiting', { code: waitingNodeCode(counterUrl), limits: { timeoutMs: WAITING_TIMEOUT_MS } })
      : await createWorkflow(gateway.port, adminToken, 'bench-soak');
    const path = `/api/hooks/workflows/${workflowId}`;
    const tracker = new Tracker();
    const kv = await new Kvm(jetstream(nc)).open('ldbox-executions');
    watch = await watchExecutions(kv, workflowId, tracker);

    let seq = 0;
    let inFlight = 0;
    /** SOAK_NODE=waiting: String(n) of every webhook accepted (202), to match the counter's runs against. */
    const acceptedN = new Set<string>();
    /** POSTs one webhook meant to leave at `intendedAt`; resolves with its execution id when accepted. */
    const fire = async (intendedAt: number): Promise<string | undefined> => {
      let r: { status: number; text: string };
      const n = seq++;
      inFlight++;
      try {
        r = await post(agent, gateway.port, path, JSON.stringify({ n }));
      } catch (err) {
        tracker.rejected(`POST failed: ${(err as Error).message}`);
        return undefined;
      } finally {
        inFlight--;
      }
      const id = r.status === 202 ? (JSON.parse(r.text) as { executionId?: string }).executionId : undefined;
      if (!id) {
        tracker.rejected(`HTTP ${r.status}: ${r.text.slice(0, 120)}`);
        return undefined;
      }
      if (WAITING) acceptedN.add(String(n));
      tracker.accepted(id, intendedAt);
      return id;
    };

    // ---- 1. capacity: a closed loop, POST → succeeded → next
    let rate = FIXED_RATE;
    let capacity: number | undefined;
    if (rate === undefined) {
      console.log(
        `\ncapacity: ${CAPACITY_INFLIGHT} webhooks in flight (each POST → succeeded → next), ${CAPACITY_WARMUP_MS / 1000} s + ${CAPACITY_MS / 1000} s…`,
      );
      const countFrom = performance.now() + CAPACITY_WARMUP_MS;
      const end = countFrom + CAPACITY_MS;
      let counted = 0;
      await Promise.all(
        Array.from({ length: CAPACITY_INFLIGHT }, async () => {
          while (performance.now() < end) {
            const id = await fire(performance.now());
            if (!id) {
              await sleep(50);
              continue;
            }
            const s = await tracker.done(id, 60_000);
            const now = performance.now();
            if (s === 'succeeded' && now >= countFrom && now < end) counted++;
          }
        }),
      );
      capacity = (counted / CAPACITY_MS) * 1000;
      rate = Math.floor(capacity * LOAD);
      console.log(`capacity: ${fmt(capacity)} executions/s (${counted} succeeded in ${CAPACITY_MS / 1000} s); soak rate ${LOAD} × that = ${rate}/s`);
      if (rate < 1) throw new Error(`the measured capacity (${fmt(capacity, 1)}/s) is too low to soak at ${LOAD} × it`);
      if (tracker.total.rejected || tracker.total.failed)
        console.log(`WARNING: capacity phase: ${tracker.total.rejected} rejected, ${tracker.total.failed} failed; first: ${tracker.firstFailure}`);
    }
    const capacityPhase = { ...tracker.total };

    // ---- 2. soak: an open loop at `rate`, a sample every SAMPLE_MS
    await sleep(1000); // let the capacity phase's last records land
    const before = await natsFigures(jsm);
    const cpuBefore = Object.fromEntries(PROCS.map((p) => [p, procCpuMicros(pids[p])])) as Record<ProcName, number>;
    const acceptedBefore = tracker.total.accepted;
    const succeededBefore = tracker.total.succeeded;
    const nSamples = Math.max(1, Math.round(SOAK_MS / SAMPLE_MS));
    const soakMs = nSamples * SAMPLE_MS;
    console.log(
      `\nsoak: ${rate} webhooks/s for ${fmt(soakMs / 1000)} s (${nSamples} samples of ${fmt(SAMPLE_MS / 1000)} s); ` +
        `before: ${before.execRecords} execution records (${mib(before.execBytes)} MiB), JetStream storage ${mib(before.accountBytes)} MiB`,
    );
    const head = [
      't s',
      'acc/s',
      'ok/s',
      'fail',
      'p50 ms',
      'p99 ms',
      'backlog',
      'gw MiB',
      'exec MiB',
      'exec heap',
      'runner MiB',
      'nats MiB',
      'bench MiB',
      'records',
      'exec KV MiB',
      'JS MiB',
      'load1',
      // SOAK_NODE=waiting: the counter's runs started and not ended at the sample.
      ...(WAITING ? ['running'] : []),
    ];
    const widths = head.map((h) => Math.max(h.length, 7));
    const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join(' ');
    console.log(line(head));
    const thirds = [new Samples(), new Samples(), new Samples()];
    const soakStart = performance.now();
    tracker.cut();
    tracker.bucketOf = (at) => (at < soakStart + soakMs ? thirds[Math.min(2, Math.floor((3 * (at - soakStart)) / soakMs))] : undefined);
    // SOAK_NODE=waiting: by the time the webhook was due, not the time it finished (the first third's finished
    // executions would be the short nodes only: a node sent at the start finishes up to 40 s later).
    tracker.byDueTime = WAITING;
    let sent = 0;
    const total = Math.round((rate * soakMs) / 1000);
    const ticker = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - soakStart) * rate) / 1000));
      for (; sent < due; sent++) void fire(soakStart + (sent * 1000) / rate);
    }, 5);
    const samples: Sample[] = [];
    try {
      for (let k = 1; k <= nSamples; k++) {
        await sleep(soakStart + k * SAMPLE_MS - performance.now());
        const w = tracker.cut();
        const rss = Object.fromEntries(PROCS.map((p) => [p, rssBytes(pids[p])])) as Record<ProcName, number>;
        const s: Sample = {
          t: (performance.now() - soakStart) / 1000,
          acceptedPerSec: (w.accepted * 1000) / SAMPLE_MS,
          succeededPerSec: (w.succeeded * 1000) / SAMPLE_MS,
          failed: w.failed + w.rejected,
          rejected: w.rejected,
          p50Ms: w.latency.percentile(0.5),
          p99Ms: w.latency.percentile(0.99),
          rss,
          execHeap: await heapUsed(executor),
          load1: loadavg()[0]!,
          ...(counter ? { running: counter.running } : {}),
          ...(await natsFigures(jsm)),
        };
        samples.push(s);
        console.log(
          line([
            fmt(s.t),
            fmt(s.acceptedPerSec, 1),
            fmt(s.succeededPerSec, 1),
            String(s.failed),
            fmt(s.p50Ms, 1),
            fmt(s.p99Ms, 1),
            String(s.backlog),
            ...PROCS.slice(0, 2).map((p) => mib(rss[p])),
            mib(s.execHeap),
            ...PROCS.slice(2).map((p) => mib(rss[p])),
            String(s.execRecords),
            mib(s.execBytes),
            mib(s.accountBytes),
            fmt(s.load1, 2),
            ...(counter ? [String(s.running ?? '-')] : []),
          ]),
        );
      }
    } finally {
      clearInterval(ticker);
    }
    const cpuUs = Object.fromEntries(PROCS.map((p) => [p, procCpuMicros(pids[p]) - cpuBefore[p]])) as Record<ProcName, number>;

    // ---- 3. drain: every accepted webhook must end `succeeded`
    const drainUntil = performance.now() + DRAIN_MS;
    while ((inFlight > 0 || tracker.pending.size > 0) && performance.now() < drainUntil) await sleep(100);
    let lost = 0;
    let lateSucceeded = 0;
    const lostIds: string[] = [];
    for (const id of [...tracker.pending.keys()]) {
      // The watch may have missed it: read the record itself.
      const e = await kv.get(`${workflowId}.${id}`).catch(() => null);
      const status = e?.operation === 'PUT' ? (e.json() as { status?: string }).status : undefined;
      if (status === 'succeeded') lateSucceeded++;
      else {
        lost++;
        if (lostIds.length < 5) lostIds.push(`${id} (${status ?? 'no record'})`);
      }
    }
    // Records are written before their jobs are acknowledged: wait for the acks too (the queue must end empty).
    const emptyFrom = performance.now();
    let after = await natsFigures(jsm);
    while (after.backlog > 0 && performance.now() - emptyFrom < 30_000) {
      await sleep(250);
      after = await natsFigures(jsm);
    }
    const emptyAfterMs = performance.now() - emptyFrom;
    // SOAK_NODE=waiting: read after the drain and the queue's emptying, so that a second run started late shows too.
    const waiting = counter ? waitingFigures(counter, acceptedN) : undefined;
    const soak = {
      accepted: tracker.total.accepted - acceptedBefore,
      succeeded: tracker.total.succeeded - succeededBefore + lateSucceeded,
      failed: tracker.total.failed - capacityPhase.failed,
      rejected: tracker.total.rejected - capacityPhase.rejected,
      lost,
    };
    report({
      rate,
      capacity,
      samples,
      thirds,
      before,
      after,
      emptyAfterMs,
      soak,
      cpuUs,
      lostIds,
      rejectedBy: tracker.rejectedBy,
      firstFailure: tracker.firstFailure,
      sent,
      waiting,
    });
  } finally {
    watch?.stop();
    agent.destroy();
    // Executor first (it drains its in-flight jobs), then the rest.
    for (const role of ['executor', 'gateway', 'runner'] as const) {
      const r = roles.find((x) => x.kind === role);
      if (r) await r.stop().catch(() => r.proc.kill('SIGKILL'));
    }
    await nc?.close().catch(() => undefined);
    await nats.stop();
    await counter?.close();
  }
}

interface Report {
  rate: number;
  capacity: number | undefined;
  samples: Sample[];
  thirds: Samples[];
  before: NatsFigures;
  after: NatsFigures;
  /** From the last execution final to the JOBS stream empty (or 30 s), ms. */
  emptyAfterMs: number;
  soak: { accepted: number; succeeded: number; failed: number; rejected: number; lost: number };
  cpuUs: Record<ProcName, number>;
  lostIds: string[];
  rejectedBy: Map<string, number>;
  firstFailure: string | undefined;
  sent: number;
  /** SOAK_NODE=waiting only. */
  waiting: WaitingFigures | undefined;
}

/** `n` rounded to `d` decimals; null when not finite (JSON has no NaN). */
function round(n: number, d: number): number | null {
  if (!Number.isFinite(n)) return null;
  const f = 10 ** d;
  return Math.round(n * f) / f;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const pctChange = (from: number, to: number): string => `${to >= from ? '+' : ''}${fmt(((to - from) / from) * 100, 1)} %`;

function report(r: Report): void {
  const { samples, soak } = r;
  // SOAK_NODE=waiting: the nodes in flight (and the memory they hold, the JOBS messages not yet acknowledged)
  // grow for the first WAIT_MAX_MS; the flatness checks start after that ramp (when 3 samples are left).
  const afterRamp = r.waiting ? samples.filter((s) => s.t >= WAITING_RAMP_S) : samples;
  const steady = afterRamp.length >= 3 ? afterRamp : samples;
  const first = steady[0]!;
  const last = samples[samples.length - 1]!;
  const third = Math.max(1, Math.floor(steady.length / 3));
  const early = steady.slice(0, third);
  const late = steady.slice(-third);
  console.log(
    `\n==== bench:soak verdict (${r.rate} webhooks/s${r.capacity ? `, half of the measured ${fmt(r.capacity)}/s` : ''}${r.waiting ? ', SOAK_NODE=waiting' : ''}, ${fmt(last.t)} s) ====`,
  );
  if (steady !== samples)
    console.log(
      `(SOAK_NODE=waiting: RSS, heap and backlog compared from the first sample after the ${fmt(WAITING_RAMP_S)} s ramp of nodes in flight, t = ${fmt(first.t)} s)`,
    );

  const rssParts = PROCS.map((p) => {
    const a = first.rss[p];
    const b = last.rss[p];
    const flat = Math.abs(b - a) <= FLAT_RSS * a;
    return { p, text: `${p} ${mib(a)} → ${mib(b)} MiB (${pctChange(a, b)}) ${flat ? 'flat' : 'NOT FLAT'}`, flat };
  });
  console.log(`RSS, first sample → last (within ${FLAT_RSS * 100} % is flat): ${rssParts.map((x) => x.text).join('; ')}`);
  const between = Math.max(1, last.execRecords - first.execRecords);
  console.log(
    `executor V8 heap in use, first sample → last: ${mib(first.execHeap)} → ${mib(last.execHeap)} MiB, ` +
      `${fmt((last.execHeap - first.execHeap) / between)} B per execution over ${between} executions ` +
      `(${NODE_FLAGS.includes('--expose-gc') ? 'after a full collection each time' : 'garbage included: SOAK_NODE_FLAGS=--expose-gc for what is retained'})`,
  );

  const [p0, , p2] = r.thirds as [Samples, Samples, Samples];
  const p99a = p0.percentile(0.99);
  const p99c = p2.percentile(0.99);
  const latencyFlat = p99c <= FLAT_P99 * p99a;
  console.log(
    `latency, webhook due → succeeded${r.waiting ? ' (the thirds by due time; the node waits 0.5–40 s)' : ''}: first third p50 ${fmt(p0.percentile(0.5), 1)} / p99 ${fmt(p99a, 1)} ms (${p0.count} executions), ` +
      `last third p50 ${fmt(p2.percentile(0.5), 1)} / p99 ${fmt(p99c, 1)} ms (${p2.count}): p99 ${pctChange(p99a, p99c)}, ` +
      `${latencyFlat ? 'flat' : 'NOT FLAT'} (flat: the last third's p99 at most ${FLAT_P99}× the first's)`,
  );

  const backlogEarly = mean(early.map((s) => s.backlog));
  const backlogLate = mean(late.map((s) => s.backlog));
  // SOAK_NODE=waiting: the backlog holds the ~200 jobs whose nodes wait (not acknowledged until done), whose
  // number varies with the waits drawn: 10 % of it more is allowed.
  const backlogSlack = r.rate + (r.waiting ? 0.1 * backlogEarly : 0);
  const backlogFlat = backlogLate <= backlogEarly + backlogSlack;
  console.log(
    `JOBS backlog at the samples${r.waiting ? ' (the nodes in flight included: a job is acknowledged when its node is done)' : ''}: mean ${fmt(backlogEarly, 1)} in the first third, ${fmt(backlogLate, 1)} in the last, max ${Math.max(...samples.map((s) => s.backlog))}, ` +
      `${r.after.backlog} after the drain (${r.after.backlog ? 'NOT EMPTY' : 'empty'} ${fmt(r.emptyAfterMs / 1000, 1)} s after the last execution finished): ${backlogFlat ? `flat (no growth beyond one second of arrivals${r.waiting ? ' + 10 %' : ''})` : 'GROWING: the executor falls behind at this rate'}; ` +
      `JOBS bytes ${mib(first.jobsBytes)} → ${mib(last.jobsBytes)} MiB`,
  );

  const records = r.after.execRecords - r.before.execRecords;
  const perExec = (r.after.execBytes - r.before.execBytes) / Math.max(1, records);
  const accountPerExec = (r.after.accountBytes - r.before.accountBytes) / Math.max(1, records);
  const weekBytes = perExec * r.rate * 7 * 24 * 3600;
  console.log(
    `NATS storage: the executions bucket kept ${records} more records, ${mib(r.after.execBytes - r.before.execBytes)} MiB: ${fmt(perExec)} B per execution ` +
      `(JetStream account storage ${fmt(accountPerExec)} B per execution). Records are kept for LDBOX_EXECUTION_RETENTION (default 7 days), ` +
      `so storage grows by that much per execution until the retention removes them: at ${r.rate}/s, ${fmt((perExec * r.rate * 3600) / 1024 ** 3, 2)} GiB/h, ` +
      `levelling off at ~${fmt(weekBytes / 1024 ** 3, 0)} GiB after 7 days. nats-server RSS ${mib(first.rss.nats)} → ${mib(last.rss.nats)} MiB.`,
  );

  const execs = Math.max(1, soak.succeeded);
  const ownCores = PROCS.reduce((a, p) => a + r.cpuUs[p], 0) / 1e6 / last.t;
  console.log(
    `CPU per execution over the soak: ${PROCS.map((p) => `${p} ${fmt(r.cpuUs[p] / execs)} µs`).join(', ')} ` +
      `(= ${fmt(ownCores, 2)} cores in all, of ${availableParallelism()})`,
  );

  const bad = soak.failed + soak.rejected + soak.lost;
  console.log(
    `webhooks: ${r.sent} sent, ${soak.accepted} accepted (202), ${soak.succeeded} succeeded, ${soak.failed} failed, ${soak.rejected} not accepted, ` +
      `${soak.lost} accepted but not succeeded: ${bad === 0 && soak.succeeded === soak.accepted ? 'every 202 ended SUCCEEDED' : 'LOST OR FAILED WEBHOOKS'}`,
  );
  if (r.rejectedBy.size) console.log(`  not accepted: ${[...r.rejectedBy].map(([k, v]) => `${v} × ${k}`).join('; ')}`);
  if (r.lostIds.length) console.log(`  e.g. ${r.lostIds.join(', ')}`);
  if (r.firstFailure) console.log(`  first failure: ${r.firstFailure}`);
  const waitingOk = r.waiting ? reportWaiting(r.waiting, soak) : true;
  const loads = samples.map((s) => s.load1);
  console.log(
    `noise: load average (1 min) ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)} during the soak on ${availableParallelism()} cores ` +
      `(this run's five processes used ${fmt(ownCores, 2)} cores on average; the rest is other work on the machine)`,
  );
  const allRssFlat = rssParts.every((x) => x.flat);
  console.log(
    `verdict: RSS ${
      allRssFlat
        ? 'flat'
        : `NOT FLAT (${rssParts
            .filter((x) => !x.flat)
            .map((x) => x.p)
            .join(', ')})`
    }; p99 ${latencyFlat ? 'flat' : 'NOT FLAT'}; JOBS backlog ${backlogFlat ? 'flat' : 'GROWING'}; ` +
      `executions bucket +${fmt(perExec)} B per execution (kept for the retention); ` +
      `${bad === 0 && soak.succeeded === soak.accepted ? 'no webhook lost or failed' : `${bad + Math.max(0, soak.accepted - soak.succeeded - soak.failed - soak.lost)} WEBHOOKS LOST OR FAILED`}` +
      (r.waiting
        ? `; ${r.waiting.ranTwice === 0 ? 'no node ran twice' : `${r.waiting.ranTwice} NODES RAN MORE THAN ONCE`}; ${r.waiting.neverRan === 0 ? 'every accepted node ran' : `${r.waiting.neverRan} ACCEPTED NODES NEVER RAN`}${r.waiting.unended ? `; ${r.waiting.unended} RUNS NEVER ENDED` : ''}`
        : ''),
  );
  if (bad > 0 || soak.succeeded !== soak.accepted || !waitingOk) process.exitCode = 1;
  console.log(
    `SOAK_JSON ${JSON.stringify({
      rate: r.rate,
      capacity: r.capacity ?? null,
      soak,
      samples: samples.map((s) => ({
        ...s,
        t: round(s.t, 1),
        acceptedPerSec: round(s.acceptedPerSec, 1),
        succeededPerSec: round(s.succeededPerSec, 1),
        p50Ms: round(s.p50Ms, 2),
        p99Ms: round(s.p99Ms, 2),
      })),
      bytesPerExecution: round(perExec, 0),
      cpuUsPerExecution: Object.fromEntries(PROCS.map((p) => [p, round(r.cpuUs[p] / execs, 0)])),
      ...(r.waiting
        ? {
            waiting: {
              executorConcurrency: r.waiting.executorConcurrency,
              acceptedN: r.waiting.acceptedN,
              ranTwice: r.waiting.ranTwice,
              extraRuns: r.waiting.extraRuns,
              neverRan: r.waiting.neverRan,
              unended: r.waiting.unended,
              runsNotAccepted: r.waiting.runsNotAccepted,
              runsEnded: r.waiting.measured.count,
              over30s: r.waiting.over30s,
              durationMs: {
                min: round(r.waiting.measured.percentile(0), 0),
                p50: round(r.waiting.measured.percentile(0.5), 0),
                max: round(r.waiting.measured.percentile(1), 0),
              },
            },
          }
        : {}),
    })}`,
  );
}

/** SOAK_NODE=waiting's part of the verdict (printed); true when no node ran twice and every accepted one ran. */
function reportWaiting(w: WaitingFigures, soak: Report['soak']): boolean {
  const notFinished = Math.max(0, soak.accepted - soak.succeeded - soak.failed);
  const dist = (x: Samples) => `min ${fmt(x.percentile(0) / 1000, 2)} / p50 ${fmt(x.percentile(0.5) / 1000, 2)} / max ${fmt(x.percentile(1) / 1000, 2)} s`;
  console.log(
    `SOAK_NODE=waiting (executor LDBOX_EXECUTOR_CONCURRENCY=${w.executorConcurrency}): ${soak.accepted} webhooks accepted; executions ${soak.succeeded} succeeded, ` +
      `${soak.failed} failed, ${notFinished} never finished`,
  );
  console.log(
    `  node runs at the counter: ${w.measured.count} ended; durations, start → end: ${dist(w.measured)} (the waits drawn: ${dist(w.drawn)}); ` +
      `${w.over30s} ran longer than ${LD_WAIT_MAX_MS / 1000} s (${fmt((100 * w.over30s) / Math.max(1, w.measured.count), 1)} %: past the executor's 30 s ack_wait, two ld.wait calls)`,
  );
  console.log(
    `  n whose node ran more than once: ${w.ranTwice} (${w.extraRuns} extra runs) — ${w.ranTwice === 0 ? 'none, as required' : 'MUST BE 0'}; ` +
      `accepted n whose node never ran: ${w.neverRan} of ${w.acceptedN} — ${w.neverRan === 0 ? 'none, as required' : 'MUST BE 0'}; ` +
      `runs started and never ended: ${w.unended}; runs of an n not accepted: ${w.runsNotAccepted}`,
  );
  for (const e of w.ranTwiceExamples) console.log(`  ran twice: ${e}`);
  if (w.neverRanExamples.length) console.log(`  never ran: ${w.neverRanExamples.join(', ')}`);
  if (w.malformed) console.log(`  the counter refused ${w.malformed} request(s); first: ${w.firstMalformed}`);
  return w.ranTwice === 0 && w.neverRan === 0 && w.unended === 0 && w.malformed === 0;
}

main().then(
  () => setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref(),
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 2000).unref();
  },
);
