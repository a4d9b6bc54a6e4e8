/**
 * Byte-size settings accept plain numbers and units (src/config/env-parsers.ts `sizeSetting`): every
 * `…_BYTES` setting counts plain digits in bytes, every `…_MB` setting in MiB; ambiguous and invalid
 * units are refused with an exact message.
 */
import t from 'tap';
import { loadGatewayConfig } from '../../gateway/gateway-config.js';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import { configErrorMessage } from '../helpers/config-errors.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const GATEWAY = { LDBOX_ADMIN_TOKEN: 'test-admin-token-0123456789', LDBOX_DATA_KEY: Buffer.alloc(32, 1).toString('base64') };

const runnerError = (env: Record<string, string>) => configErrorMessage(loadRunnerConfig, env);

t.test('units on a …_BYTES setting', async (t) => {
  const cases: [string, number][] = [
    ['1048576', 1_048_576],
    ['512KiB', 512 * KiB],
    ['8MiB', 8 * MiB],
    ['8 MiB', 8 * MiB],
    [' 8mib ', 8 * MiB],
    ['0.0625GiB', 64 * MiB],
    ['8MB', 8_000_000],
    ['2kB', 2000],
    ['1.5MiB', 1.5 * MiB],
    ['4096B', 4096],
  ];
  for (const [raw, bytes] of cases) t.equal(loadGatewayConfig({ ...GATEWAY, LDBOX_MAX_BODY_BYTES: raw }).maxBodyBytes, bytes, raw);
});

t.test('every byte-size setting takes units', async (t) => {
  const c = loadRunnerConfig({
    LDBOX_MAX_CODE_BYTES: '2MiB',
    LDBOX_MAX_INPUT_BYTES: '3MiB',
    LDBOX_MAX_RESULT_BYTES: '16MiB',
    LDBOX_MAX_LOG_BYTES: '64KiB',
    LDBOX_MAX_RESPONSE_BYTES: '1GiB',
    LDBOX_MAX_MEMORY_MB: '1GiB',
    LDBOX_MEMORY_MB: '128MiB',
    LDBOX_WORKER_HEAP_MB: '1GiB',
    LDBOX_RECYCLE_ABOVE_MB: '64MiB',
  });
  t.equal(c.maxCodeBytes, 2 * MiB);
  t.equal(c.maxInputBytes, 3 * MiB);
  t.equal(c.pool.maxResultBytes, 16 * MiB);
  t.equal(c.pool.maxLogChars, 64 * KiB);
  t.equal(c.pool.builtins.maxResponseBytes, GiB);
  t.equal(c.pool.maxMemoryBytes, GiB);
  t.equal(c.pool.defaultMemoryBytes, 128 * MiB);
  t.equal(c.pool.workerHeapMb, 1024);
  t.equal(c.pool.recycleAboveBytes, 64 * MiB);
  t.equal(loadGatewayConfig({ ...GATEWAY, LDBOX_JOBS_MAX_BYTES: '2GiB' }).stream.maxBytes, 2 * GiB);
});

t.test('plain numbers of a …_MB setting are MiB, as before', async (t) => {
  const c = loadRunnerConfig({ LDBOX_MAX_MEMORY_MB: '256', LDBOX_MEMORY_MB: '16' });
  t.equal(c.pool.maxMemoryBytes, 256 * MiB);
  t.equal(c.pool.defaultMemoryBytes, 16 * MiB);
});

t.test('refused: exact messages', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ LDBOX_MAX_CODE_BYTES: '8M' }, 'LDBOX_MAX_CODE_BYTES must name its unit unambiguously: "8M" could be 8MiB (8388608 bytes) or 8MB (8000000 bytes)'],
    [{ LDBOX_MAX_CODE_BYTES: '8mb' }, 'LDBOX_MAX_CODE_BYTES must name its unit unambiguously: "8mb" could be 8MiB (8388608 bytes) or 8MB (8000000 bytes)'],
    [{ LDBOX_MAX_CODE_BYTES: '8Mb' }, 'LDBOX_MAX_CODE_BYTES must name its unit unambiguously: "8Mb" could be 8MiB (8388608 bytes) or 8MB (8000000 bytes)'],
    [{ LDBOX_MAX_CODE_BYTES: '2KB' }, 'LDBOX_MAX_CODE_BYTES must name its unit unambiguously: "2KB" could be 2KiB (2048 bytes) or 2kB (2000 bytes)'],
    [
      { LDBOX_MAX_CODE_BYTES: '8 parsecs' },
      'LDBOX_MAX_CODE_BYTES must be a size: bytes (1048576) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "8 parsecs"',
    ],
    [{ LDBOX_MAX_CODE_BYTES: 'MiB' }, 'LDBOX_MAX_CODE_BYTES must be a size: bytes (1048576) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "MiB"'],
    [{ LDBOX_MAX_CODE_BYTES: '-1MiB' }, 'LDBOX_MAX_CODE_BYTES must be a size: bytes (1048576) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "-1MiB"'],
    [
      { LDBOX_MAX_CODE_BYTES: '2048.5' },
      'LDBOX_MAX_CODE_BYTES must be a size: bytes (1048576) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "2048.5"',
    ],
    [{ LDBOX_MAX_CODE_BYTES: '1.0001KiB' }, 'LDBOX_MAX_CODE_BYTES must be a whole number of bytes, got "1.0001KiB" (1024.1024 bytes)'],
    [{ LDBOX_MAX_CODE_BYTES: '128MiB' }, 'LDBOX_MAX_CODE_BYTES must be from 1KiB to 64MiB, got "128MiB" (134217728 bytes)'],
    [{ LDBOX_MAX_MEMORY_MB: '64abc' }, 'LDBOX_MAX_MEMORY_MB must be a size: MiB (64) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "64abc"'],
    [{ LDBOX_MAX_MEMORY_MB: '100MB' }, 'LDBOX_MAX_MEMORY_MB must be a whole number of MiB, got "100MB" (100000000 bytes)'],
    [{ LDBOX_MAX_MEMORY_MB: '4GiB' }, 'LDBOX_MAX_MEMORY_MB must be from 8MiB to 2000MiB, got "4GiB" (4294967296 bytes)'],
  ];
  for (const [env, message] of cases) t.equal(runnerError(env), message, JSON.stringify(env));
});
