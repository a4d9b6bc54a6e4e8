/**
 * The TLS settings of the runner (LDBOX_RUNNER_TLS_CERT, _KEY, _CLIENT_CA), the executor
 * (LDBOX_RUNNER_CA, LDBOX_RUNNER_CLIENT_CERT, _KEY) and the rule that a non-loopback runner needs a
 * token or client certificates (LDBOX_RUNNER_INSECURE): every exact message, over files made by openssl
 * (src/config/tls-files.ts, runner/config/runner-config.ts, src/executor/executor-config.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Env } from '../../src/config/env-parsers.js';
import { loadExecutorConfig } from '../../src/executor/executor-config.js';
import { isLoopback, loadRunnerConfig } from '../../runner/config/runner-config.js';
import { makeTestCertificates } from '../helpers/test-certificates.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { configErrorMessage } from '../helpers/config-errors.js';

const certs = makeTestCertificates(t.testdir());
const dir = certs.dir;
const encryptedKey = join(dir, 'encrypted.key');
execFileSync('openssl', ['pkey', '-in', certs.serverKey, '-aes256', '-passout', 'pass:secret', '-out', encryptedKey]);
const garbage = join(dir, 'garbage.pem');
writeFileSync(garbage, 'not a PEM file\n');

const messageOf = (load: (env: Env) => unknown, env: Env) => configErrorMessage(load, env);
const runnerError = (env: Env) => messageOf(loadRunnerConfig, env);
const executorError = (env: Env) => messageOf(loadExecutorConfig, { LDBOX_DATA_KEY: TEST_DATA_KEY, ...env });

const SERVER = { LDBOX_RUNNER_TLS_CERT: certs.serverCert, LDBOX_RUNNER_TLS_KEY: certs.serverKey };

t.test('runner: certificate, key and client CA are read', async (t) => {
  t.equal(loadRunnerConfig({}).tls, undefined, 'no TLS by default');
  const c = loadRunnerConfig({ ...SERVER, LDBOX_RUNNER_TLS_CLIENT_CA: certs.caCert });
  t.strictSame(c.tls, { cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey), clientCa: readFileSync(certs.caCert) });
  t.equal(loadRunnerConfig({ ...SERVER, LDBOX_RUNNER_TLS_CLIENT_CA: ' ' }).tls?.clientCa, undefined, 'a blank client CA is unset');
});

t.test('runner: exact messages for bad TLS files', async (t) => {
  const pair = 'LDBOX_RUNNER_TLS_CERT and LDBOX_RUNNER_TLS_KEY go together: set both (PEM files) or neither';
  t.equal(runnerError({ LDBOX_RUNNER_TLS_CERT: certs.serverCert }), pair, 'a certificate without its key');
  t.equal(runnerError({ LDBOX_RUNNER_TLS_KEY: certs.serverKey }), pair, 'a key without its certificate');
  const missing = join(dir, 'missing.crt');
  t.equal(runnerError({ ...SERVER, LDBOX_RUNNER_TLS_CERT: missing }), `LDBOX_RUNNER_TLS_CERT: cannot read "${missing}" (ENOENT)`);
  t.equal(runnerError({ ...SERVER, LDBOX_RUNNER_TLS_KEY: dir }), `LDBOX_RUNNER_TLS_KEY: cannot read "${dir}" (EISDIR)`);
  t.equal(
    runnerError({ ...SERVER, LDBOX_RUNNER_TLS_CERT: certs.serverKey }),
    `LDBOX_RUNNER_TLS_CERT: "${certs.serverKey}" holds no PEM certificate`,
    'a key as certificate',
  );
  t.equal(runnerError({ ...SERVER, LDBOX_RUNNER_TLS_CERT: garbage }), `LDBOX_RUNNER_TLS_CERT: "${garbage}" holds no PEM certificate`);
  t.equal(
    runnerError({ ...SERVER, LDBOX_RUNNER_TLS_KEY: certs.serverCert }),
    `LDBOX_RUNNER_TLS_KEY: "${certs.serverCert}" holds no unencrypted PEM private key`,
    'a certificate as key',
  );
  t.equal(
    runnerError({ ...SERVER, LDBOX_RUNNER_TLS_KEY: encryptedKey }),
    `LDBOX_RUNNER_TLS_KEY: "${encryptedKey}" holds no unencrypted PEM private key`,
    'an encrypted key',
  );
  t.equal(
    runnerError({ ...SERVER, LDBOX_RUNNER_TLS_KEY: certs.clientKey }),
    `LDBOX_RUNNER_TLS_KEY: the key in "${certs.clientKey}" does not belong to the certificate in "${certs.serverCert}" (LDBOX_RUNNER_TLS_CERT)`,
    'a key of another certificate',
  );
  t.equal(
    runnerError({ LDBOX_RUNNER_TLS_CLIENT_CA: certs.caCert }),
    'LDBOX_RUNNER_TLS_CLIENT_CA needs LDBOX_RUNNER_TLS_CERT and LDBOX_RUNNER_TLS_KEY: client certificates are asked for over TLS only',
  );
  t.equal(runnerError({ ...SERVER, LDBOX_RUNNER_TLS_CLIENT_CA: garbage }), `LDBOX_RUNNER_TLS_CLIENT_CA: "${garbage}" holds no PEM certificate`);
});

t.test('runner: a non-loopback address needs a token or client certificates', async (t) => {
  const refusal = (host: string) =>
    `LDBOX_RUNNER_HOST=${host} is not a loopback address and the runner runs any code it is sent: set LDBOX_RUNNER_TOKEN or LDBOX_RUNNER_TLS_CLIENT_CA (client certificates), or LDBOX_RUNNER_INSECURE=1 to open it to whoever reaches the port`;
  for (const host of ['0.0.0.0', '::', '10.1.2.3', 'runner.internal', '::ffff:10.0.0.1', '128.0.0.1']) {
    t.equal(runnerError({ LDBOX_RUNNER_HOST: host }), refusal(host), `refused: ${host}`);
    t.equal(runnerError({ ...SERVER, LDBOX_RUNNER_HOST: host }), refusal(host), `TLS alone (no client certificates) is not enough: ${host}`);
    t.equal(loadRunnerConfig({ LDBOX_RUNNER_HOST: host, LDBOX_RUNNER_TOKEN: 'x'.repeat(16) }).host, host, `with a token: ${host}`);
    t.equal(loadRunnerConfig({ ...SERVER, LDBOX_RUNNER_HOST: host, LDBOX_RUNNER_TLS_CLIENT_CA: certs.caCert }).host, host, `with client certificates: ${host}`);
    t.equal(loadRunnerConfig({ LDBOX_RUNNER_HOST: host, LDBOX_RUNNER_INSECURE: '1' }).host, host, `with LDBOX_RUNNER_INSECURE=1: ${host}`);
  }
  t.equal(runnerError({ LDBOX_RUNNER_HOST: '0.0.0.0', LDBOX_RUNNER_INSECURE: '0' }), refusal('0.0.0.0'), 'LDBOX_RUNNER_INSECURE=0');
  t.equal(runnerError({ LDBOX_RUNNER_INSECURE: 'yes' }), 'LDBOX_RUNNER_INSECURE must be one of 0, 1, got "yes"');
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) {
    t.equal(loadRunnerConfig({ LDBOX_RUNNER_HOST: host }).host, host, `loopback, no token needed: ${host}`);
    t.ok(isLoopback(host), host);
  }
});

t.test('executor: CA and client certificate for https:// runners', async (t) => {
  t.strictSame(loadExecutorConfig({ LDBOX_DATA_KEY: TEST_DATA_KEY }).runnerTls, { ca: undefined, cert: undefined, key: undefined }, 'none by default');
  t.strictSame(
    loadExecutorConfig({
      LDBOX_DATA_KEY: TEST_DATA_KEY,
      LDBOX_RUNNER_CA: certs.caCert,
      LDBOX_RUNNER_CLIENT_CERT: certs.clientCert,
      LDBOX_RUNNER_CLIENT_KEY: certs.clientKey,
    }).runnerTls,
    { ca: readFileSync(certs.caCert), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
  );
  const missing = join(dir, 'missing-ca.crt');
  t.equal(executorError({ LDBOX_RUNNER_CA: missing }), `LDBOX_RUNNER_CA: cannot read "${missing}" (ENOENT)`);
  t.equal(executorError({ LDBOX_RUNNER_CA: certs.caKey }), `LDBOX_RUNNER_CA: "${certs.caKey}" holds no PEM certificate`);
  const pair = 'LDBOX_RUNNER_CLIENT_CERT and LDBOX_RUNNER_CLIENT_KEY go together: set both (PEM files) or neither';
  t.equal(executorError({ LDBOX_RUNNER_CLIENT_CERT: certs.clientCert }), pair);
  t.equal(executorError({ LDBOX_RUNNER_CLIENT_KEY: certs.clientKey }), pair);
  t.equal(
    executorError({ LDBOX_RUNNER_CLIENT_CERT: certs.clientCert, LDBOX_RUNNER_CLIENT_KEY: certs.serverKey }),
    `LDBOX_RUNNER_CLIENT_KEY: the key in "${certs.serverKey}" does not belong to the certificate in "${certs.clientCert}" (LDBOX_RUNNER_CLIENT_CERT)`,
  );
});
