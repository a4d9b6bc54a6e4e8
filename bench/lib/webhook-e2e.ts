/**
 * Bench-only: PART 2 of bench/webhook.ts — end to end, from a webhook POST to the execution record reaching
 * `succeeded` in the `ldbox-executions` KV bucket.
 *
 * Set-up (all against the nats-server of part 1, at `natsUrl`):
 *   - the JetStream state is reset first: the JOBS stream and every `KV_ldbox-*` bucket stream are deleted
 *     (part 1 leaves JOBS purged but with its own, much larger limits, its gateway's workflow in the KV
 *     buckets, and no consumer); the gateway then recreates them with its defaults, as on a first start,
 *     and the executor creates its durable consumer on the fresh stream;
 *   - three child processes, each with its own event loop (none is the measuring process):
 *       gateway   bench/lib/webhook-server.js gateway (the real `startGateway`, LDBOX_WEBHOOK_RATE=0);
 *       runner    this file, `runner`: `startRunnerServer(loadRunnerConfig(env))`, port 0, pool size from
 *                 LDBOX_POOL_SIZE (default: the runner's own, one worker per core);
 *       executor  this file, `executor`: `startExecutor(loadExecutorConfig(env))` against that runner,
 *                 concurrency from LDBOX_EXECUTOR_CONCURRENCY (default here 64; the executor's own is 16);
 *     production loggers at LDBOX_LOG_LEVEL (info) on stdout → /dev/null; they are not pinned to a CPU
 *     (nats-server stays on the CPU part 1 pinned it to);
 *   - a one-node workflow created through the control plane (Connect JSON CreateWorkflow,
 *     `AUTH_METHOD_NONE`): `return { ok: true, n: data.input.n }` with input `{ n: '{{trigger.output.body.n}}' }`;
 *   - in the measuring process, HTTP/1.1 keep-alive connections on raw sockets (raw-http-client.ts: one
 *     write per request), and for phase (a) one KV watch (updates only, not polling) on `<workflowId>.*`:
 *     each entry's `status` is timestamped on arrival (`running` first seen, `succeeded`/`failed`; a run that ends
 *     within the executor's LDBOX_RUNNING_RECORD_DELAY_MS has no `running` write: its record's `startedAt`); this
 *     process runs at nice 10 once the children are up ({@link yieldToMeasured}).
 *
 * Phases, after a warm-up that is not counted (a few webhooks one at a time, then a burst of `warmupBurst`, so
 * that every process runs optimised code, as a service that has been up for a while does):
 *   (a) unloaded: `sequential` webhooks one after the other, each POST → 202 → wait for `succeeded` → next;
 *   (b) throughput: `burst` webhooks sent as fast as `conns` keep-alive connections allow (one request in
 *       flight each), then waiting for all of them; executions/s = burst / (first POST → last `succeeded`
 *       record). Since the gateway accepts far faster than one executor runs, the queue grows during the
 *       burst and the latency of this phase is mostly time spent waiting in JOBS (202 → running).
 *       Not watched: a watch delivering every record write to this process cost it (and nats-server) ~150 µs
 *       of CPU per execution, taken from the processes measured. Instead the measuring process asks for the
 *       JOBS stream's message count every {@link COMPLETION_POLL_MS} once every POST has been answered: the
 *       stream is a work queue and an executor acknowledges a job only after its final record is stored (a
 *       retried job stays in it, given back), so an empty stream means every job's final record is written.
 *       Then it reads the last record of each of the workflow's executions (an ordered consumer, last per
 *       subject) with the time nats-server stored it (the message's timestamp, ns): an execution counts as
 *       `succeeded` when that record says so, done at that time; its `running` time is the record's
 *       `startedAt` (ms). The CPU window ends when the stream is found empty, before the records are read.
 * Latency is POST sent → the `succeeded` record stored by nats-server (its stream timestamp, read after the
 * phase: "record timestamps"); for (a) the time its watch saw it is printed too (one hop later). A webhook that is not
 * 202, or whose execution is not `succeeded` within `timeoutMs` of its POST (b: of the last POST), or ends
 * `failed`, is counted in `failed` and flagged.
 *
 * Child IPC (as webhook-server.ts): `{type:'ready', port}` once serving (the executor: once `ready()`),
 * `{type:'stop'}` closes and exits; a child exits too when its parent goes away (IPC disconnect).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { getPriority, loadavg, setPriority } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import { procCpuMicros } from './webhook-nats.js';
import { RawHttpConnection } from './raw-http-client.js';

export interface EndToEndPhase {
  /** Webhooks sent in the phase (each expected to be 202 and then `succeeded`). */
  sent: number;
  /** Of those, `succeeded` within the timeout. */
  executions: number;
  /** Not 202, ended `failed`, or not `succeeded` within the timeout. */
  failed: number;
  /** First failure, for the flag. */
  firstFailure?: string;
  /**
   * POST sent → execution `succeeded`, ms, by record timestamp: when nats-server stored the `succeeded`
   * record (its stream timestamp), on this process's clock (see {@link epochOffsetMs}).
   */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Phase (a): POST sent → the `succeeded` record seen by the watch, ms (a hop later than p50Ms); (b): as p50Ms. */
  p50SeenMs: number;
  /** Breakdown, ms (p50 and p99 each): POST → 202, 202 → `running` seen, `running` → `succeeded`. */
  stagesP50Ms: { accept: number; queue: number; run: number };
  stagesP99Ms: { accept: number; queue: number; run: number };
  /** Succeeded executions whose start is known (the watch saw `running`, or the record's startedAt): the stages are over these. */
  runningSeen: number;
  /** Wall time, ms: first POST → last `succeeded` (or the timeout). */
  wallMs: number;
  /** `executions / wallMs` per second. */
  perSec: number;
  /**
   * CPU per succeeded execution over the phase, µs (user + system, /proc/PID/stat): each child, nats-server
   * (when its pid is known) and this measuring process (the HTTP client and the KV watch).
   */
  cpuUsPerExec: Record<string, number>;
}

