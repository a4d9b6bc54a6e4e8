/**
 * Webhook ingest throughput: the ldbox gateway beside a minimal reference, measured in the same run.
 *
 *   npm run bench:webhook      (= npm run build && node dist/bench/webhook.js)
 *   node dist/bench/webhook.js --quick      (1 round, 1 s warm-up + 3 s measured: a smoke run)
 *
 * One real nats-server (random loopback port, temp data dir, JetStream on, `max_payload` 8 MB for the
 * gateway's default 5 MiB body limit; bench/lib/webhook-nats.ts), then, one at a time and each in its own
 * child process (bench/lib/webhook-server.ts):
 *
 *   bare       node:http: route regex, constant-time `X-Webhook-Secret`, Content-Type, body, JSON.parse,
 *              job built, 202 — no publish (the upper bound for Node; server #1 of the notes);
 *   reference  bare + `await js.publish(subject, JSON, { msgID })` with stock @nats-io/jetstream defaults,
 *              into a fresh work-queue stream: "node:http + the same JetStream publish awaiting the ack";
 *   gateway    the real gateway (`startGateway`, config from env, `LDBOX_WEBHOOK_RATE=0`, production logger
 *              on stdout → /dev/null), a workflow created through its control plane (Connect JSON
 *              CreateWorkflow, `AUTH_METHOD_HEADER`), hit at its webhook URL with the secret header.
 *
 * Each is loaded by bench/lib/webhook-load.ts (its own process: raw keep-alive HTTP/1.1 connections, one
 * request in flight each, a ~1 KB JSON body) at each connection count: warm-up, then a measured window.
 * Rounds interleave bare → reference → gateway and the summary shows medians, with ratios taken within a
 * round (this 2-core machine is noisy, and shared). Streams are purged (the reference's re-created) before
 * every measurement; nothing consumes the jobs. After each measurement the stream must hold at least as
 * many jobs as there were 202s (a "stored" check).
 *
 * CPU: the server's own `process.cpuUsage()` over the window (asked over IPC) per accepted request;
 * nats-server's and the load generator's from /proc; "foreign" is machine CPU used by anything else
 * (other people's processes), in cores — a measurement with foreign > 0.15 is flagged.
 * Pinning (default when `taskset` exists and there are ≥ 2 cores, as in the notes): the server under test
 * on CPU 1, nats-server and the load generator on CPU 0.
 *
 * Goal (issue): the gateway accepts ≥ 1.2× the reference and ≥ 0.4× bare.
 *
 * Env (flags override): BENCH_WEBHOOK_ROUNDS (3; --rounds=N), BENCH_WEBHOOK_WARMUP_S (5; --warmup=S),
 * BENCH_WEBHOOK_SECONDS (10; --seconds=S), BENCH_WEBHOOK_CONNS ("64,10"; --conns=64,10),
 * BENCH_WEBHOOK_SERVERS ("bare,reference,gateway"; --servers=…), BENCH_WEBHOOK_PIN (auto|0|1; --pin=…),
 * BENCH_WEBHOOK_PROF (a server kind, e.g. "gateway": run it with `node --cpu-prof`, profiles written to a
 * temp dir that is printed), BENCH_WEBHOOK_BODY_BYTES (1023), LDBOX_LOG_LEVEL (gateway log level, info).
 *
 * Part 2 (bench/lib/webhook-e2e.ts): webhook → succeeded execution, end to end, with gateway, runner and
 * executor each in its own process: sequential webhooks (unloaded latency), then a burst on a few
 * connections (executions/s and latency under that load). BENCH_WEBHOOK_E2E_N (200, quick 30; --e2e-n=N),
 * BENCH_WEBHOOK_E2E_M (4000, quick 300; --e2e-m=M), BENCH_WEBHOOK_E2E_WARMUP (a warm-up burst before both phases,
 * not counted: 2000, quick 100; --e2e-warmup=W), BENCH_WEBHOOK_E2E_CONNS (4; --e2e-conns=C),
 * BENCH_WEBHOOK_E2E_TIMEOUT_S (60; --e2e-timeout=S); `--e2e-only` skips part 1; BENCH_WEBHOOK_E2E_PROF
 * ("executor,runner", …: those children run with `node --cpu-prof`, profiles in a printed temp dir).
 * Part 2 prints its goals (issue): a burst of 4000 webhooks to one workflow at ≥ 1,500 executions/s (first POST →
 * last succeeded) and a single webhook → succeeded p50 ≤ 3 ms, with the CPU each process spent per execution.
 *
 * Part 3 (bench/lib/webhook-replicas.ts): the R3 vs R1 ingest cost — part 1's gateway measurement against its own
 * 3-node nats-server cluster on loopback, the gateway's JOBS stream and KV buckets with 3 replicas
 * (`LDBOX_JOBS_REPLICAS=3`) against 1, alternating R1 → R3 in rounds on the same cluster (streams deleted and
 * recreated by the gateway for each; replica counts checked before and after each window). Part 1's load
 * generator, warm-up and window, CPU per accepted webhook of the gateway and of the three nats-servers
 * together, and pinning: with it, the gateway on CPU 1, the three nats-servers and the load generator on
 * CPU 0. Prints the medians and "R3 vs R1 ingest: rate ×…, p50 ×…, nats-server CPU per webhook ×…" (ratios
 * within a round). The gateway's NATS_URL is the seed list of all three, and it is restarted until its connection
 * is on the JOBS leader's node, for R1 and R3 alike (the client picks a node at random; through another node a
 * publish costs R1 about twice the nats-server CPU, noise as large as what is measured):
 * BENCH_WEBHOOK_R_PLACEMENT=any (--r-placement=any) measures it wherever it lands. BENCH_WEBHOOK_R_CONNS (64;
 * --r-conns=C), BENCH_WEBHOOK_R_ROUNDS (2, quick 1; --r-rounds=N).
 *
 * Parts: all three by default; `--e2e-only` runs part 2 alone, `--replicas-only` part 3 alone.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { measureEndToEnd, type EndToEndPhase, type EndToEndResult } from './lib/webhook-e2e.js';
import { measureReplicaCost, REPLICA_COUNTS, type ReplicaCostResult, type ReplicaMeasurement, type WindowResult } from './lib/webhook-replicas.js';
import type { LoadResult, LoadSpec } from './lib/webhook-load.js';
import { procCpuMicros, startBenchNats, type BenchNatsServer } from './lib/webhook-nats.js';

// ------------------------------------------------------------------------------------------- settings

type ServerKind = 'bare' | 'reference' | 'gateway';
const ALL_KINDS: ServerKind[] = ['bare', 'reference', 'gateway'];
const LABEL: Record<ServerKind, string> = {
  bare: 'bare node:http (no publish)',
  reference: 'reference: + stock js.publish',
  gateway: 'ldbox gateway',
};

const flags = new Map<string, string>();
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
  if (!m) throw new Error(`unknown argument ${a}`);
  flags.set(m[1]!, m[2] ?? '1');
}
const quick = flags.has('quick');
const setting = (flag: string, env: string, dflt: string, quickValue?: string): string =>
  flags.get(flag) ?? process.env[env] ?? (quick && quickValue !== undefined ? quickValue : dflt);
const num = (s: string, name: string): number => {
  const n = Number(s);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${s}"`);
  return n;
};

const ROUNDS = Math.floor(num(setting('rounds', 'BENCH_WEBHOOK_ROUNDS', '3', '1'), 'rounds'));
const WARMUP_MS = num(setting('warmup', 'BENCH_WEBHOOK_WARMUP_S', '5', '1'), 'warmup') * 1000;
const MEASURE_MS = num(setting('seconds', 'BENCH_WEBHOOK_SECONDS', '10', '3'), 'seconds') * 1000;
const CONNS = setting('conns', 'BENCH_WEBHOOK_CONNS', '64,10')
  .split(',')
  .map((s) => Math.floor(num(s.trim(), 'conns')));
const KINDS = setting('servers', 'BENCH_WEBHOOK_SERVERS', ALL_KINDS.join(','))
  .split(',')
  .map((s) => s.trim() as ServerKind);
for (const k of KINDS) if (!ALL_KINDS.includes(k)) throw new Error(`unknown server "${k}" (bare, reference, gateway)`);
const PROF = process.env.BENCH_WEBHOOK_PROF as ServerKind | undefined;
const BODY_BYTES = Math.floor(num(process.env.BENCH_WEBHOOK_BODY_BYTES ?? '1023', 'BENCH_WEBHOOK_BODY_BYTES'));
const E2E_ONLY = flags.has('e2e-only');
const REPLICAS_ONLY = flags.has('replicas-only');
if (E2E_ONLY && REPLICAS_ONLY) throw new Error('--e2e-only and --replicas-only exclude each other');
const R_CONNS = Math.floor(num(setting('r-conns', 'BENCH_WEBHOOK_R_CONNS', '64'), 'r-conns'));
const R_ROUNDS = Math.floor(num(setting('r-rounds', 'BENCH_WEBHOOK_R_ROUNDS', '2', '1'), 'r-rounds'));
const R_PLACEMENT = setting('r-placement', 'BENCH_WEBHOOK_R_PLACEMENT', 'leader');
if (R_PLACEMENT !== 'leader' && R_PLACEMENT !== 'any') throw new Error(`r-placement must be leader or any, got "${R_PLACEMENT}"`);
const E2E_N = Math.floor(num(setting('e2e-n', 'BENCH_WEBHOOK_E2E_N', '200', '30'), 'e2e-n'));
const E2E_M = Math.floor(num(setting('e2e-m', 'BENCH_WEBHOOK_E2E_M', '4000', '300'), 'e2e-m'));
const E2E_WARMUP = Math.floor(num(setting('e2e-warmup', 'BENCH_WEBHOOK_E2E_WARMUP', '2000', '100'), 'e2e-warmup'));
const E2E_KINDS = ['gateway', 'runner', 'executor'] as const;
const E2E_PROF = (process.env.BENCH_WEBHOOK_E2E_PROF ?? '')
  .split(',')
  .map((k) => k.trim())
  .filter((k) => k !== '')
  .map((k) => {
    if (!(E2E_KINDS as readonly string[]).includes(k)) throw new Error(`BENCH_WEBHOOK_E2E_PROF: unknown process "${k}" (gateway, runner, executor)`);
    return k as (typeof E2E_KINDS)[number];
  });
/** Goals of part 2 (issue): one executor, one runner of 2 workers, this machine. */
const GOAL_BURST_PER_S = 1500;
const GOAL_SINGLE_P50_MS = 3;
const E2E_CONNS = Math.floor(num(setting('e2e-conns', 'BENCH_WEBHOOK_E2E_CONNS', '4'), 'e2e-conns'));
const E2E_TIMEOUT_MS = num(setting('e2e-timeout', 'BENCH_WEBHOOK_E2E_TIMEOUT_S', '60'), 'e2e-timeout') * 1000;
const pinSetting = setting('pin', 'BENCH_WEBHOOK_PIN', 'auto');
const PIN = pinSetting === 'auto' ? availableParallelism() >= 2 && hasTaskset() : pinSetting !== '0';

