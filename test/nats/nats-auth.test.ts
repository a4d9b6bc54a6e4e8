/**
 * A secured NATS: real nats-servers started with a user and password, a token, TLS with a client
 * certificate (made with openssl here); the gateway and the executor connect through the one options
 * builder, set up the stream and buckets, and a webhook runs to a succeeded execution. A wrong password is
 * a clear log line without the password; a seed list with a dead server first connects; no credential is
 * ever in a log line.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { connect, nkeys } from '@nats-io/transport-node';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { startGateway } from '../../gateway/index.js';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import type { Logger } from '../../src/logging/logger.js';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { ADMIN_TOKEN, hook } from '../gateway/harness.js';
import { freePort, startNatsServer, type NatsServerOptions, type TestNatsServer } from '../helpers/nats-server.js';
import { waitFor } from './util.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

// Each round trip has a secured nats-server, gateway and executor of its own; the runner, which does not
// talk to NATS, is the file's one.
const runner = sharedRunner(t);

const PASSWORD = 'pw-Zq8!hunter2-secret';
const TOKEN = 'tok-Xk3-hunter2-secret';

/** A debug-level pino logger writing into `lines`. */
function capture(lines: string[]): Logger {
  return pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) }) as unknown as Logger;
}

/** Runs a webhook through the stack (gateway → JetStream → executor → runner) with the given NATS settings. */
async function roundTrip(t: Test, natsOpts: NatsServerOptions, natsEnv: (n: TestNatsServer) => Record<string, string>, secrets: string[]): Promise<void> {
  const logs: string[] = [];
  const s = await stackFixture(t, { runner: await runner(), natsOpts, natsEnv, gatewayLog: capture(logs), executorLog: capture(logs) });
  await waitFor(() => s.executor!.ready(), 15_000, 'executor ready (connected, buckets open, consumer in place)');
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return { doubled: data.input.x * 2 };', input: { x: '{{trigger.output.body.x}}' } }]);
  const r = await hook(s.base, wf.id, { body: { x: 21 } });
  t.equal(r.status, 202, r.text);
  const done = await waitForFinish(s.base, r.json.executionId);
  t.equal(done.status, 'EXECUTION_STATUS_SUCCEEDED');
  t.same(done.nodes[0].output, { doubled: 42 });
  t.ok(
    logs.some((l) => l.includes('NATS connected')),
    'the roles logged their connection',
  );
  for (const secret of secrets) t.notOk(logs.join('').includes(secret), 'no credential in the logs');
}

t.test('user and password in NATS_URL', async (t) => {
  await roundTrip(
    t,
    { args: ['--user', 'ldbox-app', '--pass', PASSWORD] },
    (n) => ({ NATS_URL: `nats://ldbox-app:${encodeURIComponent(PASSWORD)}@127.0.0.1:${n.port}` }),
    [PASSWORD, encodeURIComponent(PASSWORD)],
  );
});

t.test('NATS_TOKEN', async (t) => {
  await roundTrip(t, { args: ['--auth', TOKEN] }, () => ({ NATS_TOKEN: TOKEN }), [TOKEN]);
});

t.test('NATS_NKEY_SEED_FILE', async (t) => {
  const user = nkeys.createUser();
  const seed = new TextDecoder().decode(user.getSeed());
  const dir = t.testdir({});
  const conf = join(dir, 'nats.conf');
  writeFileSync(conf, `authorization { users: [ { nkey: ${JSON.stringify(user.getPublicKey())} } ] }\n`);
  writeFileSync(join(dir, 'user.nk'), `${seed}\n`, { mode: 0o600 });
  await roundTrip(t, { args: ['-c', conf] }, () => ({ NATS_NKEY_SEED_FILE: join(dir, 'user.nk') }), [seed]);
});

t.test('TLS: tls://, NATS_CA and a client certificate the server verifies', async (t) => {
  const dir = t.testdir({});
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '1', '-subj', '/CN=ldbox test CA');
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`);
    const extFile = f(`${name}.ext`);
    execFileSync('bash', ['-c', `printf '%s\\n' "$1" > "$2"`, '_', ext, extFile]);
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f(`${name}.pem`),
      '-days',
      '1',
      '-extfile',
      extFile,
    );
  }
  const args = ['--tls', '--tlscert', f('server.pem'), '--tlskey', f('server.key'), '--tlscacert', f('ca.pem'), '--tlsverify'];
  await roundTrip(
    t,
    { args },
    (n) => ({ NATS_URL: `tls://127.0.0.1:${n.port}`, NATS_CA: f('ca.pem'), NATS_CERT: f('client.pem'), NATS_KEY: f('client.key') }),
    [],
  );

  // Without the client certificate the server refuses the handshake.
  const n = await startNatsServer({ args });
  t.teardown(() => n.stop());
  await t.rejects(connect({ servers: `127.0.0.1:${n.port}`, tls: { caFile: f('ca.pem') }, reconnect: false, timeout: 3000 }), 'no client certificate: refused');
});

t.test('servers with credentials refuse unauthenticated clients; a wrong password is a clear log line without it', async (t) => {
  const n = await startNatsServer({ args: ['--user', 'ldbox-app', '--pass', PASSWORD] });
  t.teardown(() => n.stop());
  await t.rejects(connect({ servers: `127.0.0.1:${n.port}`, reconnect: false }), { name: 'AuthorizationError' }, 'no credentials: refused');

  const wrong = 'wrong-hunter2-password';
  const logs: string[] = [];
  const config = loadGatewayConfig({
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
    NATS_URL: `nats://ldbox-app:${wrong}@127.0.0.1:${n.port}`,
  });
  const gateway = await startGateway(config, capture(logs), { nats: { reconnectTimeWaitMs: 100, reconnectJitterMs: 50, connectTimeoutMs: 1000 } });
  t.teardown(() => gateway.close(500));
  await waitFor(() => logs.some((l) => l.includes('NATS refused the credentials')), 10_000, 'the refusal logged');
  const line = JSON.parse(logs.find((l) => l.includes('NATS refused the credentials'))!);
  t.equal(line.nats, `nats://***@127.0.0.1:${n.port}`, 'the URL as logged has no password');
  t.match(line.err, /authorization/i, 'the reason: authorization');
  t.equal(gateway.ready(), false, 'not ready');
  t.notOk(logs.join('').includes(wrong), 'the password is in no log line');
});

// nats.js shuffles the seed list (so that many clients spread over a cluster's seeds): the dead server is
// listed first, and tried first in about half the runs; either way the roles must get in.
t.test('a seed list with a dead server listed first connects to the live one', async (t) => {
  const dead = await freePort();
  await roundTrip(
    t,
    { args: ['--user', 'ldbox-app', '--pass', PASSWORD] },
    (n) => ({ NATS_URL: `nats://ldbox-app:${encodeURIComponent(PASSWORD)}@127.0.0.1:${dead},nats://127.0.0.1:${n.port}` }),
    [PASSWORD, encodeURIComponent(PASSWORD)],
  );
});