export interface EndToEndResult {
  /** Phase (a), sequential (the top-level figures below are this phase's). */
  executions: number;
  /** Webhooks that did not reach `succeeded` within the timeout, over both phases. */
  failed: number;
  /** POST sent → execution `succeeded`, ms (phase a). */
  p50Ms: number;
  p99Ms: number;
  /** Optional breakdown, ms: POST → 202, 202 → `running`, `running` → `succeeded` (phase a). */
  stagesP50Ms?: { accept: number; queue: number; run: number };
  unloaded: EndToEndPhase;
  /** Phase (b), as fast as `conns` connections allow. */
  loaded: EndToEndPhase & { conns: number };
  settings: {
    sequential: number;
    burst: number;
    conns: number;
    warmup: number;
    warmupBurst: number;
    timeoutMs: number;
    poolSize: string;
    executorConcurrency: string;
  };
  /** os.loadavg()[0] before and after part 2 (other people's work on this shared machine shows here). */
  loadAvg1: { before: number; after: number };
}

export interface EndToEndOptions {
  /** Phase (a): sequential webhooks. Default 200. */
  sequential?: number;
  /** Phase (b): webhooks in the burst. Default 4000. */
  burst?: number;
  /** Phase (b): concurrent keep-alive connections. Default 4. */
  conns?: number;
  /** Uncounted webhooks before phase (a). Default 10. */
  warmup?: number;
  /** Webhooks sent as a burst (on `conns` connections) after the sequential warm-up, not counted: the JIT's and NATS's steady state. */
  warmupBurst?: number;
  /** Per webhook: POST → `succeeded` longer than this is a failure. Default 60 s. */
  timeoutMs?: number;
  /** Progress lines on stderr. */
  log?: (line: string) => void;
  /** nats-server's pid, for its CPU per execution. */
  natsPid?: number;
  /** Children run with `node --cpu-prof`, profiles written to `profileDir`. */
  profile?: ReadonlyArray<'gateway' | 'runner' | 'executor'>;
  profileDir?: string;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** Jobs the executor runs at once: 64 unless LDBOX_EXECUTOR_CONCURRENCY says (its default, 16, leaves the runner idle between calls). */
const EXECUTOR_CONCURRENCY = process.env.LDBOX_EXECUTOR_CONCURRENCY ?? '64';
const SELF_JS = join(HERE, 'webhook-e2e.js');
/** Phase (b): how often the measuring process asks whether the JOBS stream is empty (see the file comment). */
const COMPLETION_POLL_MS = 10;
const EXECUTIONS_BUCKET = 'ldbox-executions';
const SERVER_JS = join(HERE, 'webhook-server.js');

// ============================================================================================ children

export type ChildKind = 'gateway' | 'runner' | 'executor';

/** A role started by {@link startChild}. */
export interface Child {
  kind: ChildKind;
  proc: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(proc: ChildProcess): void {
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Last resort (the parent exits or crashes without stopping them): no child outlives the bench.
    process.once('exit', () => {
      for (const p of live) p.kill('SIGKILL');
    });
  }
}

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((r) => p.once('exit', () => r()));
}

