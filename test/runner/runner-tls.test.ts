/**
 * The runner over TLS (LDBOX_RUNNER_TLS_CERT/_KEY) and mTLS (LDBOX_RUNNER_TLS_CLIENT_CA), with
 * certificates made by openssl: the canonical gRPC client (@grpc/grpc-js, ssl credentials) and the
 * executor's own client (RunnerClients) get through with the CA and fail fast without it; HTTP/1.1
 * (/healthz, /metrics) works over TLS too.
 */
import { once } from 'node:events';
import https from 'node:https';
import net from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import { RunnerClients, RunnerUnavailableError } from '../../src/executor/runner-clients.js';
import { type ExecuteRequest, ExecuteRequestSchema, type ExecuteResponse, ExecuteResponseSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startRunnerServer, type RunnerServer } from '../../runner/server/runner-server.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/test-certificates.js';

const certs = makeTestCertificates(t.testdir());

async function startTlsRunner(t: Test, env: Record<string, string>): Promise<RunnerServer> {
  const config = loadRunnerConfig({
    LDBOX_RUNNER_PORT: '0',
    LDBOX_POOL_SIZE: '1',
    // The warm-up over TLS has its own test (warm-up.test.ts).
    LDBOX_RUNNER_WARMUP_CALLS: '0',
    LDBOX_RUNNER_TLS_CERT: certs.serverCert,
    LDBOX_RUNNER_TLS_KEY: certs.serverKey,
    ...env,
  });
  const server = await startRunnerServer(config, silentLogger());
  t.teardown(() => server.close(2000));
  return server;
}

/** One Execute through grpc-js with `creds`; the client is closed afterwards. */
function grpcExecute(port: number, creds: grpc.ChannelCredentials, code: string): Promise<ExecuteResponse> {
  const client = new grpc.Client(`localhost:${port}`, creds);
  return new Promise<ExecuteResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      '/ldbox.runner.v1.RunnerService/Execute',
      (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
      (b: Buffer) => fromBinary(ExecuteResponseSchema, b),
      create(ExecuteRequestSchema, { code }),
      new grpc.Metadata(),
      { deadline: Date.now() + 20_000 },
      (err, res) => (err ? reject(err) : resolve(res!)),
    );
  }).finally(() => client.close());
}

async function grpcFailure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('the call succeeded');
}

/** GET over HTTP/1.1 + TLS; resolves with status and body, rejects on a TLS failure. */
function httpsGet(
  port: number,
  path: string,
  options: https.RequestOptions & { ALPNProtocols?: string[] },
): Promise<{ status: number; alpn: string | false; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', servername: 'localhost', port, path, agent: false, ...options }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, alpn: (res.socket as import('node:tls').TLSSocket).alpnProtocol ?? false, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function executorClients(port: number, tls: Partial<{ ca: Buffer; cert: Buffer; key: Buffer }>): RunnerClients {
  return new RunnerClients([`https://localhost:${port}`], 'runner-token-0123456789', {
    tls: { ca: tls.ca, cert: tls.cert, key: tls.key },
  });
}

async function executorFailure(clients: RunnerClients): Promise<Error> {
  try {
    await clients.execute({ code: 'return 1' }, { timeoutMs: 20_000 });
  } catch (err) {
    return err as Error;
  }
  throw new Error('the call succeeded');
}

const ca = (c: TestCertificates) => c.read(c.caCert);

t.test('TLS: gRPC and Connect clients with the CA get through, without it fail verification', async (t) => {
  const runner = await startTlsRunner(t, { LDBOX_RUNNER_TOKEN: 'runner-token-0123456789' });
  const token = new grpc.Metadata();
  token.set('authorization', 'Bearer runner-token-0123456789');
  const withToken = grpc.credentials.combineChannelCredentials(
    grpc.credentials.createSsl(ca(certs)),
    grpc.credentials.createFromMetadataGenerator((_p, cb) => cb(null, token)),
  );

  const res = await grpcExecute(runner.port, withToken, 'return { over: "tls" }');
  t.strictSame(res.result?.kind.case, 'structValue', 'grpc-js over TLS: a struct result');
  t.equal(res.error, undefined, 'no error');

  const noToken = await grpcFailure(grpcExecute(runner.port, grpc.credentials.createSsl(ca(certs)), 'return 1'));
  t.equal(noToken.code, grpc.status.UNAUTHENTICATED, 'TLS does not replace the token when one is set');

  const untrusted = await grpcFailure(grpcExecute(runner.port, grpc.credentials.createSsl(), 'return 1'));
  t.equal(untrusted.code, grpc.status.UNAVAILABLE, 'grpc-js without the CA: UNAVAILABLE');
  t.match(untrusted.details, /certificate/i, `grpc-js names the certificate problem: ${untrusted.details}`);

  const clients = executorClients(runner.port, { ca: ca(certs) });
  const answer = await clients.execute({ code: 'return { via: "executor" }' }, { timeoutMs: 20_000 });
  t.strictSame(answer.result, { via: 'executor' }, "the executor's client over TLS with LDBOX_RUNNER_CA");

  const err = await executorFailure(executorClients(runner.port, {}));
  t.type(err, RunnerUnavailableError, 'without the CA: the runner counts as unreachable');
  t.equal(
    err.message,
    `no runner took the call: https://localhost:${runner.port}: TLS UNABLE_TO_VERIFY_LEAF_SIGNATURE unable to verify the first certificate`,
    'a verification error',
  );
});

