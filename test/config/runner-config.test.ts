/**
 * `loadRunnerConfig`: the defaults, and every rule's exact message for a bad value
 * (runner/config/runner-config.ts, src/config/env-parsers.ts).
 */
import { availableParallelism } from 'node:os';
import t from 'tap';
import { ConfigError } from '../../src/config/env-parsers.js';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';

const MiB = 1024 * 1024;

/** The ConfigError `loadRunnerConfig(env)` throws; fails the test when it does not throw one. */
function configError(env: Record<string, string | undefined>): ConfigError | undefined {
  try {
    loadRunnerConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  return undefined;
}

t.test('defaults', async (t) => {
  const cores = availableParallelism();
  const c = loadRunnerConfig({});
  t.equal(c.port, 50051, 'port');
  t.equal(c.host, '127.0.0.1', 'host');
  t.equal(c.token, undefined, 'no token');
  t.equal(c.maxCodeBytes, 1 * MiB, 'maxCodeBytes: 1 MiB');
  t.equal(c.maxInputBytes, 4 * MiB, 'maxInputBytes: 4 MiB');
  t.same(
    c.pool,
    {
      size: Math.max(1, cores),
      concurrentPerWorker: 4,
      maxInflight: 10_000,
      maxQueue: 64 * Math.max(1, cores),
      idleTimeoutMs: 60_000,
      defaultTimeoutMs: 30_000,
      maxTimeoutMs: 120_000,
      defaultMemoryBytes: 64 * MiB,
      maxMemoryBytes: 512 * MiB,
      minMemoryBytes: 4 * MiB,
      maxResultBytes: 8 * MiB,
      maxLogEntries: 1000,
      maxLogChars: 1 * MiB,
      workerHeapMb: 512,
      workerNice: 10,
      recycleAboveBytes: 32 * MiB,
      sandboxStackBytes: 1 * MiB,
      builtins: { egressAllow: [], maxResponseBytes: 32 * MiB, maxRequestsPerCall: 100 },
    },
    'pool defaults',
  );
});

t.test('empty strings count as unset', async (t) => {
  const c = loadRunnerConfig({ LDBOX_RUNNER_PORT: '', LDBOX_RUNNER_HOST: '', LDBOX_RUNNER_TOKEN: '', LDBOX_POOL_SIZE: '  ' });
  t.equal(c.port, 50051);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.token, undefined);
  t.equal(c.pool.size, Math.max(1, availableParallelism()));
});

t.test('values are read and filled in', async (t) => {
  const c = loadRunnerConfig({
    LDBOX_RUNNER_PORT: '0',
    LDBOX_RUNNER_HOST: '0.0.0.0',
    LDBOX_RUNNER_TOKEN: 'x'.repeat(16),
    LDBOX_POOL_SIZE: ' 3 ',
    LDBOX_POOL_CONCURRENCY: '2',
    LDBOX_MAX_TIMEOUT_MS: '5000',
    LDBOX_MAX_MEMORY_MB: '32',
    LDBOX_MAX_CODE_BYTES: '2048',
    LDBOX_MAX_INPUT_BYTES: '4096',
    LDBOX_MAX_LOG_ENTRIES: '5',
    LDBOX_RECYCLE_ABOVE_MB: '16',
  });
  t.equal(c.port, 0);
  t.equal(c.host, '0.0.0.0');
  t.equal(c.token, 'x'.repeat(16), 'a 16-character token is accepted');
  t.equal(c.pool.size, 3, 'surrounding blanks are allowed');
  t.equal(c.pool.maxQueue, 64 * 3, 'maxQueue defaults to 64 per worker');
  t.equal(c.pool.concurrentPerWorker, 2);
  t.equal(c.pool.maxTimeoutMs, 5000);
  t.equal(c.pool.defaultTimeoutMs, 5000, 'the default timeout is lowered to a smaller maximum');
  t.equal(c.pool.maxMemoryBytes, 32 * MiB);
  t.equal(c.pool.defaultMemoryBytes, 32 * MiB, 'the default memory is lowered to a smaller maximum');
  t.equal(c.maxCodeBytes, 2048);
  t.equal(c.maxInputBytes, 4096);
  t.equal(c.pool.maxLogEntries, 5);
  t.equal(c.pool.recycleAboveBytes, 16 * MiB);
});