const GOAL_VS_REF = 1.2;
const GOAL_VS_BARE = 0.4;
const FOREIGN_WARN_CORES = 0.15;
const ADMIN_TOKEN = `bench-admin-${randomBytes(12).toString('hex')}`;
/** The gateway requires a data key (it seals stored secrets); a fresh one per run. */
const DATA_KEY = randomBytes(32).toString('base64');
const MAX_PAYLOAD = 8 * 1024 * 1024; // fits maxJobBytes(5 MiB), the gateway's default body limit
/** The gateway's env in parts 1 and 3, but for NATS_URL (and part 3's LDBOX_JOBS_REPLICAS). */
const GATEWAY_ENV: NodeJS.ProcessEnv = {
  LDBOX_GATEWAY_PORT: '0',
  LDBOX_GATEWAY_HOST: '127.0.0.1',
  LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
  LDBOX_DATA_KEY: DATA_KEY,
  LDBOX_WEBHOOK_RATE: '0',
  LDBOX_JOBS_MAX_MSGS: '100000000',
  LDBOX_JOBS_MAX_BYTES: String(16 * 1024 ** 3),
};
const REF_STREAM = 'BENCH_REF';
const HERE = new URL('.', import.meta.url).pathname;
const SERVER_JS = join(HERE, 'lib', 'webhook-server.js');
const LOAD_JS = join(HERE, 'lib', 'webhook-load.js');

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const onCpu = (cpu: number): string[] => (PIN ? ['taskset', '-c', String(cpu)] : []);
const SERVER_CPU = 1;
const SIDE_CPU = 0; // nats-server and the load generator