/**
 * Starts a role as a child process (the gateway through webhook-server.js, the others through this file's
 * child mode) with `nodeFlags`, and waits for its `{type:'ready', port}`. Also used by bench/soak.ts.
 */
export async function startChild(kind: ChildKind, env: NodeJS.ProcessEnv, nodeFlags: readonly string[] = []): Promise<Child> {
  const args = [...nodeFlags, ...(kind === 'gateway' ? [SERVER_JS, 'gateway'] : [SELF_JS, kind])];
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  track(proc);
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-10_000);
  });
  const stop = async (): Promise<void> => {
    if (proc.connected) proc.send({ type: 'stop' });
    else proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    await exited(proc);
    clearTimeout(timer);
  };
  try {
    const port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error(`${kind} not ready in 60 s: ${stderr}`)), 60_000);
      proc.on('message', (m: { type: string; port?: number }) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolvePort(m.port!);
        }
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${kind} exited with ${code ?? signal}: ${stderr}`));
      });
    });
    return { kind, proc, port, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Child mode: `node webhook-e2e.js runner|executor` (with an IPC channel). */
async function childMain(kind: 'runner' | 'executor'): Promise<void> {
  const send = (m: unknown) => process.send!(m);
  const { createLogger } = await import('../../src/logging/logger.js');
  const log = createLogger(kind, process.env.LDBOX_LOG_LEVEL ?? 'info');
  let close: () => Promise<void>;
  let port: number;
  if (kind === 'runner') {
    const { loadRunnerConfig } = await import('../../runner/config/runner-config.js');
    const { startRunnerServer } = await import('../../runner/server/runner-server.js');
    const server = await startRunnerServer(loadRunnerConfig(process.env), log);
    port = server.port;
    close = () => server.close(2000);
  } else {
    const { loadExecutorConfig } = await import('../../src/executor/executor-config.js');
    const { startExecutor } = await import('../../src/executor/index.js');
    const executor = await startExecutor(loadExecutorConfig(process.env), log);
    const deadline = Date.now() + 30_000;
    while (!executor.ready()) {
      if (Date.now() > deadline) throw new Error('the executor was not ready within 30 s (consumer / buckets)');
      await new Promise((r) => setTimeout(r, 25));
    }
    port = executor.port;
    close = () => executor.close(2000);
  }
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'memory') {
      // bench:soak's heap column: after a full collection when the child runs with --expose-gc, so that
      // what is retained shows, not the garbage of the last few hundred milliseconds.
      (globalThis as { gc?: () => void }).gc?.();
      send({ type: 'memory', ...process.memoryUsage() });
      return;
    }
    if (msg.type !== 'stop') return;
    setTimeout(() => process.exit(0), 10_000).unref();
    close().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port });
}

// ============================================================================================= helpers

function pct(xs: number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

interface Track {
  /** performance.now() of each stage; undefined until seen. */
  post?: number;
  accepted?: number;
  running?: number;
  /** The final record: seen by the watch (a), or stored (b). */
  done?: number;
  /** When nats-server stored the final record (its stream timestamp), on the performance.now() clock. */
  stored?: number;
  final?: 'succeeded' | 'failed';
  /** Why it counts as failed (not 202, failed record). */
  error?: string;
}

/** One POST on a keep-alive agent; resolves with the status and body (rejects on a socket error). */
export function post(agent: http.Agent, port: number, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolvePost, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolvePost({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The one node of a bench workflow: its code and limits (default: echo the webhook body's `n`). */
export interface BenchNode {
  code: string;
  limits?: { timeoutMs?: number };
}

const ECHO_NODE: BenchNode = { code: 'return { ok: true, n: data.input.n }' };

/**
 * Creates a bench's one-node workflow (no webhook auth, the node's input `n` from the webhook body) through
 * the control plane; resolves to its id.
 */
export async function createWorkflow(port: number, adminToken: string, name = 'bench-e2e', node: BenchNode = ECHO_NODE): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/ldbox.workflows.v1.WorkflowService/CreateWorkflow`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({
      name,
      workspace: 'bench',
      nodes: [{ id: 'a', code: node.code, input: { n: '{{trigger.output.body.n}}' }, ...(node.limits ? { limits: node.limits } : {}) }],
      webhook: { authMethod: 'AUTH_METHOD_NONE' },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`CreateWorkflow answered ${res.status}: ${text}`);
  const id = (JSON.parse(text) as { workflow?: { id?: string } }).workflow?.id;
  if (!id) throw new Error(`CreateWorkflow: no workflow id in ${text}`);
  return id;
}

