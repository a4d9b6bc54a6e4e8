/**
 * The one nats-server launcher (src/nats/nats-server-process.ts) that `ldbox dev`, the tests and the
 * benches share: the port comes back from the server's ports file, the config file carries max_payload and
 * a user (mode 0600), stopping leaves no process and no ports file, a failed start says why and leaves
 * nothing running, and a server left behind under the same pid file is stopped before the next start.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { findNatsServerBinary } from '../../src/nats/nats-server-binary.js';
import { startNatsServerProcess } from '../../src/nats/nats-server-process.js';
import { answersNatsInfo, anyFreePort } from '../../src/net/local-ports.js';
import { waitFor } from './util.js';

const isRunning = (pid: number) => existsSync(`/proc/${pid}`);
const portsFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.ports'));

t.test('the server picks its port; the launcher reads it back; stop() leaves nothing behind', async (t) => {
  const dir = t.testdir({});
  const server = await startNatsServerProcess({ dir, storeDir: join(dir, 'data') });
  t.teardown(() => server.stop());
  t.ok(server.port > 0, 'a port');
  t.equal(server.url, `nats://127.0.0.1:${server.port}`);
  t.ok(await answersNatsInfo(server.port), 'it answers on that port');
  t.same(portsFiles(dir), [`nats-server_${server.pid}.ports`], 'from its ports file');
  const nc = await connect({ servers: server.url, reconnect: false });
  t.ok(nc.info?.jetstream, 'JetStream is on');
  await nc.close();

  t.equal(server.running, true);
  await server.stop();
  t.equal(server.running, false);
  t.not(await server.exited, 'SIGKILL', 'SIGTERM was enough (nats-server 2.9 then exits with code 1)');
  t.notOk(isRunning(server.pid), 'no process left');
  t.same(portsFiles(dir), [], 'no ports file left');
  await server.stop(); // idempotent
});

t.test('a fixed port, and SIGKILL: the ports file is removed all the same', async (t) => {
  const dir = t.testdir({});
  const port = await anyFreePort();
  const server = await startNatsServerProcess({ dir, storeDir: join(dir, 'data'), port });
  t.teardown(() => server.stop());
  t.equal(server.port, port);
  await server.kill('SIGKILL');
  t.equal(await server.exited, 'SIGKILL');
  t.notOk(isRunning(server.pid));
  t.same(portsFiles(dir), []);
});

t.test('the config file: max_payload and the only user, mode 0600', async (t) => {
  const dir = t.testdir({});
  const server = await startNatsServerProcess({
    dir,
    storeDir: join(dir, 'data'),
    config: { comment: 'written by a test', maxPayload: 2 * 1024 * 1024, auth: { user: 'u', password: 'p4ss"word' } },
  });
  t.teardown(() => server.stop());
  t.equal(server.configFile, join(dir, 'nats-server.conf'));
  t.equal(statSync(server.configFile!).mode & 0o777, 0o600);
  await t.rejects(connect({ servers: server.url, reconnect: false }), { name: 'AuthorizationError' }, 'no credentials: refused');
  const nc = await connect({ servers: server.url, user: 'u', pass: 'p4ss"word', reconnect: false });
  t.equal(nc.info?.max_payload, 2 * 1024 * 1024);
  await nc.close();
});

t.test('a server that cannot start: the error says so, with its output, and nothing keeps running', async (t) => {
  const dir = t.testdir({});
  const taken = await startNatsServerProcess({ dir: join(dir, 'a'), storeDir: join(dir, 'a', 'data') });
  t.teardown(() => taken.stop());
  await t.rejects(startNatsServerProcess({ dir: join(dir, 'b'), storeDir: join(dir, 'b', 'data'), port: taken.port, logFile: join(dir, 'b.log') }), {
    message: new RegExp(`^nats-server exited at start \\(exit code 1\\); see ${join(dir, 'b.log')}:\\n[\\s\\S]*address already in use`),
  });
  await t.rejects(startNatsServerProcess({ dir, storeDir: join(dir, 'c'), bin: join(dir, 'no-such-binary') }), {
    message: /^nats-server exited at start \(could not start: spawn .*no-such-binary ENOENT\)/,
  });
});

t.test('a server left running under the same pid file is stopped before the next one starts', async (t) => {
  const dir = t.testdir({});
  const storeDir = join(dir, 'data');
  const pidFile = join(dir, 'nats-server.pid');
  // What a `kill -9` of ldbox dev leaves: a server on this store dir, and its pid file.
  const orphan = spawn(await findNatsServerBinary(), ['-js', '-a', '127.0.0.1', '-p', '-1', '-sd', storeDir], { stdio: 'ignore' });
  t.teardown(() => orphan.kill('SIGKILL'));
  writeFileSync(pidFile, `${orphan.pid}\n`);
  const orphanExit = new Promise((r) => orphan.once('exit', r));

  const server = await startNatsServerProcess({ dir, storeDir, pidFile });
  t.teardown(() => server.stop());
  await orphanExit;
  t.notOk(isRunning(orphan.pid!), 'the leftover server was stopped');
  t.equal(Number(readFileSync(pidFile, 'utf8')), server.pid, 'the pid file names the new one');
  await server.stop();
  await waitFor(() => !existsSync(pidFile), 5000, 'the pid file removed');
});