// ------------------------------------------------------------------------------------------- helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const fmt = (n: number | undefined, d = 0): string => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(d));
const kfmt = (n: number): string => (Number.isFinite(n) ? `${(n / 1000).toFixed(2)}k` : '-');

/** A ~`bytes`-long JSON object like a real webhook event (deterministic). */
function makeBody(bytes: number): string {
  const body: Record<string, unknown> = {
    event: 'order.created',
    id: 'evt_01HZX3K6Q8N2V5T7W9Y1B3D5F7',
    created: 1_735_689_600,
    x: 42,
    data: { customer: { id: 'cus_0123456789', email: 'someone@example.com', country: 'DE' }, amount: 12_345, currency: 'eur', items: [] as unknown[] },
  };
  const items = (body.data as { items: unknown[] }).items;
  while (JSON.stringify(body).length < bytes - 60) items.push({ sku: `sku-${items.length}`, qty: 1, price: 999 });
  body.pad = '';
  body.pad = 'x'.repeat(Math.max(0, bytes - JSON.stringify(body).length));
  return JSON.stringify(body);
}

/** Machine-wide busy CPU time so far, µs (all cores; /proc/stat). */
function machineBusyMicros(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - (f[3] ?? 0) - (f[4] ?? 0)) * 10_000;
  } catch {
    return Number.NaN;
  }
}

// ------------------------------------------------------------------------------------- child processes

interface ServerChild {
  kind: ServerKind;
  proc: ChildProcess;
  port: number;
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((r) => p.once('exit', () => r()));
}

function spawnNode(cpu: number, nodeArgs: string[], env: NodeJS.ProcessEnv, stdout: 'ignore' | 'inherit'): ChildProcess {
  const [cmd, ...pre] = [...onCpu(cpu), process.execPath];
  return spawn(cmd!, [...pre, ...nodeArgs], { env, stdio: ['ignore', stdout, 'pipe', 'ipc'] });
}

let profDir: string | undefined;

async function startServer(kind: ServerKind, env: NodeJS.ProcessEnv): Promise<ServerChild> {
  const nodeArgs = [SERVER_JS, kind];
  if (PROF === kind) {
    profDir ??= mkdtempSync(join(tmpdir(), 'ldbox-bench-webhook-prof-'));
    nodeArgs.unshift('--cpu-prof', `--cpu-prof-dir=${profDir}`);
  }
  // The gateway's access log goes to stdout, i.e. /dev/null here: logging is paid for, not kept.
  const proc = spawnNode(SERVER_CPU, nodeArgs, { ...process.env, ...env }, 'ignore');
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-10_000);
  });
  const waiters = new Map<number, (us: number) => void>();
  let nextId = 0;
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${kind} server not ready in 60 s: ${stderr}`)), 60_000);
    proc.on('message', (m: { type: string; port?: number; id?: number; user?: number; system?: number }) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(m.port!);
      } else if (m.type === 'cpu') {
        waiters.get(m.id!)?.(m.user! + m.system!);
        waiters.delete(m.id!);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${kind} server exited with ${code}: ${stderr}`));
    });
  });
  return {
    kind,
    proc,
    port,
    cpu: () =>
      new Promise<number>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => reject(new Error(`${kind} server did not report its CPU within 10 s: ${stderr}`)), 10_000);
        waiters.set(id, (us) => {
          clearTimeout(timer);
          resolve(us);
        });
        proc.send({ type: 'cpu', id });
      }),
    async stop() {
      if (proc.connected) proc.send({ type: 'stop' });
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited(proc);
      clearTimeout(timer);
    },
  };
}

interface Target {
  path: string;
  headers: Record<string, string>;
}

interface Measurement {
  round: number;
  kind: ServerKind;
  conns: number;
  load: LoadResult;
  serverUsPerReq: number;
  natsUsPerReq: number;
  foreignCores: number;
  /** Jobs in the stream after the run vs 202s sent over the whole run (reference / gateway). */
  stored?: { messages: number; accepted: number };
}

async function runLoad(server: ServerChild, target: Target, conns: number, body: string, nats: Pick<BenchNatsServer, 'cpuMicros'>): Promise<WindowResult> {
  const spec: LoadSpec = { host: '127.0.0.1', port: server.port, path: target.path, headers: target.headers, body, conns };
  const proc = spawnNode(SIDE_CPU, [LOAD_JS, JSON.stringify(spec)], process.env, 'inherit');
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-10_000);
  });
  const result = new Promise<LoadResult>((resolve, reject) => {
    proc.on('message', (m: { type: string } & LoadResult) => {
      if (m.type === 'result') resolve(m);
    });
    proc.once('exit', (code) => reject(new Error(`load generator exited with ${code}: ${stderr}`)));
  });
  result.catch(() => undefined);
  await sleep(WARMUP_MS);
  const t0 = performance.now();
  const machine0 = machineBusyMicros();
  const load0 = procCpuMicros(proc.pid!);
  const nats0 = nats.cpuMicros();
  proc.send({ type: 'mark' });
  const server0 = await server.cpu();
  await sleep(MEASURE_MS);
  proc.send({ type: 'stop' });
  const server1 = await server.cpu();
  const nats1 = nats.cpuMicros();
  const load1 = procCpuMicros(proc.pid!);
  const machine1 = machineBusyMicros();
  const wallUs = (performance.now() - t0) * 1000;
  const load = await result;
  await exited(proc);
  const serverUs = server1 - server0;
  const foreignCores = (machine1 - machine0 - serverUs - (nats1 - nats0) - (load1 - load0)) / wallUs;
  return {
    load,
    serverUsPerReq: serverUs / Math.max(1, load.accepted),
    natsUsPerReq: (nats1 - nats0) / Math.max(1, load.accepted),
    foreignCores: Math.max(0, foreignCores),
  };
}

