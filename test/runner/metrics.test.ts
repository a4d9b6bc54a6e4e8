/**
 * The runner's Prometheus metrics (runner/server/runner-metrics.ts), scraped over HTTP/1.1 as
 * Prometheus does: Execute outcomes and latency, the pool's state read at scrape time, process metrics.
 */
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { ErrorKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { grpcError, startInProcessRunner, type InProcessRunner } from '../helpers/runner-harness.js';

const OUTCOMES = ['ok', 'error', 'rejected', 'busy', 'cancelled', 'internal'] as const;

const runner = await startInProcessRunner();
t.teardown(() => runner.close());

interface Scrape {
  status: number;
  contentType: string | undefined;
  text: string;
}

/** GET /metrics over HTTP/1.1 on a fresh connection. */
function scrape(on: InProcessRunner, headers: http.OutgoingHttpHeaders = {}): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: on.server.port, path: '/metrics', agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], text }));
    });
    req.on('error', reject);
  });
}

/** The value of the sample `series` (name plus its label set exactly as exported), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Executions and histogram counts of every outcome. */
async function outcomes(on: InProcessRunner): Promise<Record<string, [total: number | undefined, count: number | undefined]>> {
  const { text } = await scrape(on);
  return Object.fromEntries(
    OUTCOMES.map((o) => [
      o,
      [sample(text, `ldbox_runner_executions_total{outcome="${o}"}`), sample(text, `ldbox_runner_execute_seconds_count{outcome="${o}"}`)],
    ]),
  );
}

/** Scrapes until `predicate` holds (up to `ms`); returns the last scrape's text. */
async function eventually(on: InProcessRunner, predicate: (text: string) => boolean, ms = 3000): Promise<string> {
  const until = performance.now() + ms;
  let { text } = await scrape(on);
  while (!predicate(text) && performance.now() < until) {
    await delay(20);
    ({ text } = await scrape(on));
  }
  return text;
}

const bumped = (before: Awaited<ReturnType<typeof outcomes>>, changes: Partial<Record<(typeof OUTCOMES)[number], number>>) =>
  Object.fromEntries(
    OUTCOMES.map((o) => {
      const [total, count] = before[o]!;
      const by = changes[o] ?? 0;
      return [o, [total! + by, count! + by]];
    }),
  );

