/**
 * The executor's ops port (/healthz, /readyz, /metrics) under slow and surplus clients, over real sockets:
 * the connection cap and the request-head timeout (set small via the environment; the test waits for
 * 'close').
 */
import { once } from 'node:events';
import net from 'node:net';
import t from 'tap';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { startExecutor } from '../../src/executor/index.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startNatsServer } from '../helpers/nats-server.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

t.test('executor ops port limits', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.stop());
  const config = loadExecutorConfig({
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    NATS_URL: nats.url,
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_RUNNER_URLS: 'http://127.0.0.1:9',
    LDBOX_MAX_CONNECTIONS: '2',
    LDBOX_HEADERS_TIMEOUT_MS: '200',
    LDBOX_IDLE_TIMEOUT_MS: '200',
  });
  const executor = await startExecutor(config, silentLogger(), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 } });
  t.teardown(() => executor.close(2000));
  const connect = async (): Promise<net.Socket> => {
    const socket = net.connect(executor.port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    return socket;
  };

  t.test('an incomplete request head is closed by the headers timeout', async (t) => {
    const socket = await connect();
    socket.write('GET /healthz HTTP/1.1\r\nhost: ex\r\n');
    socket.resume();
    await once(socket, 'close');
    t.pass('closed');
  });

  t.test('connections beyond LDBOX_MAX_CONNECTIONS are closed at once', async (t) => {
    const held = [await connect(), await connect()];
    const third = await connect();
    let received = 0;
    third.on('data', (d: Buffer) => (received += d.length));
    third.write('GET /healthz HTTP/1.1\r\nhost: ex\r\n\r\n');
    await once(third, 'close');
    t.equal(received, 0, 'closed without an answer');
    for (const s of held) s.destroy();
  });
});
