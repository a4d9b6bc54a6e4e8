/**
 * `ldbox runner` as a real child process: a non-loopback LDBOX_RUNNER_HOST with neither token nor client
 * certificates exits 2 with one line naming the settings, before it listens; bad TLS files likewise.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import t from 'tap';
import { BIN, cleanEnv, inParallel, ldbox, nodeChild } from '../helpers/ldbox-cli.js';
import { makeTestCertificates } from '../helpers/test-certificates.js';

// The subtests share nothing (a port or a certificate directory of their own each): they run at the same time.
t.jobs = 3;

const REFUSAL =
  'LDBOX_RUNNER_HOST=0.0.0.0 is not a loopback address and the runner runs any code it is sent: set LDBOX_RUNNER_TOKEN or LDBOX_RUNNER_TLS_CLIENT_CA (client certificates), or LDBOX_RUNNER_INSECURE=1 to open it to whoever reaches the port';

t.test('0.0.0.0 without a token or client certificates: exit 2 before listening', async (t) => {
  // The port is held here: had the runner tried to listen, it would exit 1 with "the address is in use".
  const holder = net.createServer().listen(0, '0.0.0.0');
  await once(holder, 'listening');
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = String((holder.address() as net.AddressInfo).port);
  const r = await ldbox(['runner'], { LDBOX_RUNNER_HOST: '0.0.0.0', LDBOX_RUNNER_PORT: port });
  t.equal(r.code, 2, 'exit code 2');
  t.equal(r.stderr, `configuration error: ${REFUSAL}\n`, 'one line naming the settings');
  t.equal(r.stdout, '', 'nothing on stdout (it never said it listens)');

  const insecure = await ldbox(['runner'], { LDBOX_RUNNER_HOST: '0.0.0.0', LDBOX_RUNNER_PORT: port, LDBOX_RUNNER_INSECURE: '1', LDBOX_POOL_SIZE: '1' });
  t.equal(insecure.code, 1, 'with LDBOX_RUNNER_INSECURE=1 it goes on to listen (and finds the port taken)');
  t.match(insecure.stderr, `cannot listen on 0.0.0.0:${port}: the address is in use`);
});

t.test('bad TLS files: exit 2 with the exact message', async (t) => {
  const certs = makeTestCertificates(t.testdir());
  const cases: [Record<string, string>, string][] = [
    [{ LDBOX_RUNNER_TLS_CERT: certs.serverCert }, 'LDBOX_RUNNER_TLS_CERT and LDBOX_RUNNER_TLS_KEY go together: set both (PEM files) or neither'],
    [
      { LDBOX_RUNNER_TLS_CERT: certs.serverCert, LDBOX_RUNNER_TLS_KEY: certs.clientKey },
      `LDBOX_RUNNER_TLS_KEY: the key in "${certs.clientKey}" does not belong to the certificate in "${certs.serverCert}" (LDBOX_RUNNER_TLS_CERT)`,
    ],
  ];
  const results = await inParallel(cases, ([env]) => ldbox(['runner'], { LDBOX_RUNNER_PORT: '0', ...env }));
  for (const [i, [env, message]] of cases.entries()) {
    const r = results[i]!;
    t.equal(r.code, 2, `exit code, ${JSON.stringify(env)}`);
    t.equal(r.stderr, `configuration error: ${message}\n`, 'stderr');
    t.equal(r.stdout, '', 'stdout');
  }
});

t.test('with TLS, ldbox runner says it listens on https://', async (t) => {
  const certs = makeTestCertificates(t.testdir());
  const child = spawn(...nodeChild([BIN, 'runner']), {
    env: cleanEnv({
      LDBOX_RUNNER_PORT: '0',
      LDBOX_POOL_SIZE: '1',
      LDBOX_LOG_LEVEL: 'silent',
      LDBOX_RUNNER_TLS_CERT: certs.serverCert,
      LDBOX_RUNNER_TLS_KEY: certs.serverKey,
    }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  let out = '';
  child.stdout.setEncoding('utf8');
  for await (const chunk of child.stdout) {
    out += chunk as string;
    if (out.includes('\n')) break;
  }
  t.match(out, /^runner: https:\/\/127\.0\.0\.1:\d+ \(gRPC/, out.trim());
  child.kill('SIGTERM');
  const [code] = await exited;
  t.equal(code, 0, 'stops cleanly on SIGTERM');
});
