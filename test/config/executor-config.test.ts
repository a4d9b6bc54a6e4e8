/** `loadExecutorConfig`: defaults, every variable, and every rule's exact message (src/executor/executor-config.ts). */
import t from 'tap';
import { EXECUTE_DEADLINE_SLACK_MS, type ExecutorConfig, loadExecutorConfig as loadWithoutKey } from '../../src/executor/executor-config.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { configErrorMessage } from '../helpers/config-errors.js';

/** The loader with a data key set (test/config/data-key-config.test.ts covers the key itself). */
const loadExecutorConfig = (env: Record<string, string | undefined>): ExecutorConfig => loadWithoutKey({ LDBOX_DATA_KEY: TEST_DATA_KEY, ...env });
/** A config without its key ring, for whole-value comparisons. */
const withoutKeys = ({ dataKeys: _, ...rest }: ExecutorConfig) => rest;

/** The message of the ConfigError `loadExecutorConfig(env)` throws; undefined when it does not throw. */
const configError = (env: Record<string, string | undefined>) => configErrorMessage(loadExecutorConfig, env);

const runnerUrlMessage = (u: string) =>
  `LDBOX_RUNNER_URLS: "${u}" must be http://host:port or https://host:port (HTTP/2 cleartext or over TLS; no credentials, path, query or fragment)`;
const notAUrlMessage = (u: string) => `LDBOX_RUNNER_URLS: "${u}" is not a URL (expected http://host:port or https://host:port, comma-separated)`;

t.test('defaults', async (t) => {
  const c = loadExecutorConfig({});
  t.strictSame(withoutKeys(c), {
    host: '127.0.0.1',
    port: 8081,
    nats: { servers: ['127.0.0.1:4222'], shown: 'nats://127.0.0.1:4222' },
    runnerUrls: ['http://127.0.0.1:50051'],
    runnerToken: undefined,
    runnerTls: { ca: undefined, cert: undefined, key: undefined },
    runnerCalls: 'stream',
    concurrency: 16,
    ackWaitMs: 30_000,
    maxAttempts: 5,
    runningRecordDelayMs: 100,
    executeDeadlineMs: 120_000 + EXECUTE_DEADLINE_SLACK_MS,
    http: { maxConnections: 1024, maxStreamsPerConnection: 128, headersTimeoutMs: 20_000, bodyTimeoutMs: 30_000, idleTimeoutMs: 60_000 },
  });
  t.ok('runnerToken' in c, 'runnerToken is present, undefined');
  t.equal(EXECUTE_DEADLINE_SLACK_MS, 10_000);
  t.strictSame(
    loadExecutorConfig({ LDBOX_EXECUTOR_PORT: '', LDBOX_EXECUTOR_CONCURRENCY: '  ', NATS_URL: '', LDBOX_RUNNER_TOKEN: '' }),
    c,
    'empty and blank values are unset',
  );
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: '' }).runnerUrls, ['http://127.0.0.1:50051'], 'an empty list is the default runner');
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: ' , ,' }).runnerUrls, ['http://127.0.0.1:50051'], 'a list of blanks is the default runner');
});