t.test('whole numbers', async (t) => {
  const cases: [string, string, string][] = [
    ['LDBOX_POOL_SIZE', 'abc', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "abc"'],
    ['LDBOX_POOL_SIZE', '1.5', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "1.5"'],
    ['LDBOX_POOL_SIZE', '-1', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "-1"'],
    ['LDBOX_POOL_SIZE', '1e2', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "1e2"'],
    ['LDBOX_POOL_SIZE', '0x10', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "0x10"'],
    ['LDBOX_POOL_SIZE', '99999999999999999999', 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "99999999999999999999"'],
    ['LDBOX_RUNNER_PORT', '80a', 'LDBOX_RUNNER_PORT must be a whole number from 0 to 65535, got "80a"'],
    ['LDBOX_WORKER_NICE', '-5', 'LDBOX_WORKER_NICE must be a whole number from 0 to 19, got "-5"'],
    ['LDBOX_TIMEOUT_MS', '1s', 'LDBOX_TIMEOUT_MS must be a whole number from 100 to 3600000, got "1s"'],
  ];
  for (const [name, value, message] of cases) {
    const err = configError({ [name]: value });
    t.equal(err?.name, 'ConfigError', `${name}=${value}: a ConfigError`);
    t.equal(err?.message, message, `${name}=${value}`);
  }
});

t.test('ranges', async (t) => {
  const cases: [string, string, string][] = [
    ['LDBOX_POOL_SIZE', '0', 'LDBOX_POOL_SIZE must be from 1 to 256, got 0'],
    ['LDBOX_POOL_SIZE', '257', 'LDBOX_POOL_SIZE must be from 1 to 256, got 257'],
    ['LDBOX_RUNNER_PORT', '65536', 'LDBOX_RUNNER_PORT must be from 0 to 65535, got 65536'],
    ['LDBOX_SANDBOX_STACK', '2MiB', 'LDBOX_SANDBOX_STACK must be from 128KiB to 1MiB, got "2MiB" (2097152 bytes)'],
    ['LDBOX_SANDBOX_STACK', '64KiB', 'LDBOX_SANDBOX_STACK must be from 128KiB to 1MiB, got "64KiB" (65536 bytes)'],
    ['LDBOX_POOL_CONCURRENCY', '0', 'LDBOX_POOL_CONCURRENCY must be from 1 to 64, got 0'],
    ['LDBOX_WORKER_NICE', '20', 'LDBOX_WORKER_NICE must be from 0 to 19, got 20'],
    ['LDBOX_POOL_CONCURRENCY', '65', 'LDBOX_POOL_CONCURRENCY must be from 1 to 64, got 65'],
    ['LDBOX_POOL_MAX_QUEUE', '1000001', 'LDBOX_POOL_MAX_QUEUE must be from 0 to 1000000, got 1000001'],
    ['LDBOX_POOL_IDLE_TIMEOUT_MS', '86400001', 'LDBOX_POOL_IDLE_TIMEOUT_MS must be from 0 to 86400000, got 86400001'],
    ['LDBOX_MAX_TIMEOUT_MS', '99', 'LDBOX_MAX_TIMEOUT_MS must be from 100 to 3600000, got 99'],
    ['LDBOX_MAX_TIMEOUT_MS', '3600001', 'LDBOX_MAX_TIMEOUT_MS must be from 100 to 3600000, got 3600001'],
    ['LDBOX_TIMEOUT_MS', '99', 'LDBOX_TIMEOUT_MS must be from 100 to 3600000, got 99'],
    ['LDBOX_MAX_MEMORY_MB', '7', 'LDBOX_MAX_MEMORY_MB must be from 8MiB to 2000MiB, got "7" (7340032 bytes)'],
    ['LDBOX_MAX_MEMORY_MB', '2001', 'LDBOX_MAX_MEMORY_MB must be from 8MiB to 2000MiB, got "2001" (2098200576 bytes)'],
    ['LDBOX_MEMORY_MB', '7', 'LDBOX_MEMORY_MB must be from 8MiB to 2000MiB, got "7" (7340032 bytes)'],
    ['LDBOX_MAX_CODE_BYTES', '1023', 'LDBOX_MAX_CODE_BYTES must be from 1KiB to 64MiB, got "1023" (1023 bytes)'],
    ['LDBOX_MAX_INPUT_BYTES', '1023', 'LDBOX_MAX_INPUT_BYTES must be from 1KiB to 256MiB, got "1023" (1023 bytes)'],
    ['LDBOX_MAX_RESULT_BYTES', '1023', 'LDBOX_MAX_RESULT_BYTES must be from 1KiB to 256MiB, got "1023" (1023 bytes)'],
    ['LDBOX_MAX_LOG_ENTRIES', '0', 'LDBOX_MAX_LOG_ENTRIES must be from 1 to 1000000, got 0'],
    ['LDBOX_MAX_LOG_BYTES', '1023', 'LDBOX_MAX_LOG_BYTES must be from 1KiB to 64MiB, got "1023" (1023 bytes)'],
    ['LDBOX_WORKER_HEAP_MB', '63', 'LDBOX_WORKER_HEAP_MB must be from 64MiB to 16GiB, got "63" (66060288 bytes)'],
    ['LDBOX_RECYCLE_ABOVE_MB', '15', 'LDBOX_RECYCLE_ABOVE_MB must be from 16MiB to 4GiB, got "15" (15728640 bytes)'],
    ['LDBOX_MAX_RESPONSE_BYTES', '1023', 'LDBOX_MAX_RESPONSE_BYTES must be from 1KiB to 1GiB, got "1023" (1023 bytes)'],
    ['LDBOX_MAX_REQUESTS_PER_CALL', '0', 'LDBOX_MAX_REQUESTS_PER_CALL must be from 1 to 100000, got 0'],
  ];
  for (const [name, value, message] of cases) {
    const err = configError({ [name]: value });
    t.equal(err?.name, 'ConfigError', `${name}=${value}: a ConfigError`);
    t.equal(err?.message, message, `${name}=${value}`);
  }
});

t.test('the bounds themselves are accepted', async (t) => {
  t.equal(loadRunnerConfig({ LDBOX_POOL_SIZE: '1' }).pool.size, 1);
  t.equal(loadRunnerConfig({ LDBOX_POOL_SIZE: '256' }).pool.size, 256);
  t.equal(loadRunnerConfig({ LDBOX_RUNNER_PORT: '65535' }).port, 65535);
  t.equal(loadRunnerConfig({ LDBOX_POOL_MAX_QUEUE: '0' }).pool.maxQueue, 0);
  t.equal(loadRunnerConfig({ LDBOX_TIMEOUT_MS: '120000' }).pool.defaultTimeoutMs, 120_000, 'default = maximum');
});

t.test('default timeout and memory must not exceed their maxima', async (t) => {
  t.equal(
    configError({ LDBOX_TIMEOUT_MS: '5001', LDBOX_MAX_TIMEOUT_MS: '5000' })?.message,
    'LDBOX_TIMEOUT_MS (5001) must not exceed LDBOX_MAX_TIMEOUT_MS (5000)',
  );
  t.equal(
    configError({ LDBOX_TIMEOUT_MS: '120001' })?.message,
    'LDBOX_TIMEOUT_MS (120001) must not exceed LDBOX_MAX_TIMEOUT_MS (120000)',
    'against the default maximum',
  );
  t.equal(configError({ LDBOX_MEMORY_MB: '65', LDBOX_MAX_MEMORY_MB: '64' })?.message, 'LDBOX_MEMORY_MB (65) must not exceed LDBOX_MAX_MEMORY_MB (64)');
  t.equal(configError({ LDBOX_MEMORY_MB: '513' })?.message, 'LDBOX_MEMORY_MB (513) must not exceed LDBOX_MAX_MEMORY_MB (512)', 'against the default maximum');
});

t.test('runner token', async (t) => {
  const err = configError({ LDBOX_RUNNER_TOKEN: 'x'.repeat(15) });
  t.equal(err?.name, 'ConfigError');
  t.equal(err?.message, 'LDBOX_RUNNER_TOKEN must be at least 16 characters long');
  t.equal(loadRunnerConfig({ LDBOX_RUNNER_TOKEN: 'y'.repeat(32) }).token, 'y'.repeat(32));
});

t.test('host', async (t) => {
  t.equal(loadRunnerConfig({ LDBOX_RUNNER_HOST: '::1' }).host, '::1');
  t.equal(loadRunnerConfig({ LDBOX_RUNNER_HOST: 'runner-1.internal', LDBOX_RUNNER_TOKEN: 'x'.repeat(16) }).host, 'runner-1.internal');
  t.equal(configError({ LDBOX_RUNNER_HOST: 'a b' })?.message, 'LDBOX_RUNNER_HOST must be a host name or IP address, got "a b"');
  t.equal(configError({ LDBOX_RUNNER_HOST: 'http://x' })?.message, 'LDBOX_RUNNER_HOST must be a host name or IP address, got "http://x"');
});

t.test('LDBOX_EGRESS_ALLOW is a comma-separated list', async (t) => {
  t.same(loadRunnerConfig({ LDBOX_EGRESS_ALLOW: ' api.example.com, 10.0.0.0/8 ,,*.internal ' }).pool.builtins.egressAllow, [
    'api.example.com',
    '10.0.0.0/8',
    '*.internal',
  ]);
  t.same(loadRunnerConfig({}).pool.builtins.egressAllow, []);
  t.throws(() => loadRunnerConfig({ LDBOX_EGRESS_ALLOW: 'api.example.com, not a host!' }), {
    name: 'ConfigError',
    message: 'LDBOX_EGRESS_ALLOW: "not a host!" is not a host name, *.suffix, IP address or CIDR',
  });
});