// ---------------------------------------------------------------------------------- streams and setup

async function freshRefStream(jsm: JetStreamManager): Promise<void> {
  await jsm.streams.delete(REF_STREAM).catch(() => undefined);
  await jsm.streams.add({
    name: REF_STREAM,
    subjects: ['bench.ref.>'],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_msgs: -1,
    max_bytes: -1,
    max_msg_size: MAX_PAYLOAD,
    num_replicas: 1,
  });
}

async function purgeGatewayStreams(jsm: JetStreamManager): Promise<void> {
  // JOBS: what the gateway publishes; KV_ldbox-executions: the `queued` record it writes per request.
  for (const s of ['JOBS', 'KV_ldbox-executions']) await jsm.streams.purge(s).catch(() => undefined);
}

async function streamMessages(jsm: JetStreamManager, name: string): Promise<number> {
  return (await jsm.streams.info(name)).state.messages;
}

async function createWorkflow(port: number): Promise<{ id: string; secret: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/ldbox.workflows.v1.WorkflowService/CreateWorkflow`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({
      name: 'bench',
      workspace: 'bench',
      nodes: [{ id: 'a', code: 'return data.input', input: { x: '{{trigger.output.body.x}}' } }],
      webhook: { authMethod: 'AUTH_METHOD_HEADER' },
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`CreateWorkflow answered ${res.status}: ${text}`);
  const wf = (JSON.parse(text) as { workflow: { id: string; webhook: { secret: string } } }).workflow;
  if (!wf?.id || !wf.webhook?.secret) throw new Error(`CreateWorkflow: no id or secret in ${text}`);
  return { id: wf.id, secret: wf.webhook.secret };
}

/** One request through the target: it must be a 202 before any load is put on. */
async function probe(port: number, target: Target, body: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}${target.path}`, { method: 'POST', headers: target.headers, body });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`probe answered ${res.status}: ${text}`);
}