t.test('every variable', async (t) => {
  const c = loadExecutorConfig({
    LDBOX_EXECUTOR_HOST: '0.0.0.0',
    LDBOX_EXECUTOR_PORT: '9091',
    NATS_URL: 'nats://nats.internal:4223',
    LDBOX_RUNNER_URLS: 'http://runner-a:50051,http://runner-b:50052',
    LDBOX_RUNNER_TOKEN: 'runner-token-0123456789',
    LDBOX_RUNNER_CALLS: 'unary',
    LDBOX_EXECUTOR_CONCURRENCY: '64',
    LDBOX_EXECUTOR_ACK_WAIT_MS: '5000',
    LDBOX_EXECUTOR_MAX_ATTEMPTS: '3',
    LDBOX_RUNNING_RECORD_DELAY_MS: '250',
    LDBOX_MAX_TIMEOUT_MS: '60000',
  });
  t.strictSame(withoutKeys(c), {
    host: '0.0.0.0',
    port: 9091,
    nats: { servers: ['nats.internal:4223'], shown: 'nats://nats.internal:4223' },
    runnerUrls: ['http://runner-a:50051', 'http://runner-b:50052'],
    runnerToken: 'runner-token-0123456789',
    runnerTls: { ca: undefined, cert: undefined, key: undefined },
    runnerCalls: 'unary',
    concurrency: 64,
    ackWaitMs: 5000,
    maxAttempts: 3,
    runningRecordDelayMs: 250,
    executeDeadlineMs: 60_000 + EXECUTE_DEADLINE_SLACK_MS,
    http: { maxConnections: 1024, maxStreamsPerConnection: 128, headersTimeoutMs: 20_000, bodyTimeoutMs: 30_000, idleTimeoutMs: 60_000 },
  });
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_PORT: '0' }).port, 0, 'port 0: any free port');
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_PORT: ' 8082 ' }).port, 8082, 'surrounding blanks are trimmed');
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_HOST: '::1' }).host, '::1');
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_HOST: 'executor.internal' }).host, 'executor.internal');
  t.strictSame(loadExecutorConfig({ NATS_URL: '10.0.0.5:4222' }).nats.servers, ['10.0.0.5:4222'], 'host:port without scheme');
  t.strictSame(loadExecutorConfig({ NATS_URL: 'nats' }).nats.servers, ['nats'], 'a bare host name');
  t.equal(loadExecutorConfig({ LDBOX_RUNNER_TOKEN: 'x'.repeat(16) }).runnerToken, 'x'.repeat(16), '16 characters is enough');
  // Range bounds, both ends.
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_CONCURRENCY: '1' }).concurrency, 1);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_CONCURRENCY: '65536' }).concurrency, 65_536);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_ACK_WAIT_MS: '1000' }).ackWaitMs, 1000);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_ACK_WAIT_MS: '3600000' }).ackWaitMs, 3_600_000);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_MAX_ATTEMPTS: '1' }).maxAttempts, 1);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_MAX_ATTEMPTS: '100' }).maxAttempts, 100);
  t.equal(loadExecutorConfig({ LDBOX_RUNNING_RECORD_DELAY_MS: '0' }).runningRecordDelayMs, 0, '0: the running record at once');
  t.equal(loadExecutorConfig({ LDBOX_RUNNING_RECORD_DELAY_MS: '60000' }).runningRecordDelayMs, 60_000);
  t.equal(loadExecutorConfig({ LDBOX_MAX_TIMEOUT_MS: '100' }).executeDeadlineMs, 100 + EXECUTE_DEADLINE_SLACK_MS);
  t.equal(loadExecutorConfig({ LDBOX_MAX_TIMEOUT_MS: '3600000' }).executeDeadlineMs, 3_600_000 + EXECUTE_DEADLINE_SLACK_MS);
  t.equal(loadExecutorConfig({ LDBOX_EXECUTOR_PORT: '65535' }).port, 65535);
});

t.test('LDBOX_RUNNER_URLS: a comma-separated list, blanks ignored, trailing slashes dropped', async (t) => {
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'http://10.0.0.7:50051' }).runnerUrls, ['http://10.0.0.7:50051']);
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'http://a:1/' }).runnerUrls, ['http://a:1'], 'one trailing slash');
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'http://a:1///' }).runnerUrls, ['http://a:1'], 'several trailing slashes');
  t.strictSame(
    loadExecutorConfig({ LDBOX_RUNNER_URLS: ' http://a:1/ ,, ,http://b:2//,http://[::1]:3 ,' }).runnerUrls,
    ['http://a:1', 'http://b:2', 'http://[::1]:3'],
    'blanks and empty entries are skipped, entries trimmed, order kept',
  );
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'http://runner' }).runnerUrls, ['http://runner'], 'the port may be left out');
  t.strictSame(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'http://a:1,http://a:1' }).runnerUrls, ['http://a:1', 'http://a:1'], 'duplicates are kept');
});

