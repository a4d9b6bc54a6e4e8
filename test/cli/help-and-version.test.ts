/**
 * `ldbox --help`, `ldbox <command> --help` and `ldbox --version`: they print and exit 0 by themselves,
 * and a command's --help starts nothing (its port stays free).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { COMMAND_SETTINGS } from '../../src/cli/known-settings.js';
import { freePort } from '../helpers/nats-server.js';
import { BIN, cleanEnv, ldbox, nodeChild } from '../helpers/ldbox-cli.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** True when nothing listens on 127.0.0.1:`port` (we can bind it ourselves). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

t.test('--version prints the package version', async (t) => {
  for (const flag of ['--version', '-v']) {
    const r = await ldbox([flag]);
    t.equal(r.code, 0, flag);
    t.equal(r.stdout, `${VERSION}\n`, flag);
    t.equal(r.stderr, '', flag);
  }
});

t.test('--help lists the commands', async (t) => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    const r = await ldbox(args);
    t.equal(r.code, 0, args.join(' '));
    t.match(r.stdout, /^usage: ldbox <command> \[--help\]\n/, args.join(' '));
    for (const cmd of ['dev', 'runner', 'gateway', 'executor', 'run FILE.js', 'check FILE.js'])
      t.match(r.stdout, `\n  ${cmd} `, `${args.join(' ')} lists ${cmd}`);
    t.equal(r.stderr, '');
  }
  const none = await ldbox([]);
  t.equal(none.code, 2, 'no command: usage, exit 2');
  t.match(none.stdout, /^usage: ldbox <command>/);
});

t.test('<command> --help prints usage and settings and starts nothing', async (t) => {
  for (const command of ['runner', 'gateway', 'executor', 'dev', 'run', 'check'] as const) {
    const port = await freePort();
    // Every role would listen on `port`, and `dev` would start nats-server there, if --help started anything.
    const env = {
      LDBOX_RUNNER_PORT: String(port),
      LDBOX_GATEWAY_PORT: String(port),
      LDBOX_EXECUTOR_PORT: String(port),
      LDBOX_NATS_PORT: String(port),
      LDBOX_ADMIN_TOKEN: 'test-admin-token-0123456789',
    };
    const r = await ldbox([command, '--help'], env);
    t.equal(r.code, 0, `${command} --help exits 0 by itself`);
    t.equal(r.signal, null, `${command} --help was not killed`);
    t.equal(r.stderr, '', `${command}: nothing on stderr`);
    t.match(r.stdout, new RegExp(`^usage: ldbox ${command} `), `${command}: its usage first`);
    t.match(r.stdout, '\nSettings (environment):\n');
    for (const s of COMMAND_SETTINGS[command]) t.match(r.stdout, new RegExp(`\\n  ${s.name} +\\S`), `${command} --help shows ${s.name}`);
    t.match(r.stdout, /\n {2}LDBOX_\w+ +\S+ +\S/, 'name, default, meaning');
    t.ok(await portIsFree(port), `${command} --help left port ${port} free`);
  }
  const runner = await ldbox(['runner', '-h']);
  t.match(runner.stdout, /\n {2}LDBOX_MAX_CODE_BYTES +1MiB +largest code, in bytes or with a unit \[1KiB to 64MiB\]\n/, 'a size setting: default and range');
  t.match(runner.stdout, /\n {2}LDBOX_LOG_LEVEL +info +service log level \(JSON lines on stdout\) \[fatal, error, warn, info, debug, trace, silent\]\n/);
});

t.test('bad arguments of a command: one line, exit 2, nothing started', async (t) => {
  const cases: [string[], string][] = [
    [['runner', 'extra'], 'unexpected argument "extra"\nsee \'ldbox runner --help\'\n'],
    [['gateway', '--port', '1'], "unknown option --port\nsee 'ldbox gateway --help'\n"],
    [['executor', '--help=yes'], "--help takes no value\nsee 'ldbox executor --help'\n"],
  ];
  for (const [args, stderr] of cases) {
    const r = await ldbox(args);
    t.equal(r.code, 2, args.join(' '));
    t.equal(r.stderr, stderr, args.join(' '));
    t.equal(r.stdout, '', args.join(' '));
  }
});

/** The URLs of the modules `ldbox ARGS` loads (node --import ../helpers/log-module-loads.js), and its exit code. */
async function modulesLoadedBy(t: Test, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; urls: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-loads-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = join(dir, 'loads.txt');
  const hooks = fileURLToPath(new URL('../helpers/log-module-loads.js', import.meta.url));
  const code = await new Promise<number | null>((resolve) => {
    const child = execFile(...nodeChild(['--import', hooks, BIN, ...args]), { env: { ...cleanEnv(env), MODULE_LOAD_LOG: log }, timeout: 20_000 }, () =>
      resolve(child.exitCode),
    );
  });
  return { code, urls: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

/** What a role, the pool or NATS brings in: none of it is needed to print usage or a configuration error. */
const HEAVY = [
  /\/gateway\/gateway-server\.js$/,
  /\/src\/executor\/executor-service\.js$/,
  /\/runner\/(server|pool|sandbox)\//,
  /\/node_modules\/(piscina|quickjs-emscripten|@nats-io|@grpc)\//,
  /\/typescript\//,
];

t.test("--help, --version and a command's --help load no role, pool, NATS client or TypeScript", async (t) => {
  // The control: starting the gateway loads it (here it stops at once, on a bad port).
  const control = await modulesLoadedBy(t, ['gateway'], { LDBOX_GATEWAY_PORT: 'x' });
  t.equal(control.code, 2, 'the gateway with a bad port exits 2');
  t.ok(
    control.urls.some((u) => u.endsWith('/gateway/gateway-server.js')),
    'the log sees the gateway loaded when it starts',
  );
  for (const args of [['--version'], ['--help'], ...['runner', 'gateway', 'executor', 'dev', 'run', 'check', 'reencrypt'].map((c) => [c, '--help'])]) {
    const { code, urls } = await modulesLoadedBy(t, args);
    t.equal(code, 0, args.join(' '));
    t.ok(
      urls.some((u) => u.endsWith('/src/cli/main.js')),
      `${args.join(' ')}: the log has the CLI`,
    );
    t.same(
      urls.filter((u) => HEAVY.some((re) => re.test(u))),
      [],
      `${args.join(' ')} loads none of them`,
    );
  }
});