t.test('TLS: /healthz and /metrics over HTTP/1.1 (ALPN http/1.1)', async (t) => {
  const runner = await startTlsRunner(t, {});
  const health = await httpsGet(runner.port, '/healthz', { ca: ca(certs) });
  t.equal(health.status, 200, '/healthz');
  t.equal(health.alpn, false, 'node:https offers no ALPN: served as HTTP/1.1');
  const metrics = await httpsGet(runner.port, '/metrics', { ca: ca(certs), ALPNProtocols: ['http/1.1'] });
  t.equal(metrics.status, 200, '/metrics');
  t.equal(metrics.alpn, 'http/1.1', 'ALPN http/1.1');
  t.match(metrics.body, /ldbox_runner_pool_workers/, "the runner's metrics");
  await t.rejects(httpsGet(runner.port, '/healthz', {}), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, 'without the CA: refused by the client');
});

t.test('mTLS: a client certificate from the CA is required', async (t) => {
  const runner = await startTlsRunner(t, { LDBOX_RUNNER_TLS_CLIENT_CA: certs.caCert });

  const withCert = grpc.credentials.createSsl(ca(certs), certs.read(certs.clientKey), certs.read(certs.clientCert));
  const res = await grpcExecute(runner.port, withCert, 'return 7');
  t.equal(res.result?.kind.value, 7, 'grpc-js with a client certificate: accepted');

  const noCert = await grpcFailure(grpcExecute(runner.port, grpc.credentials.createSsl(ca(certs)), 'return 1'));
  t.equal(noCert.code, grpc.status.UNAVAILABLE, `grpc-js without a client certificate: refused (${noCert.details})`);

  const stranger = grpc.credentials.createSsl(ca(certs), certs.read(certs.strangerKey), certs.read(certs.strangerCert));
  const refused = await grpcFailure(grpcExecute(runner.port, stranger, 'return 1'));
  t.equal(refused.code, grpc.status.UNAVAILABLE, `grpc-js with a certificate of another CA: refused (${refused.details})`);

  const answer = await executorClients(runner.port, { ca: ca(certs), cert: certs.read(certs.clientCert), key: certs.read(certs.clientKey) }).execute(
    { code: 'return "mtls"' },
    { timeoutMs: 20_000 },
  );
  t.equal(answer.result, 'mtls', "the executor's client with LDBOX_RUNNER_CLIENT_CERT/_KEY");
  const err = await executorFailure(executorClients(runner.port, { ca: ca(certs) }));
  t.type(err, RunnerUnavailableError, "the executor's client without a client certificate: refused");
  t.match(err.message, `https://localhost:${runner.port}: TLS ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED`, 'the TLS alert is named');

  const health = await httpsGet(runner.port, '/healthz', { ca: ca(certs), cert: certs.read(certs.clientCert), key: certs.read(certs.clientKey) });
  t.equal(health.status, 200, '/healthz with a client certificate');
  await t.rejects(httpsGet(runner.port, '/healthz', { ca: ca(certs) }), { code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' }, 'without one: refused');
});

t.test('close() drops a connection still in its TLS handshake', async (t) => {
  const config = loadRunnerConfig({
    LDBOX_RUNNER_PORT: '0',
    LDBOX_POOL_SIZE: '1',
    // The warm-up over TLS has its own test (warm-up.test.ts).
    LDBOX_RUNNER_WARMUP_CALLS: '0',
    LDBOX_RUNNER_TLS_CERT: certs.serverCert,
    LDBOX_RUNNER_TLS_KEY: certs.serverKey,
  });
  // A handshake timeout far beyond the test's own: close() must not wait for it.
  const runner = await startRunnerServer(config, silentLogger(), { sniffTimeoutMs: 3_600_000 });
  const silent = net.connect(runner.port, '127.0.0.1');
  await once(silent, 'connect');
  // A served connection too, so that close() has both kinds to end.
  t.equal((await httpsGet(runner.port, '/healthz', { ca: ca(certs) })).status, 200);
  const closed = once(silent, 'close');
  await runner.close(2000);
  await closed;
  t.pass('the silent connection was closed and close() returned');
});