/** Deletes the JOBS stream (its consumers go with it) and every ldbox KV bucket stream: a first start. */
export async function resetJetStream(nc: NatsConnection): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for await (const name of jsm.streams.names()) {
    if (name === 'JOBS' || name.startsWith('KV_ldbox-')) await jsm.streams.delete(name);
  }
}

/**
 * Epoch ms minus performance.now() right now, to put nats-server's timestamps (epoch, ns) on the clock the
 * POSTs are timed with. Not `performance.timeOrigin`: the two clocks drift apart over a process's life (NTP
 * slews the wall clock, not the monotonic one; 0.65 ms measured here), which matters against a 3 ms goal.
 * Date.now() moves in whole-millisecond steps: at a step seen between two readings of performance.now()
 * less than 20 µs apart, the offset is known to within those µs. A preemption between the two readings (a
 * busy machine) would skew it by the time lost, so only tight brackets count, and the median of 5 is taken.
 * Takes about 5 ms.
 */
function epochOffsetMs(): number {
  const found: number[] = [];
  let lastD = Date.now();
  let lastP = performance.now();
  const giveUp = lastP + 1000;
  while (found.length < 5) {
    const p = performance.now();
    const d = Date.now();
    if (d !== lastD && p - lastP < 0.02) found.push(d - p);
    lastD = d;
    lastP = p;
    if (p > giveUp) throw new Error('could not read the wall clock against performance.now() (the machine too busy for 1 s)');
  }
  found.sort((a, b) => a - b);
  return found[2]!;
}

/**
 * Waits until the JOBS stream holds no job (asked every {@link COMPLETION_POLL_MS}): every job acknowledged
 * after its final record was stored, or removed after its failure was recorded. False at `deadline`.
 */
async function jobsEmptied(jsm: JetStreamManager, deadline: number): Promise<boolean> {
  for (;;) {
    if ((await jsm.streams.info('JOBS')).state.messages === 0) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, COMPLETION_POLL_MS));
  }
}

interface StoredRecord {
  status: string;
  error?: string;
  /** Epoch ms: when nats-server stored this record (its message timestamp, ns resolution). */
  storedAt: number;
  /** Epoch ms: the record's `startedAt` (the executor's clock, ms resolution), when it has one. */
  startedAt?: number;
}

