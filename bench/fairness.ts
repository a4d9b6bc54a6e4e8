/**
 * One tenant cannot stall the others: the latency of trivial calls while another tenant keeps returning
 * maximal results, beside the same trivial calls alone, against one runner (2 workers) in a child process.
 *
 *   npm run bench:fairness     (= npm run build && node dist/bench/fairness.js)
 *
 * Phases, each BENCH_SCALE × 8 s:
 *   quiet    trivial calls (`return n`), 4 in flight;
 *   hostile  the same, while one other client, one call at a time, returns the largest results the
 *            limits allow: 999,999 numbers (just under the 1M value limit), ~7.9 MB of strings (just
 *            under 8 MB), and 2.5M empty objects (refused by the value limit after the guest built them).
 * The goal: the trivial calls' p99 under 100 ms in the hostile phase. Clients are @grpc/grpc-js, in this
 * process; the runner's main thread and workers are the child's.
 */
import { spawn } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { type ExecuteRequest, ExecuteRequestSchema, type ExecuteResponse, ExecuteResponseSchema, RunnerService } from '../src/gen/ldbox/runner/v1/runner_pb.js';
import { anyFreePort } from '../src/net/local-ports.js';
import { Samples } from './lib/stats.js';

const SCALE = Number(process.env.BENCH_SCALE ?? '1') > 0 ? Number(process.env.BENCH_SCALE ?? '1') : 1;
const PHASE_MS = Math.round(8000 * SCALE);
const TRIVIAL_IN_FLIGHT = 4;
const GOAL_P99_MS = 100;

const HOSTILE = [
  { name: '999,999 numbers', code: 'return Array.from({ length: 999_999 }, (_, i) => i)' },
  { name: '~7.9 MB of strings', code: "return Array.from({ length: 7_900 }, () => 'x'.repeat(1_000))" },
  { name: '2.5M empty objects (refused)', code: 'return Array.from({ length: 2_500_000 }, () => ({}))' },
];

type Call = (req: MessageInitShape<typeof ExecuteRequestSchema>) => Promise<ExecuteResponse>;

function executeClient(port: number): { call: Call; close(): void } {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 << 20,
  });
  const call: Call = (req) =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(
        `/${RunnerService.typeName}/Execute`,
        (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
        // A large response is not decoded: that would block this process, which also times the trivial calls.
        (b: Buffer) => (b.length > 65_536 ? create(ExecuteResponseSchema, { requestId: `${b.length} bytes` }) : fromBinary(ExecuteResponseSchema, b)),
        create(ExecuteRequestSchema, req),
        new grpc.Metadata(),
        { deadline: Date.now() + 120_000 },
        (err, res) => (err ? reject(err) : resolve(res!)),
      );
    });
  return { call, close: () => client.close() };
}

async function trivialLoad(call: Call, until: number): Promise<{ latency: Samples; errors: number; firstError: string | undefined }> {
  const latency = new Samples();
  let errors = 0;
  let firstError: string | undefined;
  let n = 0;
  await Promise.all(
    Array.from({ length: TRIVIAL_IN_FLIGHT }, async () => {
      while (performance.now() < until) {
        const i = n++;
        const started = performance.now();
        const res = await call({ code: `return ${i}` }).catch((err: Error) => {
          firstError ??= err.message;
          return undefined;
        });
        latency.push(performance.now() - started);
        if (res?.result?.kind.value !== i) errors++;
      }
    }),
  );
  return { latency, errors, firstError };
}

async function hostileLoad(call: Call, until: number): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; performance.now() < until; i++) {
    const h = HOSTILE[i % HOSTILE.length]!;
    const started = performance.now();
    const res = await call({ code: h.code, limits: { timeoutMs: 60_000, memoryBytes: 1024n << 20n } }).catch(
      (err: Error) => ({ error: { message: err.message } }) as never as ExecuteResponse,
    );
    const took = (performance.now() - started).toFixed(0);
    if (i < HOSTILE.length) seen.push(`${h.name}: ${res.error ? `refused (${res.error.message.slice(0, 70)})` : `delivered (${res.requestId})`} in ${took} ms`);
  }
  return seen;
}

function row(label: string, r: { latency: Samples; errors: number; firstError?: string | undefined }): string {
  const f = (q: number) => r.latency.percentile(q).toFixed(1).padStart(7);
  return `${label.padEnd(9)} calls ${String(r.latency.count).padStart(6)}  p50 ${f(0.5)} ms  p90 ${f(0.9)} ms  p99 ${f(0.99)} ms  max ${f(1)} ms  wrong/failed ${r.errors}${r.firstError ? ` (first: ${r.firstError})` : ''}`;
}

async function main(): Promise<void> {
  const port = await anyFreePort();
  const runner = spawn(process.execPath, [new URL('../../bin/ldbox.js', import.meta.url).pathname, 'runner'], {
    env: { ...process.env, LDBOX_RUNNER_PORT: String(port), LDBOX_POOL_SIZE: '2', LDBOX_MAX_MEMORY_MB: '1024' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    const { call, close } = executeClient(port);
    for (;;) {
      const ok = await call({ code: 'return 1' }).then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (runner.exitCode !== null) throw new Error('the runner exited at start');
      await new Promise((r) => setTimeout(r, 100));
    }
    await trivialLoad(call, performance.now() + 1000); // warm up
    const quiet = await trivialLoad(call, performance.now() + PHASE_MS);
    const until = performance.now() + PHASE_MS;
    const [hostile, seen] = await Promise.all([trivialLoad(call, until), hostileLoad(call, until)]);
    close();
    console.log(`fairness: trivial calls (${TRIVIAL_IN_FLIGHT} in flight) on a runner with 2 workers, ${PHASE_MS} ms per phase`);
    console.log(row('quiet', quiet));
    console.log(row('hostile', hostile));
    for (const s of seen) console.log(`  hostile call ${s}`);
    const p99 = hostile.latency.percentile(0.99);
    console.log(
      `goal: p99 of trivial calls beside a hostile tenant < ${GOAL_P99_MS} ms: ${p99.toFixed(1)} ms (${(p99 / quiet.latency.percentile(0.99)).toFixed(1)}× quiet) — ${p99 < GOAL_P99_MS ? 'met' : 'NOT met'}`,
    );
  } finally {
    runner.kill();
  }
}

await main();
