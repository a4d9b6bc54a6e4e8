/**
 * Transport limits of the runner's port over real sockets (src/config/http-limits-config.ts): the HTTP/2
 * stream cap a flood without a token runs into, and each kind of slow or silent client closed by its
 * timeout. Timeouts are set small through the environment and each test waits for the socket's 'close'.
 */
import { once } from 'node:events';
import http2 from 'node:http2';
import net from 'node:net';
import t from 'tap';
import { RunnerService } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner } from '../helpers/runner-harness.js';
import { frameReader, grpcCallHeaders, h2frame } from '../helpers/http2-frames.js';

const TOKEN = 'transport-limits-token-0123';
const EXECUTE = `/${RunnerService.typeName}/Execute`;

const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const REFUSED_STREAM = 0x7;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;

t.test('an HTTP/2 stream flood without a token: streams beyond the cap are refused, health still answers', async (t) => {
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_RUNNER_TOKEN: TOKEN, LDBOX_MAX_STREAMS_PER_CONNECTION: '8' });
  t.teardown(() => runner.close());
  const streams = 40;
  const socket = net.connect(runner.process.port, '127.0.0.1');
  await once(socket, 'connect');
  const reader = frameReader(socket);
  const block = grpcCallHeaders(EXECUTE);
  const out = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), h2frame(SETTINGS, 0, 0, Buffer.alloc(0))];
  // END_HEADERS, no END_STREAM: each stream stays half-open, its body never sent.
  for (let i = 0; i < streams; i++) out.push(h2frame(HEADERS, 0x4, 1 + 2 * i, block));
  socket.write(Buffer.concat(out));
  const refused = (): number => reader.frames.filter((f) => f.type === RST_STREAM && f.payload.readUInt32BE(0) === REFUSED_STREAM).length;
  while (refused() < streams - 8 && !socket.destroyed) await once(socket, 'data');
  const settings = reader.frames.find((f) => f.type === SETTINGS && f.payload.length > 0)!;
  const values = new Map<number, number>();
  for (let i = 0; i + 6 <= settings.payload.length; i += 6) values.set(settings.payload.readUInt16BE(i), settings.payload.readUInt32BE(i + 2));
  t.equal(values.get(SETTINGS_MAX_CONCURRENT_STREAMS), 8, 'SETTINGS_MAX_CONCURRENT_STREAMS is the configured cap');
  t.equal(refused(), streams - 8, 'every stream beyond the cap: RST_STREAM REFUSED_STREAM');
  const health = await fetch(`${runner.url}/healthz`);
  t.equal(health.status, 200, 'a concurrent health check answers');
  socket.destroy();
});

t.test('slow and silent clients are closed by their timeouts', async (t) => {
  const runner = await startTestRunner({
    LDBOX_POOL_SIZE: '1',
    LDBOX_HEADERS_TIMEOUT_MS: '200',
    LDBOX_BODY_TIMEOUT_MS: '200',
    LDBOX_IDLE_TIMEOUT_MS: '200',
  });
  t.teardown(() => runner.close());
  const port = runner.process.port;

  t.test('a preface trickled one byte at a time: the deadline is not reset per byte', async (t) => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => {});
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
    let sent = 0;
    // 24 bytes, one per 50 ms: 1.2 s in all, six times the deadline.
    const timer = setInterval(() => {
      if (sent < preface.length && !socket.destroyed) socket.write(preface.subarray(sent, ++sent));
    }, 50);
    await once(socket, 'close');
    clearInterval(timer);
    t.ok(sent < preface.length, `closed after ${sent} of ${preface.length} bytes`);
  });

  t.test('HTTP/1.1 with an incomplete request head', async (t) => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => {});
    socket.write('GET /healthz HTTP/1.1\r\nhost: runner\r\n');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    await once(socket, 'close');
    t.match(answer, /^(HTTP\/1\.1 408|)/, 'closed (408 or nothing)');
  });

  t.test('HTTP/1.1 with a stalled body', async (t) => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => {});
    socket.write(`POST ${EXECUTE} HTTP/1.1\r\nhost: runner\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`);
    socket.resume();
    await once(socket, 'close');
    t.pass('closed');
  });

  t.test('an idle HTTP/2 session', async (t) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    await once(session, 'connect');
    const r = session.request({ ':path': '/healthz' });
    r.resume();
    await once(r, 'close');
    await once(session, 'close');
    t.pass('closed after its last stream');
  });

  t.test('an HTTP/2 stream with a stalled body is reset', async (t) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    t.teardown(() => session.destroy());
    const stream = session.request({ ':method': 'POST', ':path': EXECUTE, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => {});
    stream.write(Buffer.from([0, 0, 0, 0, 100]));
    stream.resume();
    await once(stream, 'close');
    t.equal(stream.rstCode, http2.constants.NGHTTP2_CANCEL, 'RST_STREAM CANCEL');
  });
});

t.test('connections beyond LDBOX_MAX_CONNECTIONS are closed at once', async (t) => {
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_MAX_CONNECTIONS: '2' });
  t.teardown(() => runner.close());
  const connect = async (): Promise<net.Socket> => {
    const socket = net.connect(runner.process.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    return socket;
  };
  const held = [await connect(), await connect()];
  const third = await connect();
  let received = 0;
  third.on('data', (d: Buffer) => (received += d.length));
  // The runner may close it before the request is written: a reset (ECONNRESET) is as good as a close.
  const closed = new Promise((resolve) => third.once('close', resolve));
  third.write('GET /healthz HTTP/1.1\r\nhost: runner\r\n\r\n');
  await closed;
  t.equal(received, 0, 'closed without an answer');
  for (const s of held) s.destroy();
});

t.test("Node's fetch sees the refusal of an oversized Connect call over HTTP/1.1, not EPIPE", async (t) => {
  const runner = await startTestRunner({ LDBOX_POOL_SIZE: '1', LDBOX_MAX_CODE_BYTES: '1KiB', LDBOX_MAX_INPUT_BYTES: '1KiB' });
  t.teardown(() => runner.close());
  // The limit is code + 2 × input + 64 KiB: 67 KiB; 100 KiB is over it, under twice it.
  const r = await fetch(`${runner.url}${EXECUTE}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: 'x'.repeat(100 * 1024) }),
  });
  t.equal(r.status, 429, 'RESOURCE_EXHAUSTED as HTTP 429');
  t.equal(((await r.json()) as { code: string }).code, 'resource_exhausted');
  const again = await fetch(`${runner.url}/healthz`);
  t.equal(again.status, 200, 'the port still serves');
});