t.test('GET /metrics over HTTP/1.1', async (t) => {
  const m = await scrape(runner);
  t.equal(m.status, 200);
  t.equal(m.contentType, 'text/plain; version=0.0.4; charset=utf-8', 'the Prometheus text format');
  for (const name of [
    'ldbox_runner_execute_seconds',
    'ldbox_runner_executions_total',
    'ldbox_runner_pool_workers',
    'ldbox_runner_pool_busy',
    'ldbox_runner_pool_queue_depth',
    'ldbox_runner_pool_utilization',
    'process_cpu_user_seconds_total',
    'nodejs_heap_size_used_bytes',
  ]) {
    t.match(m.text, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  t.match(m.text, /^ldbox_runner_execute_seconds_bucket\{le="0.001",outcome="ok"\} \d+$/m, 'the histogram has buckets by outcome');
  t.same(
    OUTCOMES.map((o) => typeof sample(m.text, `ldbox_runner_executions_total{outcome="${o}"}`)),
    OUTCOMES.map(() => 'number'),
    'every outcome is exported before it happens',
  );
  t.same(
    ['workers', 'busy', 'queue_depth', 'utilization'].map((g) => sample(m.text, `ldbox_runner_pool_${g}`)),
    [2, 0, 0, 0],
    'an idle pool of 2 workers',
  );
});

t.test('a successful and a throwing Execute count once each', async (t) => {
  const before = await outcomes(runner);
  const ok = await runner.grpc.execute({ code: 'return 1' });
  const thrown = await runner.grpc.execute({ code: 'throw new Error("boom")' });
  t.same([ok.error, thrown.error?.kind], [undefined, ErrorKind.THROWN], 'one result, one user-code error');
  t.same(await outcomes(runner), bumped(before, { ok: 1, error: 1 }), 'ok and error rose by exactly 1, the histogram counts too');
  const syntax = await runner.connect.execute({ code: 'return (' });
  t.equal(syntax.error?.kind, ErrorKind.SYNTAX);
  t.same(await outcomes(runner), bumped(before, { ok: 1, error: 2 }), 'a syntax error through Connect is an error too');
});

t.test('queue wait, sandbox memory and user error kinds, on both paths of the runner', async (t) => {
  const KINDS = ['thrown', 'syntax', 'timeout', 'memory-limit', 'invalid-result'];
  const read = async () => {
    const { text } = await scrape(runner);
    return {
      waits: sample(text, 'ldbox_runner_queue_wait_seconds_count'),
      memory: sample(text, 'ldbox_runner_sandbox_memory_bytes_count'),
      memorySum: sample(text, 'ldbox_runner_sandbox_memory_bytes_sum'),
      kinds: Object.fromEntries(KINDS.map((k) => [k, sample(text, `ldbox_runner_user_errors_total{kind="${k}"}`)])),
    };
  };
  const before = await read();
  t.same(
    KINDS.map((k) => typeof before.kinds[k]),
    KINDS.map(() => 'number'),
    'every error kind is exported before it happens',
  );
  // gRPC binary: the runner's own route (execute-route.ts); Connect JSON: connect-node (the interceptor).
  const answers = await Promise.all([
    runner.grpc.execute({ code: 'return 1' }),
    runner.grpc.execute({ code: 'throw new Error("boom")' }),
    runner.grpc.execute({ code: 'while (true) {}', limits: { timeoutMs: 100 } }),
    runner.connect.execute({ code: 'return (' }),
    runner.connect.execute({ code: 'throw new TypeError("x")' }),
  ]);
  t.same(
    answers.map((a) => a.error?.kind),
    [undefined, ErrorKind.THROWN, ErrorKind.TIMEOUT, ErrorKind.SYNTAX, ErrorKind.THROWN],
  );
  const after = await read();
  t.equal(after.waits! - before.waits!, 5, 'one queue wait per answered call');
  t.equal(after.memory! - before.memory!, 5, 'one memory sample per answered call');
  const memoryUsed = answers.reduce((sum, a) => sum + Number(a.stats?.memoryUsedBytes ?? 0), 0);
  t.ok(memoryUsed > 0, 'the calls report memory');
  t.equal(after.memorySum! - before.memorySum!, memoryUsed, "the memory samples are the responses' memoryUsedBytes");
  t.same(
    Object.fromEntries(KINDS.map((k) => [k, after.kinds[k]! - before.kinds[k]!])),
    { thrown: 2, syntax: 1, timeout: 1, 'memory-limit': 0, 'invalid-result': 0 },
    'errors counted by kind',
  );
  const { text } = await scrape(runner);
  t.match(text, /^# TYPE ldbox_runner_pool_workers_replaced_total counter$/m);
  t.equal(sample(text, 'ldbox_runner_pool_workers_replaced_total'), 0, 'no worker replaced');
});

t.test('refused, cancelled and busy calls', async (t) => {
  const before = await outcomes(runner);
  t.equal((await grpcError(runner.grpc.execute({ code: '' })))?.code, grpc.status.INVALID_ARGUMENT);
  t.same(await outcomes(runner), bumped(before, { rejected: 1 }), 'INVALID_ARGUMENT: rejected');

  const abort = new AbortController();
  const call = grpcError(runner.grpc.execute({ code: 'await ld.wait(10000);\nreturn 1' }, { signal: abort.signal }));
  const running = await eventually(runner, (text) => sample(text, 'ldbox_runner_pool_busy') === 1);
  t.same(
    ['busy', 'queue_depth', 'utilization'].map((g) => sample(running, `ldbox_runner_pool_${g}`)),
    [1, 0, 1 / 10_000],
    'one call running: 1 of the 10,000 the runner runs at once (2 workers x 5,000)',
  );
  abort.abort();
  t.equal((await call)?.code, grpc.status.CANCELLED);
  await eventually(runner, (text) => sample(text, 'ldbox_runner_executions_total{outcome="cancelled"}') === before.cancelled![0]! + 1);
  t.same(await outcomes(runner), bumped(before, { rejected: 1, cancelled: 1 }), 'CANCELLED: cancelled');

  const small = await startInProcessRunner({ LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_MAX_INFLIGHT: '1', LDBOX_POOL_MAX_QUEUE: '1' });
  t.teardown(() => small.close());
  const long = (n: number) => small.grpc.execute({ code: `await ld.wait(600);\nreturn ${n}` });
  const first = long(1);
  await eventually(small, (text) => sample(text, 'ldbox_runner_pool_busy') === 1);
  const second = long(2);
  const full = await eventually(small, (text) => sample(text, 'ldbox_runner_pool_queue_depth') === 1);
  t.same(
    ['workers', 'busy', 'queue_depth', 'utilization'].map((g) => sample(full, `ldbox_runner_pool_${g}`)),
    [1, 1, 1, 1],
    'one running, one waiting, every slot in use',
  );
  t.equal((await grpcError(small.grpc.execute({ code: 'return 3' })))?.code, grpc.status.RESOURCE_EXHAUSTED);
  await Promise.all([first, second]);
  const s = await outcomes(small);
  t.same(
    [s.busy, s.ok],
    [
      [1, 1],
      [2, 2],
    ],
    'RESOURCE_EXHAUSTED: busy; the two accepted calls: ok',
  );
});

t.test('with LDBOX_RUNNER_TOKEN: /metrics stays open, refused calls count as rejected', async (t) => {
  const guarded = await startInProcessRunner({ LDBOX_RUNNER_TOKEN: 'x'.repeat(32) });
  t.teardown(() => guarded.close());
  const m = await scrape(guarded);
  t.equal(m.status, 200, 'no token needed to scrape');
  const before = await outcomes(guarded);
  t.equal((await grpcError(guarded.grpc.execute({ code: 'return 1' })))?.code, grpc.status.UNAUTHENTICATED);
  t.same(await outcomes(guarded), bumped(before, { rejected: 1 }), 'UNAUTHENTICATED: rejected');
});

t.test('each runner has its own registry', async (t) => {
  const other = await startInProcessRunner();
  t.teardown(() => other.close());
  t.not(other.server.metrics, runner.server.metrics);
  const fresh = await outcomes(other);
  t.same(fresh, Object.fromEntries(OUTCOMES.map((o) => [o, [0, 0]])), "another runner's calls are not counted here");
});
