/**
 * Calls that wait for host work park (runner/sandbox/snapshot-realm.ts): they let go of their sandbox,
 * so a runner holds far more calls in flight than it has sandboxes, and each resumes with exactly its
 * own memory. A local API holds every request until the test lets it answer, so "waiting" is a
 * condition, never a duration.
 *
 * Covered: a trivial call is answered while many more calls than sandboxes wait; every waiting call gets
 * its own answer back; guest state (globals, closures, large strings) survives park and resume and
 * never crosses to another call, with calls of two callers interleaved on one worker's module;
 * `stats.memoryUsedBytes` describes the call alone; a parked call that times out or is cancelled ends
 * without being resumed, and the others go on.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind, type ExecuteResponse } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startInProcessRunner } from '../helpers/runner-harness.js';

/** How long a condition may take before the test fails (a loaded machine is slow, never this slow). */
const PATIENCE_MS = 30_000;

async function eventually(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + PATIENCE_MS;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** An API that holds each request until `release()` and then answers with the request's path. */
async function holdingApi(): Promise<{
  url: string;
  held: () => number;
  heldPaths: () => string[];
  hits: () => number;
  release: () => void;
  close: () => Promise<void>;
}> {
  let holding: (() => void)[] = [];
  const paths: string[] = [];
  let released = false;
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    const answer = () => res.end(JSON.stringify({ path: req.url }));
    if (released) answer();
    else {
      holding.push(answer);
      paths.push(req.url ?? '');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => holding.length,
    heldPaths: () => paths,
    hits: () => hits,
    release: () => {
      released = true;
      const all = holding;
      holding = [];
      for (const answer of all) answer();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A runner allowed to reach a holding API, both stopped at the end of the test (held requests released first). */
async function runnerWithApi(t: Test, env: Record<string, string>) {
  const runner = await startInProcessRunner({ LDBOX_EGRESS_ALLOW: '127.0.0.1', ...env });
  const api = await holdingApi();
  t.teardown(async () => {
    api.release();
    await api.close();
    await runner.close();
  });
  return { runner, api };
}

const resultOf = (res: ExecuteResponse): unknown => (res.error ? { error: res.error.message } : res.result && toJson(ValueSchema, res.result));

t.test('waiting calls free their sandboxes: a trivial call is answered while 400 calls wait', async (t) => {
  // Two workers; LDBOX_POOL_CONCURRENCY=2 used to mean 4 calls in flight in all.
  const { runner, api } = await runnerWithApi(t, { LDBOX_POOL_CONCURRENCY: '2', LDBOX_MAX_STREAMS_PER_CONNECTION: '1000' });
  const N = 400;
  const code = `
    const mine = 'call-' + data.input.i;
    const r = await ld.request({ method: 'GET', url: ${JSON.stringify(api.url)} + '/' + data.input.i });
    return { mine, path: r.json.path };
  `;
  const waiting = Array.from({ length: N }, (_, i) => runner.grpc.execute({ code, input: { i } }));
  await eventually(() => api.held() === N, `${N} requests held by the API`);
  const trivial = await runner.grpc.execute({ code: 'return 1 + 1' });
  t.same(resultOf(trivial), 2, 'the trivial call was answered while every waiting call still waits');
  t.equal(api.held(), N, 'none of the waiting calls had been answered');
  api.release();
  const answers = await Promise.all(waiting);
  const wrong = answers.map(resultOf).filter((r, i) => JSON.stringify(r) !== JSON.stringify({ mine: `call-${i}`, path: `/${i}` }));
  t.same(wrong, [], 'every waiting call got its own answer and its own memory back');
  t.equal(api.hits(), N, 'each call made its request once');
});

t.test('guest state survives park and resume and never crosses to another call', async (t) => {
  // One worker: every call of this test shares one module, so each resume follows another call's run.
  const { runner, api } = await runnerWithApi(t, { LDBOX_POOL_SIZE: '1' });
  // Each call leaves markers everywhere it can (the global `data` (user code cannot add globals), a closure, a large string, an object graph),
  // parks three times, and checks after each resume that its markers are its own and no other's are seen.
  const code = `
    const tenant = data.input.tenant;
    const i = data.input.i;
    const before = typeof data.marker === 'undefined' ? 'none' : data.marker;
    data.marker = tenant + ':' + i;
    const big = (tenant + i + '|').repeat(20000);
    const graph = Array.from({ length: 500 }, (_, k) => ({ k, tenant, i }));
    const counter = (() => { let n = 0; return () => ++n; })();
    const seen = [];
    for (let round = 0; round < 3; round++) {
      const r = await ld.request({ method: 'GET', url: ${JSON.stringify(api.url)} + '/' + tenant + '/' + i + '/' + round });
      seen.push([
        data.marker,
        big.length, big.slice(0, 12), big.slice(-12),
        graph.every((g, k) => g.k === k && g.tenant === tenant && g.i === i),
        counter(),
        r.json.path,
      ]);
    }
    return { before, seen };
  `;
  const calls: { tenant: string; i: number }[] = [];
  for (let i = 0; i < 20; i++) calls.push({ tenant: 'alpha', i }, { tenant: 'beta', i });
  const pending = calls.map((input) => runner.grpc.execute({ code, input }));
  // The API answers as soon as each request comes: the calls of both tenants interleave on the module.
  api.release();
  const answers = await Promise.all(pending);
  const problems: unknown[] = [];
  answers.forEach((res, n) => {
    const { tenant, i } = calls[n]!;
    const unit = `${tenant}${i}|`;
    const big = unit.repeat(20000);
    const want = {
      before: 'none',
      seen: [0, 1, 2].map((round) => [`${tenant}:${i}`, big.length, big.slice(0, 12), big.slice(-12), true, round + 1, `/${tenant}/${i}/${round}`]),
    };
    const got = resultOf(res);
    if (JSON.stringify(got) !== JSON.stringify(want)) problems.push({ call: calls[n], got });
  });
  t.same(problems, [], 'each call saw only its own state across three parks, and started from a realm no call had touched');
});

t.test('stats.memoryUsedBytes describes the call alone', async (t) => {
  const runner = await startInProcessRunner({ LDBOX_POOL_SIZE: '1' });
  t.teardown(() => runner.close());
  const fresh = await runner.grpc.execute({ code: 'return 1' });
  const big = await runner.grpc.execute({ code: 'const a = new Uint8Array(12 * 1024 * 1024); a.fill(7); return a.length' });
  const after = await runner.grpc.execute({ code: 'return 1' });
  const used = (r: ExecuteResponse) => Number(r.stats?.memoryUsedBytes ?? 0);
  // Its heap starts above the 5 MiB C stack: 12 MiB of it ends past 17 MiB, above a fresh module's 16.
  t.ok(used(big) > 17 * 1024 * 1024 && used(big) > used(fresh), `the large call reports its own growth (${used(big)} against ${used(fresh)})`);
  t.equal(used(after), used(fresh), 'a call after it reports what a fresh call does, not the module its predecessor grew');
});

t.test('a parked call that times out or is cancelled ends without being resumed; the others go on', async (t) => {
  const { runner, api } = await runnerWithApi(t, { LDBOX_POOL_SIZE: '1' });
  const code = `const r = await ld.request({ method: 'GET', url: ${JSON.stringify(api.url)} + '/' + data.input.i }); return r.json.path;`;
  const slow = runner.grpc.execute({ code, input: { i: 'slow' }, limits: { timeoutMs: 300 } });
  const abort = new AbortController();
  const cancelled = runner.grpc.execute({ code, input: { i: 'cancelled' } }, { signal: abort.signal }).then(
    () => 'answered',
    (err: { code?: number }) => err.code,
  );
  const kept = runner.grpc.execute({ code, input: { i: 'kept' } });
  // The slow call times out whether or not its request got out first (on a loaded machine it may not).
  await eventually(() => api.heldPaths().includes('/cancelled') && api.heldPaths().includes('/kept'), 'the two other requests held');
  abort.abort();
  const timedOut = await slow;
  t.equal(timedOut.error?.kind, ErrorKind.TIMEOUT, 'the parked call timed out');
  t.equal(await cancelled, 1 /* CANCELLED */, 'the cancelled call ended');
  await eventually(() => runner.server.pool.status().busy === 1, 'the pool to let go of the cancelled call');
  t.same(resultOf(await runner.grpc.execute({ code: 'return 3' })), 3, 'the module serves new calls');
  api.release();
  t.same(resultOf(await kept), '/kept', 'the call still waiting was resumed with its own memory');
});
