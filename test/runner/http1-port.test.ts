/**
 * The runner's one port takes HTTP/1.1 and cleartext HTTP/2 (runner/server/dual-protocol-listener.ts):
 * plain HTTP clients (curl, Prometheus, fetch) reach /healthz, /readyz, /metrics and Connect JSON;
 * gRPC keeps working; a split preface, garbage, silence and resets are handled without harm.
 */
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import { type ExecuteResponse, ExecuteRequestSchema, ExecuteResponseSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { silentLogger } from '../../src/logging/logger.js';
import { HTTP2_PREFACE } from '../../runner/server/dual-protocol-listener.js';
import { startRunnerServer } from '../../runner/server/runner-server.js';
import { grpcError, startInProcessRunner, type InProcessRunner } from '../helpers/runner-harness.js';

const runner = await startInProcessRunner();
t.teardown(() => runner.close());

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const resultOf = (res: ExecuteResponse) => (res.result === undefined ? undefined : toJson(ValueSchema, res.result));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  httpVersion: string;
}

/** One HTTP/1.1 GET on a fresh connection (no agent: nothing kept alive past the test). */
function get(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, httpVersion: res.httpVersion }));
    });
    req.on('error', reject);
  });
}

/** Connects a raw socket, writes `parts` with a pause between them, and returns all it reads until close. */
async function raw(port: number, parts: (string | Buffer)[], pauseMs = 100): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await once(socket, 'connect');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (c: string) => (text += c));
  const closed = once(socket, 'close');
  for (const [i, part] of parts.entries()) {
    if (i > 0) await delay(pauseMs);
    socket.write(part);
  }
  await closed;
  return text;
}

/** A TCP proxy to `port` that splits the first chunk of each client connection after `splitAt` bytes. */
async function splittingProxy(t: Test, port: number, splitAt: number) {
  const seen: number[] = [];
  const proxy = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    upstream.setNoDelay(true);
    client.once('data', async (first: Buffer) => {
      client.pause();
      seen.push(first.length);
      upstream.write(first.subarray(0, splitAt));
      await delay(100);
      upstream.write(first.subarray(splitAt));
      client.pipe(upstream);
      client.resume();
    });
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  return { port: (proxy.address() as AddressInfo).port, seen };
}

/** Execute through a grpc-js client of its own to `port` (closed afterwards). */
function executeVia(port: number, code: string): Promise<ExecuteResponse> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise<ExecuteResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      '/ldbox.runner.v1.RunnerService/Execute',
      (m: ReturnType<typeof create<typeof ExecuteRequestSchema>>) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
      (b: Buffer) => fromBinary(ExecuteResponseSchema, b),
      create(ExecuteRequestSchema, { code }),
      (err, res) => (err ? reject(err) : resolve(res!)),
    );
  }).finally(() => client.close());
}

/** Serving still works: a gRPC call over HTTP/2 and a GET over HTTP/1.1. */
async function stillServes(t: Test, on: InProcessRunner = runner): Promise<void> {
  t.equal(resultOf(await on.grpc.execute({ code: 'return "alive"' })), 'alive', 'gRPC still works');
  t.equal((await get(on.server.port, '/healthz')).status, 200, 'HTTP/1.1 still works');
}

t.test('GET /healthz and /readyz over HTTP/1.1', async (t) => {
  const h = await get(runner.server.port, '/healthz');
  t.same([h.httpVersion, h.status, h.headers['content-type'], JSON.parse(h.body)], ['1.1', 200, 'application/json; charset=utf-8', { status: 'ok' }]);
  const r = await get(runner.server.port, '/readyz');
  t.same([r.status, JSON.parse(r.body)], [200, { status: 'ready' }]);
  const q = await get(runner.server.port, '/readyz?verbose=1');
  t.equal(q.status, 200, 'a query string does not change the route');
});

t.test('the same routes over HTTP/2', async (t) => {
  const session = http2.connect(runner.url);
  t.teardown(() => session.close());
  const ask = (path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = session.request({ ':path': path });
      let status = 0;
      let body = '';
      req.setEncoding('utf8');
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (c: string) => (body += c));
      req.on('end', () => resolve({ status, body }));
      req.on('error', reject);
    });
  t.same(await ask('/healthz'), { status: 200, body: '{"status":"ok"}' });
  t.same(await ask('/readyz'), { status: 200, body: '{"status":"ready"}' });
  const m = await ask('/metrics');
  t.equal(m.status, 200);
  t.match(m.body, /^# HELP ldbox_runner_execute_seconds /m);
});

t.test('Connect JSON Execute over HTTP/1.1 (fetch)', async (t) => {
  const res = await fetch(`${runner.url}/ldbox.runner.v1.RunnerService/Execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: 'return { sum: data.input.a + data.input.b }', input: { a: 2, b: 3 } }),
  });
  t.equal(res.status, 200);
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  t.same([body.result, body.error], [{ sum: 5 }, undefined], 'the result, no error');

  const bad = await fetch(`${runner.url}/ldbox.runner.v1.RunnerService/Execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: '' }),
  });
  t.same([bad.status, ((await bad.json()) as { code: string }).code], [400, 'invalid_argument'], 'a refusal in Connect form');
});

t.test('gRPC on the same port', async (t) => {
  t.equal(resultOf(await runner.grpc.execute({ code: 'return 6 * 7' })), 42, 'grpc-js');
  t.equal(resultOf(await runner.connectGrpc.execute({ code: 'return 43' })), 43, 'connect-node gRPC');
  t.equal(resultOf(await runner.connect.execute({ code: 'return 44' })), 44, 'Connect over HTTP/2');
});

