/**
 * `ldbox dev`'s nats-server is not an open NATS: it takes only the user `ldbox` with a password generated
 * once (kept in the data dir, mode 0600, reused by the next start), its config file is 0600, a client
 * without credentials is refused, and the gateway and the executor that `ldbox dev` starts get in.
 */
import { statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { runDev } from '../../src/dev/dev-command.js';
import { waitFor } from '../nats/util.js';

const ENV = {
  LDBOX_GATEWAY_PORT: '0',
  LDBOX_RUNNER_PORT: '0',
  LDBOX_EXECUTOR_PORT: '0',
  LDBOX_NATS_PORT: '0',
  LDBOX_POOL_SIZE: '1',
  LDBOX_RUNNER_WARMUP_CALLS: '0',
  LDBOX_LOG_LEVEL: 'silent',
};

/** Starts `ldbox dev` in-process; resolves with what it printed once it is ready, and a stop function. */
async function startDev(dataDir: string, env: Record<string, string> = {}): Promise<{ out: () => string; err: () => string; stop: () => Promise<number> }> {
  let out = '';
  let err = '';
  let stop!: () => void;
  const stopped = new Promise<void>((r) => (stop = r));
  const code = runDev({ ...ENV, LDBOX_DATA_DIR: dataDir, ...env }, { stdout: (s) => (out += s), stderr: (s) => (err += s) }, stopped);
  let failed: unknown;
  code.catch((e) => (failed = e));
  await waitFor(() => /ldbox dev is ready/.test(out) || failed !== undefined, 60_000, `ldbox dev ready:\n${out}\n${err}`);
  if (failed) throw failed;
  return { out: () => out, err: () => err, stop: () => (stop(), code) };
}

t.test('the local nats-server takes only the generated user; the password is kept and reused', async (t) => {
  const dataDir = join(t.testdir({}), 'data');
  const first = await startDev(dataDir);
  const passwordFile = join(dataDir, 'nats-password');
  const password = readFileSync(passwordFile, 'utf8').trim();
  t.ok(password.length >= 32, 'a generated password');
  t.equal(statSync(passwordFile).mode & 0o777, 0o600, 'the password file is 0600');
  t.equal(statSync(join(dataDir, 'nats', 'nats-server.conf')).mode & 0o777, 0o600, 'the config file (it holds the password) is 0600');
  t.notOk(first.out().includes(password) || first.err().includes(password), 'the password is not printed');
  t.match(first.out(), `password in ${passwordFile}`, 'where it is, is');

  const port = Number(/NATS +nats:\/\/127\.0\.0\.1:(\d+)/.exec(first.out())?.[1]);
  await t.rejects(connect({ servers: `127.0.0.1:${port}`, reconnect: false }), { name: 'AuthorizationError' }, 'no credentials: refused');
  await t.rejects(
    connect({ servers: `127.0.0.1:${port}`, user: 'ldbox', pass: 'not-the-password', reconnect: false }),
    { name: 'AuthorizationError' },
    'a wrong password: refused',
  );
  const nc = await connect({ servers: `127.0.0.1:${port}`, user: 'ldbox', pass: password, reconnect: false });
  await nc.close();
  t.equal(await first.stop(), 0);

  const second = await startDev(dataDir, { NATS_TOKEN: 'tok-hunter2-0123456789' });
  t.equal(readFileSync(passwordFile, 'utf8').trim(), password, 'the next start reuses the password');
  t.equal(
    second.err(),
    'NATS_TOKEN ignored: NATS credentials and TLS settings are for the server in NATS_URL; the local nats-server uses its generated password\n',
    'NATS_* credentials without NATS_URL: said, not echoed',
  );
  t.match(second.out(), 'ldbox dev is ready', 'and its gateway and executor get in');
  t.equal(await second.stop(), 0);
});