/** The last record of every execution of `workflowId`, by execution id (an ordered consumer, last per subject). */
async function lastRecords(nc: NatsConnection, workflowId: string): Promise<Map<string, StoredRecord>> {
  const jsm = await jetstreamManager(nc);
  const subject = `$KV.${EXECUTIONS_BUCKET}.${workflowId}.*`;
  const out = new Map<string, StoredRecord>();
  const info = await jsm.streams.info(`KV_${EXECUTIONS_BUCKET}`, { subjects_filter: subject });
  if (Object.keys(info.state.subjects ?? {}).length === 0) return out;
  const consumer = await jetstream(nc).consumers.get(`KV_${EXECUTIONS_BUCKET}`, { filter_subjects: subject, deliver_policy: DeliverPolicy.LastPerSubject });
  const msgs = await consumer.consume();
  const prefix = `$KV.${EXECUTIONS_BUCKET}.${workflowId}.`;
  for await (const m of msgs) {
    if (m.data.length > 0) {
      try {
        const rec = m.json<{ status: string; error?: string; startedAt?: string | null }>();
        const startedAt = rec.startedAt ? Date.parse(rec.startedAt) : undefined;
        out.set(m.subject.slice(prefix.length), {
          status: rec.status,
          ...(rec.error ? { error: rec.error } : {}),
          // A number despite its declared type (nats.js parses the reply subject's token with parseInt).
          storedAt: Number(m.info.timestampNanos) / 1e6,
          ...(startedAt === undefined ? {} : { startedAt }),
        });
      } catch {
        // not a record (a delete marker has no data): the execution counts as not succeeded
      }
    }
    if (m.info.pending === 0) break;
  }
  await msgs.close();
  return out;
}

// ============================================================================================ measuring

/**
 * Part 2: webhook → succeeded-execution latency and throughput against the nats-server at `natsUrl` (the
 * one part 1 used). See the file comment.
 */
/** The niceness this process runs at while part 2 measures (its children were started before, at the usual 0). */
const MEASURING_NICENESS = 10;

/**
 * Lowers this process's scheduling priority once the processes under test run: the sender and the watch
 * that paces phase (a) then take a CPU only when the gateway, the executor, the runner and nats-server
 * leave one, as a sender on another machine would. On 2 cores the watch's wake-ups otherwise ran in the
 * middle of each execution's critical path (a perf trace: the runner waited for a CPU while this process
 * read the 202 and the `running` record). Only this thread: Linux priorities are per thread, and nice is
 * not inherited by processes that are already running. Returns what puts the priority back (raising it
 * again needs CAP_SYS_NICE: without it, part 3 runs niced too).
 */
function yieldToMeasured(): () => void {
  let before: number;
  try {
    before = getPriority();
    setPriority(Math.max(before, MEASURING_NICENESS));
  } catch {
    return () => undefined; // not permitted here: measured at the usual priority
  }
  return () => {
    try {
      setPriority(before);
    } catch {
      /* kept */
    }
  };
}