t.test('exact messages', async (t) => {
  t.equal(configError({ LDBOX_RUNNER_CALLS: 'grpc' }), 'LDBOX_RUNNER_CALLS must be one of stream, unary, got "grpc"');
  t.equal(configError({ LDBOX_RUNNER_CALLS: 'Stream' }), 'LDBOX_RUNNER_CALLS must be one of stream, unary, got "Stream"');
  // Whole numbers.
  t.equal(configError({ LDBOX_EXECUTOR_PORT: 'abc' }), 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "abc"');
  t.equal(configError({ LDBOX_EXECUTOR_PORT: '80.5' }), 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "80.5"');
  t.equal(configError({ LDBOX_EXECUTOR_PORT: '-1' }), 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "-1"');
  t.equal(configError({ LDBOX_EXECUTOR_PORT: '1e3' }), 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "1e3"');
  t.equal(configError({ LDBOX_EXECUTOR_PORT: '0x50' }), 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "0x50"');
  t.equal(configError({ LDBOX_EXECUTOR_PORT: '65536' }), 'LDBOX_EXECUTOR_PORT must be from 0 to 65535, got 65536');
  t.equal(configError({ LDBOX_EXECUTOR_CONCURRENCY: 'many' }), 'LDBOX_EXECUTOR_CONCURRENCY must be a whole number from 1 to 65536, got "many"');
  t.equal(configError({ LDBOX_EXECUTOR_CONCURRENCY: '0' }), 'LDBOX_EXECUTOR_CONCURRENCY must be from 1 to 65536, got 0');
  t.equal(configError({ LDBOX_EXECUTOR_CONCURRENCY: '65537' }), 'LDBOX_EXECUTOR_CONCURRENCY must be from 1 to 65536, got 65537');
  t.equal(configError({ LDBOX_RUNNING_RECORD_DELAY_MS: '-1' }), 'LDBOX_RUNNING_RECORD_DELAY_MS must be a whole number from 0 to 60000, got "-1"');
  t.equal(configError({ LDBOX_RUNNING_RECORD_DELAY_MS: '60001' }), 'LDBOX_RUNNING_RECORD_DELAY_MS must be from 0 to 60000, got 60001');
  t.equal(configError({ LDBOX_EXECUTOR_ACK_WAIT_MS: '30s' }), 'LDBOX_EXECUTOR_ACK_WAIT_MS must be a whole number from 1000 to 3600000, got "30s"');
  t.equal(configError({ LDBOX_EXECUTOR_ACK_WAIT_MS: '999' }), 'LDBOX_EXECUTOR_ACK_WAIT_MS must be from 1000 to 3600000, got 999');
  t.equal(configError({ LDBOX_EXECUTOR_ACK_WAIT_MS: '3600001' }), 'LDBOX_EXECUTOR_ACK_WAIT_MS must be from 1000 to 3600000, got 3600001');
  t.equal(configError({ LDBOX_EXECUTOR_MAX_ATTEMPTS: 'five' }), 'LDBOX_EXECUTOR_MAX_ATTEMPTS must be a whole number from 1 to 100, got "five"');
  t.equal(configError({ LDBOX_EXECUTOR_MAX_ATTEMPTS: '0' }), 'LDBOX_EXECUTOR_MAX_ATTEMPTS must be from 1 to 100, got 0');
  t.equal(configError({ LDBOX_EXECUTOR_MAX_ATTEMPTS: '101' }), 'LDBOX_EXECUTOR_MAX_ATTEMPTS must be from 1 to 100, got 101');
  t.equal(configError({ LDBOX_MAX_TIMEOUT_MS: '2m' }), 'LDBOX_MAX_TIMEOUT_MS must be a whole number from 100 to 3600000, got "2m"');
  t.equal(configError({ LDBOX_MAX_TIMEOUT_MS: '99' }), 'LDBOX_MAX_TIMEOUT_MS must be from 100 to 3600000, got 99');
  t.equal(configError({ LDBOX_MAX_TIMEOUT_MS: '3600001' }), 'LDBOX_MAX_TIMEOUT_MS must be from 100 to 3600000, got 3600001');
  t.equal(
    configError({ LDBOX_EXECUTOR_PORT: '99999999999999999999' }),
    'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "99999999999999999999"',
    'beyond a safe integer',
  );

  // Host.
  t.equal(configError({ LDBOX_EXECUTOR_HOST: 'a b' }), 'LDBOX_EXECUTOR_HOST must be a host name or IP address, got "a b"');
  t.equal(configError({ LDBOX_EXECUTOR_HOST: 'http://x' }), 'LDBOX_EXECUTOR_HOST must be a host name or IP address, got "http://x"');

  // NATS_URL.
  for (const bad of ['http://nats:4222', 'nats://nats:4222/', 'nats://', 'nats host', 'host:abc', 'nats://x:123456']) {
    t.equal(configError({ NATS_URL: bad }), `NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "${bad}"`, bad);
  }

  // LDBOX_RUNNER_URLS.
  t.same(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'https://runner:50051, http://b:2' }).runnerUrls, ['https://runner:50051', 'http://b:2'], 'https:// runners');
  for (const bad of ['grpc://runner:50051', 'h2c://runner:50051', 'runner:50051', 'ftp://runner']) {
    t.equal(configError({ LDBOX_RUNNER_URLS: bad }), runnerUrlMessage(bad), `scheme: ${bad}`);
  }
  for (const bad of ['http://user:pass@runner:50051', 'http://user@runner:50051', 'http://:pass@runner:50051']) {
    t.equal(configError({ LDBOX_RUNNER_URLS: bad }), runnerUrlMessage('http://***@runner:50051'), `credentials, not echoed: ${bad}`);
  }
  for (const bad of ['http://runner:50051/runner', 'http://runner:50051/x/']) {
    t.equal(configError({ LDBOX_RUNNER_URLS: bad }), runnerUrlMessage(bad), `a path (every call would get 404): ${bad}`);
  }
  t.same(loadExecutorConfig({ LDBOX_RUNNER_URLS: 'HTTP://Runner:50051/' }).runnerUrls, ['http://runner:50051'], 'kept as the parsed origin');
  t.equal(configError({ LDBOX_RUNNER_URLS: 'http://runner:50051?x=1' }), runnerUrlMessage('http://runner:50051?x=1'), 'query');
  t.equal(configError({ LDBOX_RUNNER_URLS: 'http://runner:50051#frag' }), runnerUrlMessage('http://runner:50051#frag'), 'fragment');
  for (const bad of ['not a url', '127.0.0.1:50051', 'http://', 'http://runner:99999', '://x']) {
    t.equal(configError({ LDBOX_RUNNER_URLS: bad }), notAUrlMessage(bad), `garbage: ${bad}`);
  }
  t.equal(
    configError({ LDBOX_RUNNER_URLS: 'http://a:1, grpc://b:2 ,http://c:3' }),
    runnerUrlMessage('grpc://b:2'),
    'one bad entry in a list fails the list, naming the entry (trimmed)',
  );
  t.equal(configError({ LDBOX_RUNNER_URLS: 'http://a:1,,garbage' }), notAUrlMessage('garbage'));

  // LDBOX_RUNNER_TOKEN.
  t.equal(configError({ LDBOX_RUNNER_TOKEN: 'short' }), 'LDBOX_RUNNER_TOKEN must be at least 16 characters long');
  t.equal(configError({ LDBOX_RUNNER_TOKEN: 'x'.repeat(15) }), 'LDBOX_RUNNER_TOKEN must be at least 16 characters long');
  t.notOk(configError({ LDBOX_RUNNER_TOKEN: 'short' })!.includes('short'), 'the message does not echo the secret');

  // Order: NATS_URL and the runner URLs are checked before the numbers.
  t.equal(
    configError({ NATS_URL: 'http://x', LDBOX_EXECUTOR_PORT: 'abc' }),
    'NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "http://x"',
  );
});