// ------------------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  process.on('unhandledRejection', (err) => {
    console.error('bench: unhandled rejection', err);
    process.exitCode = 1;
  });
  const body = makeBody(BODY_BYTES);
  console.log(
    `bench:webhook — node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? '?'}), ` +
      `${ROUNDS} round(s) of ${KINDS.join(' → ')}, conns ${CONNS.join(' and ')}, warm-up ${WARMUP_MS / 1000} s + ${MEASURE_MS / 1000} s measured, ` +
      `body ${Buffer.byteLength(body)} B, ${PIN ? `pinned (server CPU ${SERVER_CPU}; nats-server + load generator CPU ${SIDE_CPU})` : 'not pinned'}`,
  );
  const nats = await startBenchNats({ maxPayload: MAX_PAYLOAD, wrap: onCpu(SIDE_CPU) });
  let nc: NatsConnection | undefined;
  const measurements: Measurement[] = [];
  try {
    nc = await connect({ servers: nats.url, name: 'bench-webhook' });
    const jsm = await jetstreamManager(nc);
    console.log(`nats-server ${nc.info?.version ?? '?'} at ${nats.url} (pid ${nats.pid}), max_payload ${nc.info?.max_payload}`);

    const wfId = `wf_${'0123456789abcdefghjk'}`;
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const minimalTarget: Target = {
      path: `/api/hooks/workflows/${wfId}`,
      headers: { 'content-type': 'application/json', 'x-webhook-secret': secret },
    };

    for (let round = 1; round <= (E2E_ONLY || REPLICAS_ONLY ? 0 : ROUNDS); round++) {
      for (const kind of KINDS) {
        const env: NodeJS.ProcessEnv =
          kind === 'gateway' ? { ...GATEWAY_ENV, NATS_URL: nats.url } : { NATS_URL: nats.url, BENCH_SECRET: secret, BENCH_REF_SUBJECT: `bench.ref.${wfId}` };
        if (kind === 'reference') await freshRefStream(jsm);
        const server = await startServer(kind, env);
        try {
          let target = minimalTarget;
          if (kind === 'gateway') {
            const wf = await createWorkflow(server.port);
            target = { path: `/api/hooks/workflows/${wf.id}`, headers: { 'content-type': 'application/json', 'x-webhook-secret': wf.secret } };
          }
          await probe(server.port, target, body);
          for (const conns of CONNS) {
            if (kind === 'reference') await freshRefStream(jsm);
            if (kind === 'gateway') await purgeGatewayStreams(jsm);
            const r = await runLoad(server, target, conns, body, nats);
            const m: Measurement = { round, kind, conns, ...r };
            if (kind !== 'bare') {
              await sleep(200); // acks in flight at the stop
              m.stored = { messages: await streamMessages(jsm, kind === 'gateway' ? 'JOBS' : REF_STREAM), accepted: r.load.acceptedTotal };
            }
            measurements.push(m);
            printLine(m);
          }
        } finally {
          await server.stop();
        }
      }
    }
    await purgeGatewayStreams(jsm);
    await jsm.streams.delete(REF_STREAM).catch(() => undefined);

    if (!E2E_ONLY && !REPLICAS_ONLY) report(measurements);

    // ---- PART 2 EXTENSION POINT: webhook → succeeded-execution latency (bench/lib/webhook-e2e.ts).
    const e2eProf = E2E_PROF.length > 0 && !REPLICAS_ONLY ? mkdtempSync(join(tmpdir(), 'ldbox-bench-e2e-prof-')) : undefined;
    const e2e = REPLICAS_ONLY
      ? null
      : await measureEndToEnd(nats.url, {
          natsPid: nats.pid,
          profile: E2E_PROF,
          profileDir: e2eProf,
          sequential: E2E_N,
          burst: E2E_M,
          warmupBurst: E2E_WARMUP,
          conns: E2E_CONNS,
          timeoutMs: E2E_TIMEOUT_MS,
          log: (line) => console.error(line),
        });
    if (e2e === undefined) {
      console.log('\npart 2 (webhook → succeeded execution, end to end): not measured (see bench/lib/webhook-e2e.ts)');
    } else if (e2e !== null) {
      printEndToEnd(e2e);
    }

    // ---- Part 3: R3 vs R1 ingest cost on a 3-node cluster (bench/lib/webhook-replicas.ts).
    let replicas: ReplicaCostResult | null = null;
    if (!E2E_ONLY) {
      console.log(
        `\n==== part 3: R3 vs R1 ingest — the gateway (as part 1) against a 3-node nats-server cluster on loopback, its JOBS stream and KV buckets ` +
          `with 1 or 3 replicas (LDBOX_JOBS_REPLICAS; streams recreated for each); c=${R_CONNS}, ${R_ROUNDS} round(s) of ${REPLICA_COUNTS.map((r) => `R${r}`).join(' → ')}, ` +
          `warm-up ${WARMUP_MS / 1000} s + ${MEASURE_MS / 1000} s measured; ` +
          `${PIN ? `pinned (gateway CPU ${SERVER_CPU}; the 3 nats-servers + load generator CPU ${SIDE_CPU})` : 'not pinned'}; ` +
          `${R_PLACEMENT === 'leader' ? 'the gateway connected to the JOBS leader (restarted until the seed list put it there)' : 'the gateway connected wherever the seed list put it'}; ` +
          'nothing consumes the jobs ====',
      );
      replicas = await measureReplicaCost({
        rounds: R_ROUNDS,
        conns: R_CONNS,
        maxPayload: MAX_PAYLOAD,
        wrapNats: onCpu(SIDE_CPU),
        gatewayEnv: GATEWAY_ENV,
        gatewayOnLeader: R_PLACEMENT === 'leader',
        startGateway: (env) => startServer('gateway', env),
        prepare: async (server) => {
          const wf = await createWorkflow(server.port);
          const target: Target = { path: `/api/hooks/workflows/${wf.id}`, headers: { 'content-type': 'application/json', 'x-webhook-secret': wf.secret } };
          await probe(server.port, target, body);
          return target;
        },
        measure: (server, target, conns, clusterCpu) => runLoad(server, target, conns, body, clusterCpu),
        onMeasurement: printReplicaLine,
      });
      printReplicas(replicas);
    }
    console.log(`BENCH_JSON ${JSON.stringify(toJson(measurements, e2e ?? null, replicas && replicasJson(replicas)))}`);
    if (profDir) console.log(`\nCPU profiles (${PROF}): ${profDir}`);
    if (e2eProf) console.log(`\nCPU profiles of part 2 (${E2E_PROF.join(', ')}): ${e2eProf}`);
  } finally {
    await nc?.close().catch(() => undefined);
    await nats.stop();
  }
}