export async function measureEndToEnd(natsUrl: string, opts: EndToEndOptions = {}): Promise<EndToEndResult | undefined> {
  const sequential = opts.sequential ?? 200;
  const burst = opts.burst ?? 4000;
  const conns = opts.conns ?? 4;
  const warmup = opts.warmup ?? 10;
  const warmupBurst = opts.warmupBurst ?? 0;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const log = opts.log ?? (() => undefined);
  const loadBefore = loadavg()[0]!;
  // One folder per process kind with node's default file names (they hold the thread id): a fixed
  // --cpu-prof-name made the runner's worker threads overwrite each other's profile.
  const profiled = (kind: ChildKind): string[] =>
    opts.profile?.includes(kind) && opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.profileDir, kind)}`] : [];

  const children: Child[] = [];
  let restorePriority = (): void => undefined;
  let nc: NatsConnection | undefined;
  const connections: RawHttpConnection[] = [];
  const open = (port: number): RawHttpConnection => {
    const c = new RawHttpConnection('127.0.0.1', port);
    connections.push(c);
    return c;
  };
  try {
    nc = await connect({ servers: natsUrl, name: 'bench-webhook-e2e' });
    await resetJetStream(nc);

    const adminToken = `bench-admin-${randomBytes(12).toString('hex')}`;
    // The gateway and the executor read workflows sealed with it (one fresh key per run).
    const dataKey = randomBytes(32).toString('base64');
    // allSettled: should one fail, the other is still known (and stopped below) once it started.
    const started = await Promise.allSettled([
      startChild(
        'gateway',
        {
          LDBOX_GATEWAY_PORT: '0',
          LDBOX_GATEWAY_HOST: '127.0.0.1',
          LDBOX_ADMIN_TOKEN: adminToken,
          LDBOX_DATA_KEY: dataKey,
          NATS_URL: natsUrl,
          LDBOX_WEBHOOK_RATE: '0',
        },
        profiled('gateway'),
      ),
      startChild('runner', { LDBOX_RUNNER_PORT: '0' }, profiled('runner')),
    ]);
    for (const r of started) if (r.status === 'fulfilled') children.push(r.value);
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    const [gateway, runner] = children as [Child, Child];
    // After the gateway: it creates the stream and the buckets the executor opens.
    const executor = await startChild(
      'executor',
      {
        NATS_URL: natsUrl,
        LDBOX_EXECUTOR_PORT: '0',
        LDBOX_EXECUTOR_CONCURRENCY: EXECUTOR_CONCURRENCY,
        LDBOX_DATA_KEY: dataKey,
        LDBOX_RUNNER_URLS: `http://127.0.0.1:${runner.port}`,
      },
      profiled('executor'),
    );
    children.push(executor);
    restorePriority = yieldToMeasured();

    const workflowId = await createWorkflow(gateway.port, adminToken);
    const path = `/api/hooks/workflows/${workflowId}`;

    // ---- the watch: every status change of this workflow's executions, timestamped on arrival
    const tracks = new Map<string, Track>();
    const waiters = new Map<string, () => void>();
    const trackOf = (id: string): Track => {
      let t = tracks.get(id);
      if (!t) tracks.set(id, (t = {}));
      return t;
    };
    const kv = await new Kvm(jetstream(nc)).open('ldbox-executions');
    const watch = await kv.watch({ key: `${workflowId}.*`, include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true });
    const prefix = `${workflowId}.`;
    const watching = (async () => {
      for await (const e of watch) {
        const now = performance.now();
        if (e.operation !== 'PUT' || !e.key.startsWith(prefix)) continue;
        const id = e.key.slice(prefix.length);
        let status: string;
        try {
          status = (e.json() as { status: string }).status;
        } catch {
          continue;
        }
        const t = trackOf(id);
        if (status === 'running') t.running ??= now;
        else if ((status === 'succeeded' || status === 'failed') && t.final === undefined) {
          t.final = status;
          t.done = now;
          if (status === 'failed') t.error = `execution ${id} ended failed: ${(e.json() as { error?: string }).error ?? ''}`;
          waiters.get(id)?.();
          waiters.delete(id);
        }
      }
    })();
    watching.catch(() => undefined);

    /** POST one webhook on `agent`; returns its execution id (tracked), or undefined when not 202. */
    let seq = 0;
    const rejected: Track[] = [];
    const fire = async (conn: RawHttpConnection): Promise<string | undefined> => {
      const body = JSON.stringify({ n: seq++ });
      const t0 = performance.now();
      let r: { status: number; text: string };
      try {
        r = await conn.post(path, body);
      } catch (err) {
        rejected.push({ post: t0, error: `POST failed: ${(err as Error).message}` });
        return undefined;
      }
      const t1 = performance.now();
      const id = r.status === 202 ? (JSON.parse(r.text) as { executionId?: string }).executionId : undefined;
      if (!id) {
        rejected.push({ post: t0, error: `POST answered ${r.status}: ${r.text.slice(0, 200)}` });
        return undefined;
      }
      const t = trackOf(id);
      t.post = t0;
      t.accepted = t1;
      return id;
    };
    const finished = (id: string, deadline: number): Promise<void> => {
      if (tracks.get(id)?.final) return Promise.resolve();
      return new Promise<void>((r) => {
        const timer = setTimeout(() => (waiters.delete(id), r()), Math.max(0, deadline - performance.now()));
        waiters.set(id, () => (clearTimeout(timer), r()));
      });
    };

    /** Sends `count` webhooks as fast as `conns` keep-alive connections allow (one in flight each); the ids of the 202s. */
    const sendBurst = async (count: number): Promise<string[]> => {
      const burstConns = Array.from({ length: conns }, () => open(gateway.port));
      const ids: string[] = [];
      let sent = 0;
      await Promise.all(
        burstConns.map(async (first) => {
          let conn = first;
          while (sent < count) {
            sent++;
            if (conn.failed) conn = open(gateway.port); // the failed POST is counted; the next goes on a new connection
            const id = await fire(conn);
            if (id) ids.push(id);
          }
        }),
      );
      return ids;
    };

    /** CPU so far, µs, of every process that takes part. */
    const cpuNow = (): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const c of children) out[c.kind] = procCpuMicros(c.proc.pid!);
      if (opts.natsPid !== undefined) out['nats-server'] = procCpuMicros(opts.natsPid);
      const self = process.cpuUsage();
      out['bench client'] = self.user + self.system;
      return out;
    };
    const summarize = (
      ids: string[],
      rejectedFrom: number,
      sent: number,
      t0: number,
      tEnd: number,
      cpu0: Record<string, number>,
      cpu1 = cpuNow(),
    ): EndToEndPhase => {
      const ok = ids.map((id) => tracks.get(id)!).filter((t) => t.final === 'succeeded');
      const bad = ids.map((id) => tracks.get(id)!).filter((t) => t.final !== 'succeeded');
      const rej = rejected.slice(rejectedFrom);
      const firstFailure = rej[0]?.error ?? bad.find((t) => t.error)?.error ?? (bad.length ? `not succeeded within ${timeoutMs} ms` : undefined);
      const lat = ok.map((t) => (t.stored ?? t.done!) - t.post!);
      const withRunning = ok.filter((t) => t.running !== undefined);
      const accept = ok.map((t) => t.accepted! - t.post!);
      const queue = withRunning.map((t) => t.running! - t.accepted!);
      const run = withRunning.map((t) => t.done! - t.running!);
      const lastDone = ok.length ? Math.max(...ok.map((t) => t.stored ?? t.done!)) : tEnd;
      const wallMs = (bad.length || rej.length ? Math.max(lastDone, tEnd) : lastDone) - t0;
      return {
        sent,
        executions: ok.length,
        failed: bad.length + rej.length,
        ...(firstFailure ? { firstFailure } : {}),
        p50Ms: pct(lat, 0.5),
        p50SeenMs: pct(
          ok.map((t) => t.done! - t.post!),
          0.5,
        ),
        p99Ms: pct(lat, 0.99),
        maxMs: pct(lat, 1),
        stagesP50Ms: { accept: pct(accept, 0.5), queue: pct(queue, 0.5), run: pct(run, 0.5) },
        stagesP99Ms: { accept: pct(accept, 0.99), queue: pct(queue, 0.99), run: pct(run, 0.99) },
        runningSeen: withRunning.length,
        wallMs,
        perSec: ok.length / (wallMs / 1000),
        cpuUsPerExec: Object.fromEntries(Object.keys(cpu1).map((k) => [k, (cpu1[k]! - (cpu0[k] ?? 0)) / Math.max(1, ok.length)])),
      };
    };

    // ---- warm-up (not counted): QuickJS workers, connections, caches
    let seqConn = open(gateway.port);
    const seqConnNow = (): RawHttpConnection => (seqConn.failed ? (seqConn = open(gateway.port)) : seqConn);
    for (let i = 0; i < warmup; i++) {
      const id = await fire(seqConnNow());
      if (id) await finished(id, performance.now() + timeoutMs);
    }
    if (warmupBurst > 0) {
      // The JIT's steady state (and NATS's): after 10 webhooks the code still runs unoptimised (p50 ~6 ms, not ~3).
      log(`part 2: warm-up: ${warmupBurst} webhooks on ${conns} connections…`);
      const ids = await sendBurst(warmupBurst);
      const deadline = performance.now() + timeoutMs;
      for (const id of ids) await finished(id, deadline);
    }
    if (rejected.length) log(`part 2: warm-up: ${rejected.length} webhook(s) not accepted, first: ${rejected[0]!.error}`);
    rejected.length = 0;

    // ---- (a) unloaded: one at a time
    log(`part 2: ${sequential} sequential webhooks…`);
    const seqIds: string[] = [];
    const seqCpu = cpuNow();
    const seqT0 = performance.now();
    for (let i = 0; i < sequential; i++) {
      const t0 = performance.now();
      const id = await fire(seqConnNow());
      if (!id) continue;
      seqIds.push(id);
      await finished(id, t0 + timeoutMs);
    }
    const seqEnd = performance.now();
    const seqCpuEnd = cpuNow();
    // The stream timestamps of the `succeeded` records (the latency by record timestamp; the watch only paced the phase).
    let offset = epochOffsetMs();
    for (const [id, r] of await lastRecords(nc, workflowId)) {
      const t = tracks.get(id);
      if (t?.final === 'succeeded' && r.status === 'succeeded') t.stored = r.storedAt - offset;
      // A run shorter than LDBOX_RUNNING_RECORD_DELAY_MS has no `running` record to see: its start is the record's startedAt.
      if (t !== undefined && t.running === undefined && r.startedAt !== undefined) t.running = r.startedAt - offset;
    }
    const unloaded = summarize(seqIds, 0, sequential, seqT0, seqEnd, seqCpu, seqCpuEnd);

    // ---- (b) throughput: as fast as `conns` connections allow, then wait for all (not watched: see the file comment)
    watch.stop();
    await watching.catch(() => undefined);
    log(`part 2: ${burst} webhooks on ${conns} connections…`);
    const rejFrom = rejected.length;
    const jsm = await jetstreamManager(nc);
    offset = epochOffsetMs();
    const burstCpu = cpuNow();
    const burstT0 = performance.now();
    const burstIds = await sendBurst(burst);
    const lastPost = performance.now();
    log(`part 2: ${burstIds.length} accepted in ${((lastPost - burstT0) / 1000).toFixed(1)} s, waiting for the executions…`);
    const emptied = await jobsEmptied(jsm, lastPost + timeoutMs);
    const burstCpuEnd = cpuNow();
    const burstEnd = performance.now();
    if (!emptied) log(`part 2: the JOBS stream still held jobs ${timeoutMs / 1000} s after the last POST`);
    for (const [id, r] of await lastRecords(nc, workflowId)) {
      const t = tracks.get(id);
      if (!t || t.final !== undefined) continue; // not of the burst, or seen by the watch in (a)
      if (r.startedAt !== undefined) t.running = r.startedAt - offset;
      if (r.status === 'succeeded' || r.status === 'failed') {
        t.final = r.status;
        t.done = t.stored = r.storedAt - offset;
        if (r.status === 'failed') t.error = `execution ${id} ended failed: ${r.error ?? ''}`;
      }
    }
    const loaded = { ...summarize(burstIds, rejFrom, burst, burstT0, burstEnd, burstCpu, burstCpuEnd), conns };

    return {
      executions: unloaded.executions,
      failed: unloaded.failed + loaded.failed,
      p50Ms: unloaded.p50Ms,
      p99Ms: unloaded.p99Ms,
      stagesP50Ms: unloaded.stagesP50Ms,
      unloaded,
      loaded,
      settings: {
        sequential,
        burst,
        conns,
        warmup,
        warmupBurst,
        timeoutMs,
        poolSize: process.env.LDBOX_POOL_SIZE ?? 'default (1 per core)',
        executorConcurrency: EXECUTOR_CONCURRENCY,
      },
      loadAvg1: { before: loadBefore, after: loadavg()[0]! },
    };
  } finally {
    restorePriority();
    for (const c of connections) c.close();
    // Executor first (it drains its in-flight jobs), then the rest.
    for (const kind of ['executor', 'gateway', 'runner'] as const) {
      const c = children.find((x) => x.kind === kind);
      if (c) await c.stop().catch(() => c.proc.kill('SIGKILL'));
    }
    await nc?.close().catch(() => undefined);
  }
}

// ============================================================================================ child entry

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const kind = process.argv[2];
  if ((kind !== 'runner' && kind !== 'executor') || !process.send) {
    console.error('usage: webhook-e2e.js runner|executor (started by bench/webhook.ts with an IPC channel)');
    process.exit(2);
  }
  childMain(kind).catch((err: unknown) => {
    console.error(`webhook-e2e ${kind} failed:`, err);
    process.exit(1);
  });
}