t.test('garbage bytes get 400 and the server keeps serving', async (t) => {
  const answer = await raw(runner.server.port, ['GARBAGE \x00\x01\x02\r\n\r\n']);
  t.match(answer, /^HTTP\/1\.1 400 /, 'node:http answers 400 and closes');
  const binary = await raw(runner.server.port, [Buffer.from([0xff, 0x00, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a])]);
  t.match(binary, /^HTTP\/1\.1 400 /, 'binary garbage too');
  await stillServes(t);
});

t.test('an HTTP/2 preface split after 3 bytes', async (t) => {
  const proxy = await splittingProxy(t, runner.server.port, 3);
  const res = await executeVia(proxy.port, "return 'split'");
  t.equal(resultOf(res), 'split', 'grpc-js through the splitting proxy');
  t.ok(proxy.seen.length >= 1 && proxy.seen[0]! >= HTTP2_PREFACE.length, `the first chunk (${proxy.seen[0]} bytes) held the whole preface, so it was split`);
});

t.test('an HTTP/1.1 request whose first packet is a prefix of the preface', async (t) => {
  const body = JSON.stringify({ code: 'return "post"' });
  const answer = await raw(runner.server.port, [
    'P',
    `OST /ldbox.runner.v1.RunnerService/Execute HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  ]);
  t.match(answer, /^HTTP\/1\.1 200 /);
  t.match(answer, /"result":"post"/);
  const partedLate = await raw(runner.server.port, ['PRI * HTTP/2.0\r\n\r\nXY', 'Z']);
  t.match(partedLate, /^HTTP\/1\.1 400 /, 'bytes that part from the preface only at byte 19 still go to HTTP/1.1');
});

t.test('a reset mid-sniff does not crash the server', async (t) => {
  for (const first of ['', 'P', 'PRI * HTTP/2.0\r\n', 'GET /he']) {
    const socket = net.connect(runner.server.port, '127.0.0.1');
    await once(socket, 'connect');
    if (first) socket.write(first);
    await delay(20);
    socket.resetAndDestroy();
    await once(socket, 'close');
  }
  await stillServes(t);
});

t.test('a connection that stays silent is closed after the sniff timeout', async (t) => {
  const config = loadRunnerConfig({ LDBOX_RUNNER_PORT: '0', LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_WARMUP_CALLS: '0' });
  const server = await startRunnerServer(config, silentLogger(), { sniffTimeoutMs: 300 });
  t.teardown(() => server.close(2000));
  for (const [what, parts] of [
    ['nothing sent', []],
    ['half a preface sent', ['PRI * HT']],
  ] as const) {
    const socket = net.connect(server.port, '127.0.0.1');
    await once(socket, 'connect');
    for (const p of parts) socket.write(p);
    const started = performance.now();
    socket.resume();
    await once(socket, 'close');
    const took = performance.now() - started;
    t.ok(took >= 250 && took < 2000, `${what}: closed after ${Math.round(took)} ms`);
  }
  t.equal((await get(server.port, '/healthz')).status, 200, 'a prompt client is served');
});

t.test('/readyz turns 503 while the runner drains; running calls finish', async (t) => {
  const draining = await startInProcessRunner({ LDBOX_POOL_SIZE: '1' });
  const slow = draining.grpc.execute({ code: 'await ld.wait(800);\nreturn "finished"' });
  const until = performance.now() + 30_000;
  while ((await draining.grpc.getPoolStatus()).busy === 0 && performance.now() < until) await delay(10);
  t.equal((await get(draining.server.port, '/readyz')).status, 200, 'ready before close');
  const closed = draining.server.close(30_000);
  t.equal(draining.server.state, 'draining');
  t.equal(draining.server.close(), closed, 'close() is idempotent: the same promise');
  const r = await get(draining.server.port, '/readyz');
  t.same([r.status, JSON.parse(r.body)], [503, { status: 'not_ready' }], '503 while draining');
  const h = await get(draining.server.port, '/healthz');
  t.equal(h.status, 200, '/healthz stays 200: the process still serves');
  t.equal(h.headers.connection, 'close', 'a response while draining closes its connection');
  const refused = await grpcError(executeVia(draining.server.port, 'return 1'));
  t.equal(refused?.code, grpc.status.UNAVAILABLE, 'a new call: UNAVAILABLE (14)');
  t.equal(resultOf(await slow), 'finished', 'the running call finished');
  await closed;
  t.equal(draining.server.state, 'closed');
  draining.grpc.raw.close();
  const after = await new Promise<string>((resolve) => {
    const socket = net.connect(draining.server.port, '127.0.0.1');
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
  });
  t.equal(after, 'ECONNREFUSED', 'the port is closed once close() resolved');
});

t.test('destroy() does not wait for running calls: they end at once', async (t) => {
  const hard = await startInProcessRunner({ LDBOX_POOL_SIZE: '1' });
  const slow = grpcError(hard.grpc.execute({ code: 'await ld.wait(30000);\nreturn "finished"' }));
  const until = performance.now() + 3000;
  while ((await hard.grpc.getPoolStatus()).busy === 0 && performance.now() < until) await delay(10);
  const started = performance.now();
  await hard.server.destroy();
  t.equal(hard.server.state, 'closed');
  t.ok(performance.now() - started < 5000, 'stopped without waiting out the 30 s call or the 10 s grace');
  t.not((await slow)?.code, undefined, 'the running call failed');
  hard.grpc.raw.close();
});
