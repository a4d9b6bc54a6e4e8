/**
 * A configuration error of any command: exit code 2 and exactly one line on stderr, naming the variable
 * and the accepted values, no stack; nothing on stdout.
 */
import t from 'tap';
import { inParallel, ldbox } from '../helpers/ldbox-cli.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';

const NO_KEY =
  'LDBOX_DATA_KEY (or LDBOX_DATA_KEY_FILE) is required: the base64 of 32 random bytes that encrypts stored secrets (generate one with: openssl rand -base64 32)';

const KEY = { LDBOX_DATA_KEY: TEST_DATA_KEY };
const TOKEN = { LDBOX_ADMIN_TOKEN: 'test-admin-token-0123456789', ...KEY };

t.test('each command refuses a bad setting with exit 2 and one line', async (t) => {
  const cases: [string[], Record<string, string>, string][] = [
    [['runner'], { LDBOX_LOG_LEVEL: 'verbose' }, 'LDBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [['gateway'], { ...TOKEN, LDBOX_LOG_LEVEL: 'verbose' }, 'LDBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [['executor'], { ...KEY, LDBOX_LOG_LEVEL: 'loud' }, 'LDBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"'],
    [['dev'], { LDBOX_LOG_LEVEL: 'verbose' }, 'LDBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [['runner'], { LDBOX_POOL_SIZE: 'abc' }, 'LDBOX_POOL_SIZE must be a whole number from 1 to 256, got "abc"'],
    [
      ['runner'],
      { LDBOX_MAX_RESULT_BYTES: '8M' },
      'LDBOX_MAX_RESULT_BYTES must name its unit unambiguously: "8M" could be 8MiB (8388608 bytes) or 8MB (8000000 bytes)',
    ],
    [['runner'], { LDBOX_MAX_MEMORY_MB: 'lots' }, 'LDBOX_MAX_MEMORY_MB must be a size: MiB (64) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "lots"'],
    [['gateway'], { ...TOKEN, LDBOX_MAX_BODY_BYTES: '1GiB' }, 'LDBOX_MAX_BODY_BYTES must be from 1KiB to 64MiB, got "1GiB" (1073741824 bytes)'],
    [['gateway'], {}, 'LDBOX_ADMIN_TOKEN is required: the control plane (WorkflowService) accepts only `Authorization: Bearer $LDBOX_ADMIN_TOKEN`'],
    [['executor'], { LDBOX_EXECUTOR_PORT: '70000' }, 'LDBOX_EXECUTOR_PORT must be from 0 to 65535, got 70000'],
    [['gateway'], { LDBOX_ADMIN_TOKEN: TOKEN.LDBOX_ADMIN_TOKEN }, NO_KEY],
    [['executor'], {}, NO_KEY],
    [['reencrypt'], {}, NO_KEY],
    [['executor'], { LDBOX_DATA_KEY: Buffer.alloc(16).toString('base64') }, 'LDBOX_DATA_KEY must be the base64 of 32 bytes, got 16 bytes'],
    [['gateway'], { ...TOKEN, LDBOX_DATA_KEY_FILE: '/nonexistent/ldbox-key' }, 'LDBOX_DATA_KEY and LDBOX_DATA_KEY_FILE are both set: set one of them'],
    [['reencrypt'], { LDBOX_DATA_KEY_FILE: '/nonexistent/ldbox-key' }, 'LDBOX_DATA_KEY_FILE: cannot read "/nonexistent/ldbox-key" (ENOENT)'],
    [['dev'], { LDBOX_NATS_PORT: 'x' }, 'LDBOX_NATS_PORT must be a whole number from 0 to 65535, got "x"'],
    [
      ['gateway'],
      { ...TOKEN, NATS_URL: 'nats://app:hunter2@nats host:4222' },
      'NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "nats://***@nats host:4222"',
    ],
    [
      ['executor'],
      { NATS_URL: 'nats://app:hunter2@nats:4222', NATS_TOKEN: 'tok-hunter2' },
      'NATS takes one way of authenticating, got a user:password in NATS_URL and NATS_TOKEN',
    ],
    [['executor'], { NATS_CREDS: '/nonexistent/app.creds' }, 'NATS_CREDS must be a readable file, got "/nonexistent/app.creds" (ENOENT)'],
    [['dev'], { NATS_URL: 'nats://a:4222', NATS_CERT: '/nonexistent/client.pem' }, 'NATS_CERT must be a readable file, got "/nonexistent/client.pem" (ENOENT)'],
    [
      ['run', 'examples/hello.js'],
      { LDBOX_MAX_CODE_BYTES: '2 bananas' },
      'LDBOX_MAX_CODE_BYTES must be a size: bytes (1048576) or a number with a unit (512KiB, 8MiB, 1GiB, 8MB), got "2 bananas"',
    ],
  ];
  // Each case is its own process that stops at its settings: they run a few at a time.
  const results = await inParallel(cases, ([args, env]) => ldbox(args, { LDBOX_DATA_DIR: t.testdirName, ...env }));
  for (const [i, [args, env, message]] of cases.entries()) {
    const what = `${args.join(' ')} ${JSON.stringify(env)}`;
    const r = results[i]!;
    t.equal(r.code, 2, `exit code, ${what}`);
    t.equal(r.stderr, `configuration error: ${message}\n`, `stderr, ${what}`);
    t.equal(r.stdout, '', `stdout, ${what}`);
    t.notOk(r.stderr.includes('hunter2'), `no credential echoed, ${what}`);
  }
});