function printEndToEnd(e: EndToEndResult): void {
  const s = e.settings;
  console.log(
    `\n==== part 2: webhook POST → execution \`succeeded\` (record timestamps: when nats-server stored the \`succeeded\` record), gateway + runner + executor in 3 processes, not pinned; ` +
      `one-node workflow; runner pool ${s.poolSize}, executor concurrency ${s.executorConcurrency}; warm-up not counted: ${s.warmup} webhooks one at a time + a burst of ${s.warmupBurst} ====`,
  );
  const head = ['phase', 'sent', 'succeeded', 'failed', 'exec/s', 'p50 ms', 'p99 ms', 'max ms', 'POST→202 p50', '202→running p50', 'running→succeeded p50'];
  const row = (name: string, p: EndToEndPhase) => [
    name,
    String(p.sent),
    String(p.executions),
    p.failed ? `${p.failed} !` : '0',
    fmt(p.perSec, 0),
    fmt(p.p50Ms, 2),
    fmt(p.p99Ms, 2),
    fmt(p.maxMs, 2),
    fmt(p.stagesP50Ms.accept, 2),
    fmt(p.stagesP50Ms.queue, 2),
    fmt(p.stagesP50Ms.run, 2),
  ];
  const table = [row('(a) sequential, 1 at a time', e.unloaded), row(`(b) burst on ${e.loaded.conns} conns`, e.loaded)];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const t of table) console.log(line(t));
  console.log(
    `(a) exec/s is 1 / round trip; (b) exec/s = succeeded / (first POST → last succeeded); (b)'s latency is mostly queueing in JOBS, ` +
      `since the gateway accepts faster than one executor runs. (a)'s stages are as its KV watch saw the records ` +
      `(p50 POST → \`succeeded\` seen: ${fmt(e.unloaded.p50SeenMs, 2)} ms); (b)'s \`running\` time, and (a)'s for a run too short to have a \`running\` write, is the record's startedAt (ms). ` +
      `Stage p50s are over executions whose \`running\` time is known ` +
      `(a: ${e.unloaded.runningSeen}/${e.unloaded.executions}, b: ${e.loaded.runningSeen}/${e.loaded.executions}); p99 of the stages: ` +
      `a ${fmt(e.unloaded.stagesP99Ms.accept, 2)} / ${fmt(e.unloaded.stagesP99Ms.queue, 2)} / ${fmt(e.unloaded.stagesP99Ms.run, 2)} ms, ` +
      `b ${fmt(e.loaded.stagesP99Ms.accept, 2)} / ${fmt(e.loaded.stagesP99Ms.queue, 2)} / ${fmt(e.loaded.stagesP99Ms.run, 2)} ms.`,
  );
  const cpuRow = (p: EndToEndPhase) =>
    Object.entries(p.cpuUsPerExec)
      .map(([k, us]) => `${k} ${fmt(us, 0)}`)
      .join(', ');
  const total = (p: EndToEndPhase) => Object.values(p.cpuUsPerExec).reduce((a, b) => a + b, 0);
  console.log(`CPU per execution, µs (/proc): (a) ${cpuRow(e.unloaded)} — total ${fmt(total(e.unloaded), 0)}`);
  console.log(`                               (b) ${cpuRow(e.loaded)} — total ${fmt(total(e.loaded), 0)}`);
  const met = (ok: boolean) => (ok ? 'met' : 'NOT MET');
  const burstOk = e.loaded.failed === 0 && e.loaded.perSec >= GOAL_BURST_PER_S;
  const p50Ok = e.unloaded.failed === 0 && e.unloaded.p50Ms <= GOAL_SINGLE_P50_MS;
  console.log(
    `GOAL burst of ${e.loaded.sent} webhooks to one workflow, first POST → last succeeded: ${fmt(e.loaded.perSec, 0)} executions/s ` +
      `(target ≥ ${GOAL_BURST_PER_S}): ${met(burstOk)}`,
  );
  console.log(`GOAL single webhook → succeeded, p50 (record timestamps): ${fmt(e.unloaded.p50Ms, 2)} ms (target ≤ ${GOAL_SINGLE_P50_MS} ms): ${met(p50Ok)}`);
  console.log(
    `noise: load average (1 min) ${fmt(e.loadAvg1.before, 2)} before, ${fmt(e.loadAvg1.after, 2)} after, on ${availableParallelism()} cores; ` +
      'this machine is shared and small: run it a few times and report the range.',
  );
  if (e.unloaded.p50Ms > e.unloaded.p50SeenMs)
    console.log(
      'WARNING: part 2 (a): the p50 by record timestamp is later than the watch saw the records: the clock offset ' +
        'between this process and nats-server was misread, so the record-timestamp figures are wrong',
    );
  for (const [name, p] of [
    ['(a)', e.unloaded],
    ['(b)', e.loaded],
  ] as const) {
    if (p.failed)
      console.log(
        `WARNING: part 2 ${name}: ${p.failed} of ${p.sent} webhooks did not reach \`succeeded\` within ${s.timeoutMs / 1000} s; first: ${p.firstFailure}`,
      );
  }
}

function printReplicaLine(m: ReplicaMeasurement): void {
  const l = m.load;
  const errs = errorsOf(l);
  const missing = m.stored.messages < m.stored.accepted ? ' MISSING JOBS' : '';
  const followers = m.jobs.followers.map((f) => `${f.name}${f.current ? '' : ' (behind)'}`).join(', ');
  console.log(
    `  round ${m.round} R${m.replicas} c=${String(m.conns).padStart(3)}: ${kfmt(l.acceptedPerSec)}/s 202, p50 ${fmt(l.p50Ms, 2)} ms, p99 ${fmt(l.p99Ms, 2)} ms, ` +
      `gateway ${fmt(m.serverUsPerReq)} µs/webhook, nats-servers ${fmt(m.natsUsPerReq)} µs/webhook, load gen ${fmt(l.loadCpuUsPerReq)} µs/req, ` +
      // Pinned, these two share one core: near 1.0 it, not the gateway, sets the rate.
      `nats-servers + load gen ${fmt((l.acceptedPerSec * (m.natsUsPerReq + l.loadCpuUsPerReq)) / 1e6, 2)} cores, ` +
      `foreign ${fmt(m.foreignCores, 2)} cores, stored ${m.stored.messages}/${m.stored.accepted}${missing}, ` +
      `JOBS num_replicas ${m.jobs.numReplicas}, leader ${m.jobs.leader}${followers ? `, followers ${followers}` : ''}; ` +
      `gateway connected to ${m.gatewayNodes.join(', ') || '?'}${m.gatewayNodes.includes(m.jobs.leader) ? ' (the leader)' : ' (publishes routed)'}` +
      (errs ? `; ${errs} ERRORS (${JSON.stringify(l.otherStatus)}, socket ${l.socketErrors}; first: ${l.firstError})` : ''),
  );
}

/** Medians over rounds of one replica count. */
function replicaMedians(ms: ReplicaMeasurement[]) {
  return {
    perSec: median(ms.map((m) => m.load.acceptedPerSec)),
    p50: median(ms.map((m) => m.load.p50Ms)),
    p99: median(ms.map((m) => m.load.p99Ms)),
    gatewayUs: median(ms.map((m) => m.serverUsPerReq)),
    natsUs: median(ms.map((m) => m.natsUsPerReq)),
    errors: ms.reduce((a, m) => a + errorsOf(m.load), 0),
    missingJobs: ms.reduce((a, m) => a + Math.max(0, m.stored.accepted - m.stored.messages), 0),
    disturbed: ms.filter((m) => m.foreignCores > FOREIGN_WARN_CORES).length,
  };
}

