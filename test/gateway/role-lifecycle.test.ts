/**
 * The gateway's lifecycle (src/lifecycle/role-lifecycle.ts) over a real port: `ready` once listening,
 * `close()` lets a request in flight finish, `destroy()` drops a held connection at once, and both are
 * idempotent. The executor's and runner's are in test/executor/executor.test.ts and test/runner/http1-port.test.ts.
 */
import net from 'node:net';
import t from 'tap';
import { gatewayFixture } from './harness.js';

t.test('ready, then close(): draining (503 readyz is never served: the port closes), then closed; idempotent', async (t) => {
  const { gateway, base } = await gatewayFixture(t);
  t.equal(gateway.state, 'ready');
  t.equal((await fetch(`${base}/readyz`)).status, 200);
  const closing = gateway.close(2000);
  t.equal(gateway.state, 'draining');
  t.equal(gateway.ready(), false, 'not ready once draining');
  t.equal(gateway.close(), closing, 'a second close() is the same promise');
  await closing;
  t.equal(gateway.state, 'closed');
  await t.rejects(fetch(`${base}/healthz`), 'the port is closed');
});

t.test('destroy() drops a connection that is still sending its request, without waiting out the grace', async (t) => {
  const { gateway } = await gatewayFixture(t);
  const socket = net.connect(gateway.port, '127.0.0.1');
  socket.on('error', () => {}); // the reset is what this test expects
  await new Promise((r) => socket.once('connect', r));
  // A request head without its end: close() would wait for it; destroy() does not.
  socket.write('GET /healthz HTTP/1.1\r\nhost: gw\r\n');
  const socketClosed = new Promise((r) => socket.once('close', r));
  const started = performance.now();
  await gateway.destroy();
  await socketClosed;
  t.ok(performance.now() - started < 2000, 'stopped well within the default 10 s grace');
  t.equal(gateway.state, 'closed');
  t.equal(gateway.destroy(), gateway.close(), 'destroy() and close() after it are the same promise');
});
