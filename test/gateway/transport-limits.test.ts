/**
 * The gateway's port under hostile or slow clients, over real sockets and a real nats-server: the admin
 * token checked on the request head (a body that never ends still gets 401), Node's fetch seeing the 413
 * of an oversized webhook (not EPIPE), slow clients closed by their timeouts (set small via the
 * environment; each test waits for 'close'), and a client abort logged at info without a stack.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { pino } from 'pino';
import t from 'tap';
import { startGateway } from '../../gateway/index.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { startNatsServer } from '../helpers/nats-server.js';
import { waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, createWorkflow } from './harness.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

/** 1 MiB: the oversized bodies below are larger than what loopback socket buffers absorb, so a server that closes early makes fetch fail. */
const LIMIT = 1024 * 1024;

t.test('gateway transport limits', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.stop());
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  /** The settings both gateways of this file share; the first adds tiny timeouts for the slow-client cases. */
  const shared = {
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    NATS_URL: nats.url,
    LDBOX_WEBHOOK_RATE: '0',
    LDBOX_MAX_BODY_BYTES: String(LIMIT),
  };
  const config = loadGatewayConfig({
    ...shared,
    LDBOX_HEADERS_TIMEOUT_MS: '200',
    LDBOX_BODY_TIMEOUT_MS: '300',
    LDBOX_IDLE_TIMEOUT_MS: '200',
  });
  const gateway = await startGateway(config, pino({ level: 'info' }, sink), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50 } });
  t.teardown(() => gateway.close(2000));
  await waitFor(() => gateway.ready(), 15_000, 'ready');
  const base = `http://127.0.0.1:${gateway.port}`;
  const wf = await createWorkflow(base, { authMethod: 'AUTH_METHOD_NONE' });
  const hookPath = `/api/hooks/workflows/${wf.id}`;

  t.test('a gzip bomb without the admin token: 401 on the head, the body never read', async (t) => {
    // 60 MiB of JSON as ~60 KiB of gzip; only its first KiB is sent and the body never ends.
    const bomb = gzipSync(Buffer.from(`{"name":"${'a'.repeat(60 * 1024 * 1024)}"}`));
    const req = http.request(`${base}/ldbox.workflows.v1.WorkflowService/CreateWorkflow`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'transfer-encoding': 'chunked' },
    });
    req.on('error', () => {});
    req.write(bomb.subarray(0, 1024));
    const [res] = (await once(req, 'response')) as [http.IncomingMessage];
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (body += d));
    await once(res, 'end');
    t.equal(res.statusCode, 401);
    t.equal(JSON.parse(body).code, 'unauthenticated');
    req.destroy();
  });

  t.test("twenty whole gzip bombs without the admin token at once: each 401, the gateway's memory bounded", async (t) => {
    // Each 60 MiB of JSON as ~60 KiB of gzip (under the 64 KiB read before an unauthenticated connection
    // is closed). Decompressed and parsed before the token check, twenty took a gateway from 418 MB to 2 GB.
    const bomb = gzipSync(Buffer.alloc(60 * 1024 * 1024, 'a'));
    // The gateway runs in this process: its resident set is this process's.
    const before = process.memoryUsage().rss;
    let peak = before;
    const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
    const send = () =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(`${base}/ldbox.workflows.v1.WorkflowService/CreateWorkflow`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(bomb.length) },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            body += d;
            sample();
          });
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.end(bomb);
      });
    const answers = await Promise.all(Array.from({ length: 20 }, send));
    sample();
    t.same(
      answers.map((a) => [a.status, JSON.parse(a.body).code]),
      Array.from({ length: 20 }, () => [401, 'unauthenticated']),
      'each one: 401 unauthenticated',
    );
    t.ok(peak - before < 150 * 1024 * 1024, `RSS ${(before / 2 ** 20).toFixed(0)} MB → at most ${(peak / 2 ** 20).toFixed(0)} MB`);
    const health = await fetch(`${base}/healthz`);
    t.equal(health.status, 200, 'health answers');
  });

  t.test('fetch without the token: 401 with the Connect error', async (t) => {
    const r = await fetch(`${base}/ldbox.workflows.v1.WorkflowService/ListWorkflows`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ workspace: 'x'.repeat(100_000) }),
    });
    t.same([r.status, ((await r.json()) as { code: string }).code], [401, 'unauthenticated']);
  });

  t.test("Node's fetch sees the 413 of an oversized webhook, not EPIPE", async (t) => {
    // A gateway of its own with the default timeouts: sending 20 MiB takes longer than the tiny request
    // timeout above on a busy machine, and node would then answer 408 before the handler's 413.
    const roomy = await startGateway(loadGatewayConfig(shared), pino({ level: 'warn' }, sink));
    t.teardown(() => roomy.close(2000));
    await waitFor(() => roomy.ready(), 15_000, 'ready');
    const roomyBase = `http://127.0.0.1:${roomy.port}`;
    // 20 MiB, twenty times the limit: far more than socket buffers hold while the answer is on its way.
    const sized = await fetch(`${roomyBase}${hookPath}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"x":"${'a'.repeat(20 * LIMIT)}"}`,
    });
    t.equal(sized.status, 413, 'declared length over the limit');
    t.equal(((await sized.json()) as { error: { code: string } }).error.code, 'payload_too_large');
    const chunk = new TextEncoder().encode('a'.repeat(16 * 1024));
    let n = 0;
    const stream = new ReadableStream<Uint8Array>({
      // Paced by the event loop, so the server answers while the client is still sending.
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve));
        if (n++ === 0) controller.enqueue(new TextEncoder().encode('{"x":"'));
        else if (n < 20 * (LIMIT / chunk.length)) controller.enqueue(chunk);
        else {
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
        }
      },
    });
    const chunked = await fetch(`${roomyBase}${hookPath}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    t.equal(chunked.status, 413, 'a chunked body that passes the limit');
    await chunked.arrayBuffer();
  });

  t.test('a request head that never completes is closed', async (t) => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write('POST /api/hooks/workflows/x HTTP/1.1\r\nhost: gw\r\n');
    socket.resume();
    await once(socket, 'close');
    t.pass('closed');
  });

  t.test('a webhook body that stops after 1 of 1000 declared bytes is closed', async (t) => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write(`POST ${hookPath} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`);
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    await once(socket, 'close');
    t.match(answer, /^(HTTP\/1\.1 408|)/, 'closed (408 or nothing)');
  });

  t.test('an idle keep-alive connection is closed', async (t) => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write('GET /healthz HTTP/1.1\r\nhost: gw\r\n\r\n');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    await once(socket, 'close');
    t.match(answer, /^HTTP\/1\.1 200/, 'answered, then closed when idle');
  });

  t.test('a client that aborts a webhook body is logged at info, without a stack', async (t) => {
    const socket = net.connect(gateway.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write(`POST ${hookPath} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"x":`);
    const before = lines.length;
    // The reset lands while the handler reads the body.
    setImmediate(() => socket.resetAndDestroy());
    await waitFor(() => lines.some((l) => l.includes('aborted by the client')), 5000, 'abort logged');
    const line = JSON.parse(lines.find((l) => l.includes('aborted by the client'))!);
    t.equal(line.level, 30, 'info');
    t.notOk(JSON.stringify(line).includes('"stack"'), 'no stack');
    // (Lines before it include the start-up error that nats-server's max_payload is below 1 MiB + envelope.)
    t.notOk(
      lines.slice(before).some((l) => JSON.parse(l).level >= 50),
      'nothing at error level',
    );
  });
});
