/**
 * ld.request's limits through a real runner: the per-request `timeout`, the call's deadline (a
 * request never outlives its call), the response size cap (LDBOX_MAX_RESPONSE_BYTES, also on the
 * decoded size of a compressed body) and the per-call request count (LDBOX_MAX_REQUESTS_PER_CALL).
 * Each ends with a clear error and the sandbox still serving.
 */
import t from 'tap';
import { startTestRunner } from '../../helpers/runner-harness.js';
import { startEchoServer } from './echo-server.js';
import { CATCH, ErrorKind, runCode } from './run-code.js';

const LIMIT = 65536;
const runner = await startTestRunner({
  LDBOX_EGRESS_ALLOW: '127.0.0.1',
  LDBOX_POOL_SIZE: '1',
  LDBOX_MAX_RESPONSE_BYTES: String(LIMIT),
  LDBOX_MAX_REQUESTS_PER_CALL: '5',
});
const server = await startEchoServer();
t.teardown(async () => {
  await runner.close();
  await server.close();
});
const base = server.origin;
type Test = Parameters<Parameters<typeof t.test>[0]>[0];
// The first call also starts the worker: warm it so that timings measure the requests.
await runCode(runner, `return (await ld.request({ method: 'GET', url: data.input.base + '/echo' })).status`, { base });

async function stillServes(t: Test) {
  const o = await runCode(runner, `const r = await ld.request({ method: 'GET', url: data.input.base + '/echo' }); return r.json.method`, { base });
  t.same([o.result, o.error], ['GET', undefined], 'the sandbox still serves');
}

t.test('timeout: a request slower than its timeout fails with a clear error', async (t) => {
  const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: data.input.base + '/slow?ms=3000&key=hidden', timeout: 200 })`), { base });
  t.same(o.result, ['Error', `ld.request timed out after 200 ms (GET ${base}/slow)`, true]);
  t.ok(o.ms < 2000, `it gave up after the timeout, not after the server (${Math.round(o.ms)} ms)`);
  await t.resolves(
    waitFor(() => server.received.at(-1)?.aborted === true),
    'the server saw the request abandoned',
  );
  const ok = await runCode(runner, `const r = await ld.request({ method: 'GET', url: data.input.base + '/slow?ms=50', timeout: 2000 }); return r.json`, {
    base,
  });
  t.same(ok.result, { slow: true }, 'a request within its timeout succeeds');
  const zero = await runCode(runner, `const r = await ld.request({ method: 'GET', url: data.input.base + '/slow?ms=50', timeout: 0 }); return r.json`, {
    base,
  });
  t.same(zero.result, { slow: true }, 'timeout 0 means no timeout of its own');
  await stillServes(t);
});

t.test("a request never outlives the call's deadline", async (t) => {
  const o = await runCode(
    runner,
    `const r = await ld.request({ method: 'GET', url: data.input.base + '/slow?ms=5000', timeout: 60000 }); return r.status`,
    { base },
    { timeoutMs: 400 },
  );
  t.equal(o.error?.kind, ErrorKind.TIMEOUT, 'the call times out');
  t.ok(o.ms < 2500, `at its own deadline, not the request's (${Math.round(o.ms)} ms)`);
  await t.resolves(
    waitFor(() => server.received.at(-1)?.aborted === true),
    'the request was abandoned with the call',
  );
  await stillServes(t);
});

t.test('the response size cap', async (t) => {
  const tooLarge = `ld.request: the response body is larger than the limit of ${LIMIT} bytes`;
  const at = await runCode(runner, `const r = await ld.request({ method: 'GET', url: data.input.base + '/big?n=${LIMIT}' }); return r.text.length`, { base });
  t.equal(at.result, LIMIT, 'a body of exactly the limit is read');
  for (const path of [`/big?n=${LIMIT + 1}`, `/big-chunked?n=${LIMIT + 1}`, '/big-chunked?n=5000000', '/bomb']) {
    for (const rt of ['text', 'binary']) {
      const o = await runCode(runner, CATCH(`ld.request({ method: 'GET', url: data.input.base + '${path}', responseType: '${rt}' })`), { base });
      t.same(o.result, ['RangeError', tooLarge, true], `${path} (${rt})`);
    }
  }
  const gz = await runCode(runner, `const r = await ld.request({ method: 'GET', url: data.input.base + '/gzip' }); return r.json`, { base });
  t.same(gz.result, { zipped: true }, 'a small compressed body is fine');
  await stillServes(t);
});

t.test('the per-call request count cap', async (t) => {
  const o = await runCode(
    runner,
    `const done = [];
     for (let i = 0; i < 5; i++) done.push((await ld.request({ method: 'GET', url: data.input.base + '/echo?i=' + i })).status);
     let err;
     try { await ld.request({ method: 'GET', url: data.input.base + '/echo?i=5' }); } catch (e) { err = [e.name, e.message]; }
     return { done, err };`,
    { base },
  );
  t.same(o.result, { done: [200, 200, 200, 200, 200], err: ['RangeError', 'ld.request: this call reached its limit of 5 requests'] });
  t.notOk(
    server.received.some((r) => r.path === '/echo?i=5'),
    'the sixth request was not sent',
  );
  const parallel = await runCode(
    runner,
    `const all = await Promise.allSettled(Array.from({ length: 7 }, (_, i) => ld.request({ method: 'GET', url: data.input.base + '/echo?p=' + i })));
     return all.map((s) => s.status === 'fulfilled' ? s.value.status : s.reason.message);`,
    { base },
  );
  const limited = 'ld.request: this call reached its limit of 5 requests';
  t.same(parallel.result, [200, 200, 200, 200, 200, limited, limited], 'requests in parallel are counted too');
  await stillServes(t);
  const invalid = await runCode(
    runner,
    `for (let i = 0; i < 5; i++) await ld.request({ method: 'GET', url: 'not a url' }).catch(() => null);
     const out = [];
     for (let i = 0; i < 5; i++) out.push((await ld.request({ method: 'GET', url: data.input.base + '/echo' })).status);
     return out;`,
    { base },
  );
  t.same(invalid.result, [200, 200, 200, 200, 200], 'requests refused for their options are not counted');
});

async function waitFor(check: () => boolean, ms = 2000): Promise<void> {
  const until = performance.now() + ms;
  while (!check()) {
    if (performance.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