function printReplicas(r: ReplicaCostResult): void {
  const head = ['replicas', 'accepted/s', 'p50 ms', 'p99 ms', 'gateway µs/webhook', 'nats-servers µs/webhook', 'errors'];
  const rows = REPLICA_COUNTS.map((n) => ({ n, ...replicaMedians(r.measurements.filter((m) => m.replicas === n)) }));
  const table = rows.map((x) => [`R${x.n}`, kfmt(x.perSec), fmt(x.p50, 2), fmt(x.p99, 2), fmt(x.gatewayUs), fmt(x.natsUs), x.errors ? `${x.errors} !` : '0']);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(
    `-- part 3 summary: nats-server ${r.natsVersion}, ${r.nodes} nodes; medians of ${R_ROUNDS} round(s); nats-servers = the ${r.nodes} nodes together`,
  );
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const t of table) console.log(line(t));
  const x = (xs: number[]) => `×${fmt(median(xs), 2)}`;
  const ratios = r.ratios;
  console.log(
    `R3 vs R1 ingest: rate ${x(ratios.map((q) => q.rate))}, p50 ${x(ratios.map((q) => q.p50))}, ` +
      `nats-server CPU per webhook ${x(ratios.map((q) => q.natsUs))} (p99 ${x(ratios.map((q) => q.p99))}, gateway CPU per webhook ${x(ratios.map((q) => q.gatewayUs))}; ` +
      `medians of the per-round ratios)`,
  );
  for (const q of ratios)
    console.log(
      `  round ${q.round}: rate ×${fmt(q.rate, 2)}, p50 ×${fmt(q.p50, 2)}, p99 ×${fmt(q.p99, 2)}, nats-server CPU per webhook ×${fmt(q.natsUs, 2)}, gateway CPU per webhook ×${fmt(q.gatewayUs, 2)}`,
    );
  for (const row of rows) {
    if (row.errors) console.log(`WARNING: part 3 R${row.n}: ${row.errors} non-202 answers or socket errors`);
    if (row.missingJobs) console.log(`WARNING: part 3 R${row.n}: ${row.missingJobs} answered 202 but not found in JOBS`);
    if (row.disturbed) console.log(`WARNING: part 3 R${row.n}: ${row.disturbed} measurement(s) had > ${FOREIGN_WARN_CORES} cores used by other processes`);
  }
}

function replicasJson(r: ReplicaCostResult): unknown {
  return {
    natsVersion: r.natsVersion,
    nodes: r.nodes,
    conns: R_CONNS,
    rounds: R_ROUNDS,
    placement: R_PLACEMENT,
    measurements: r.measurements.map((m) => ({
      round: m.round,
      replicas: m.replicas,
      acceptedPerSec: round(m.load.acceptedPerSec, 1),
      p50Ms: round(m.load.p50Ms, 3),
      p99Ms: round(m.load.p99Ms, 3),
      gatewayUsPerReq: round(m.serverUsPerReq, 1),
      natsUsPerReq: round(m.natsUsPerReq, 1),
      foreignCores: round(m.foreignCores, 3),
      errors: errorsOf(m.load),
      stored: m.stored,
      jobs: m.jobs,
      gatewayNodes: m.gatewayNodes,
    })),
    ratios: r.ratios.map((q) => ({
      round: q.round,
      rate: round(q.rate, 3),
      p50: round(q.p50, 3),
      p99: round(q.p99, 3),
      gatewayUs: round(q.gatewayUs, 3),
      natsUs: round(q.natsUs, 3),
    })),
    r3VsR1: {
      rate: round(median(r.ratios.map((q) => q.rate)), 3),
      p50: round(median(r.ratios.map((q) => q.p50)), 3),
      natsUs: round(median(r.ratios.map((q) => q.natsUs)), 3),
    },
  };
}

function errorsOf(l: LoadResult): number {
  return l.socketErrors + Object.values(l.otherStatus).reduce((a, b) => a + b, 0);
}

function printLine(m: Measurement): void {
  const l = m.load;
  const errs = errorsOf(l);
  const stored = m.stored ? `, stored ${m.stored.messages}/${m.stored.accepted}${m.stored.messages < m.stored.accepted ? ' MISSING JOBS' : ''}` : '';
  console.log(
    `  round ${m.round} ${m.kind.padEnd(9)} c=${String(m.conns).padStart(3)}: ${kfmt(l.acceptedPerSec)}/s 202, p50 ${fmt(l.p50Ms, 2)} ms, p99 ${fmt(l.p99Ms, 2)} ms, ` +
      `server ${fmt(m.serverUsPerReq)} µs/req, nats ${fmt(m.natsUsPerReq)} µs/req, load gen ${fmt(l.loadCpuUsPerReq)} µs/req, foreign ${fmt(m.foreignCores, 2)} cores${stored}` +
      (errs ? `; ${errs} ERRORS (${JSON.stringify(l.otherStatus)}, socket ${l.socketErrors}; first: ${l.firstError})` : ''),
  );
}

interface SummaryRow {
  kind: ServerKind;
  conns: number;
  perSec: number;
  p50: number;
  p99: number;
  serverUs: number;
  natsUs: number;
  vsRef: number[];
  vsBare: number[];
  errors: number;
  disturbed: number;
  missingJobs: number;
}

function summarize(ms: Measurement[]): SummaryRow[] {
  const rows: SummaryRow[] = [];
  for (const conns of CONNS) {
    for (const kind of KINDS) {
      const mine = ms.filter((m) => m.kind === kind && m.conns === conns);
      if (mine.length === 0) continue;
      const ratio = (other: ServerKind) =>
        mine
          .map((m) => {
            const o = ms.find((x) => x.kind === other && x.conns === conns && x.round === m.round);
            return o ? m.load.acceptedPerSec / o.load.acceptedPerSec : Number.NaN;
          })
          .filter((x) => Number.isFinite(x));
      rows.push({
        kind,
        conns,
        perSec: median(mine.map((m) => m.load.acceptedPerSec)),
        p50: median(mine.map((m) => m.load.p50Ms)),
        p99: median(mine.map((m) => m.load.p99Ms)),
        serverUs: median(mine.map((m) => m.serverUsPerReq)),
        natsUs: median(mine.map((m) => m.natsUsPerReq)),
        vsRef: ratio('reference'),
        vsBare: ratio('bare'),
        errors: mine.reduce((a, m) => a + errorsOf(m.load), 0),
        disturbed: mine.filter((m) => m.foreignCores > FOREIGN_WARN_CORES).length,
        missingJobs: mine.reduce((a, m) => a + (m.stored ? Math.max(0, m.stored.accepted - m.stored.messages) : 0), 0),
      });
    }
  }
  return rows;
}

function ratioText(xs: number[]): string {
  if (xs.length === 0) return '-';
  const s = [...xs].sort((a, b) => a - b);
  return xs.length === 1 ? `${fmt(s[0], 2)}×` : `${fmt(median(xs), 2)}× (${fmt(s[0], 2)}–${fmt(s[s.length - 1], 2)})`;
}

function report(ms: Measurement[]): void {
  const rows = summarize(ms);
  const head = ['server', 'conns', 'accepted/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'nats µs/req', 'ratio to reference', 'ratio to bare', 'errors'];
  const table = rows.map((r) => [
    LABEL[r.kind],
    String(r.conns),
    kfmt(r.perSec),
    fmt(r.p50, 2),
    fmt(r.p99, 2),
    fmt(r.serverUs),
    fmt(r.natsUs),
    r.kind === 'reference' ? '1.00' : ratioText(r.vsRef),
    r.kind === 'bare' ? '1.00' : ratioText(r.vsBare),
    r.errors ? `${r.errors} !` : '0',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(`\n==== bench:webhook summary (medians of ${ROUNDS} round(s); ratios are same-round, median (min–max)) ====`);
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const t of table) console.log(line(t));

  for (const r of rows) {
    if (r.errors) console.log(`WARNING: ${r.kind} c=${r.conns} had ${r.errors} non-202 answers or socket errors: that row is flagged`);
    if (r.missingJobs) console.log(`WARNING: ${r.kind} c=${r.conns}: ${r.missingJobs} answered 202 but not found in the stream`);
    if (r.disturbed) console.log(`WARNING: ${r.kind} c=${r.conns}: ${r.disturbed} measurement(s) had > ${FOREIGN_WARN_CORES} cores used by other processes`);
  }

  const gw = rows.filter((r) => r.kind === 'gateway');
  if (gw.length === 0 || !KINDS.includes('reference') || !KINDS.includes('bare')) {
    console.log('\ngoal: not evaluated (needs bare, reference and gateway in the run)');
    return;
  }
  const parts: string[] = [];
  let allMet = true;
  let anyErrors = false;
  for (const r of gw) {
    const vsRef = median(r.vsRef);
    const vsBare = median(r.vsBare);
    const met = vsRef >= GOAL_VS_REF && vsBare >= GOAL_VS_BARE;
    const errs = rows.filter((x) => x.conns === r.conns).some((x) => x.errors > 0 || x.missingJobs > 0);
    anyErrors ||= errs;
    allMet &&= met;
    parts.push(`c=${r.conns}: ${fmt(vsRef, 2)}× reference, ${fmt(vsBare, 2)}× bare → ${met ? 'MET' : 'NOT MET'}${errs ? ' (run had errors)' : ''}`);
  }
  // Cross-check that is less sensitive to other people's load: when a server is CPU-bound on its core,
  // accepted/s ∝ 1 / (CPU µs per request).
  const cpuParts = gw.map((r) => {
    const ref = rows.find((x) => x.kind === 'reference' && x.conns === r.conns);
    const bare = rows.find((x) => x.kind === 'bare' && x.conns === r.conns);
    return `c=${r.conns}: ${fmt(r.serverUs)} µs/req → ${fmt((ref?.serverUs ?? NaN) / r.serverUs, 2)}× reference, ${fmt((bare?.serverUs ?? NaN) / r.serverUs, 2)}× bare`;
  });
  console.log(`\nby CPU per accepted request (inverse ratio; a cross-check when the machine is busy): ${cpuParts.join('; ')}`);
  console.log(`\ngoal (gateway ≥ ${GOAL_VS_REF}× reference and ≥ ${GOAL_VS_BARE}× bare): ${parts.join('; ')}`);
  const disturbed = ms.filter((m) => m.foreignCores > FOREIGN_WARN_CORES).length;
  console.log(
    `goal ${allMet && !anyErrors ? 'MET' : allMet ? 'MET, BUT THE RUN HAD ERRORS' : 'NOT MET'}` +
      (disturbed > ms.length / 3
        ? ` (NOT CONCLUSIVE: other processes used > ${FOREIGN_WARN_CORES} cores in ${disturbed} of ${ms.length} measurements; re-run on a quiet machine)`
        : ''),
  );
}

function round(n: number, d: number): number | null {
  if (!Number.isFinite(n)) return null;
  const f = 10 ** d;
  return Math.round(n * f) / f;
}

function toJson(ms: Measurement[], e2e: unknown, replicas: unknown): unknown {
  return {
    node: process.version,
    cores: availableParallelism(),
    pinned: PIN,
    rounds: ROUNDS,
    warmupMs: WARMUP_MS,
    measureMs: MEASURE_MS,
    measurements: ms.map((m) => ({
      round: m.round,
      server: m.kind,
      conns: m.conns,
      acceptedPerSec: round(m.load.acceptedPerSec, 1),
      p50Ms: round(m.load.p50Ms, 3),
      p99Ms: round(m.load.p99Ms, 3),
      serverUsPerReq: round(m.serverUsPerReq, 1),
      natsUsPerReq: round(m.natsUsPerReq, 1),
      loadUsPerReq: round(m.load.loadCpuUsPerReq, 1),
      foreignCores: round(m.foreignCores, 3),
      errors: errorsOf(m.load),
      otherStatus: m.load.otherStatus,
      stored: m.stored ?? null,
    })),
    summary: summarize(ms).map((r) => ({
      server: r.kind,
      conns: r.conns,
      acceptedPerSec: round(r.perSec, 1),
      p50Ms: round(r.p50, 3),
      p99Ms: round(r.p99, 3),
      serverUsPerReq: round(r.serverUs, 1),
      vsReference: round(median(r.vsRef), 3),
      vsBare: round(median(r.vsBare), 3),
      errors: r.errors,
    })),
    endToEnd: e2e,
    replicas,
  };
}

main().then(
  () => setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref(),
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 2000).unref();
  },
);
