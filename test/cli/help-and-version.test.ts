/**
 * `ldbox --help`, `ldbox <command> --help` and `ldbox --version`: they print and exit 0 by themselves,
 * and a command's --help starts nothing (its port stays free).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { COMMAND_SETTINGS } from '../../src/cli/known-settings.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { freePort } from '../helpers/nats-server.js';
import { BIN, cleanEnv, inParallel, ldbox, nodeChild } from '../helpers/ldbox-cli.js';

// Every invocation here is a short node start that prints and exits; the subtests share nothing, so two
// run at a time, each running its invocations a few at a time (inParallel).
t.jobs = 2;

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
  const flags = ['--version', '-v'];
  const results = await inParallel(flags, (flag) => ldbox([flag]));
  for (const [i, flag] of flags.entries()) {
    const r = results[i]!;
    t.equal(r.code, 0, flag);
    t.equal(r.stdout, `${VERSION}\n`, flag);
    t.equal(r.stderr, '', flag);
  }
});

t.test('--help lists the commands', async (t) => {
  const variants = [['--help'], ['-h'], ['help']];
  const [results, none] = await Promise.all([inParallel(variants, (args) => ldbox(args)), ldbox([])]);
  for (const [i, args] of variants.entries()) {
    const r = results[i]!;
    t.equal(r.code, 0, args.join(' '));
    t.match(r.stdout, /^usage: ldbox <command> \[--help\]\n/, args.join(' '));
    for (const cmd of ['dev', 'runner', 'gateway', 'executor', 'run FILE.js', 'check FILE.js'])
      t.match(r.stdout, `\n  ${cmd} `, `${args.join(' ')} lists ${cmd}`);
    t.equal(r.stderr, '');
  }
  t.equal(none.code, 2, 'no command: usage, exit 2');
  t.match(none.stdout, /^usage: ldbox <command>/);
});

t.test('<command> --help prints usage and settings and starts nothing', async (t) => {
  const commands = ['runner', 'gateway', 'executor', 'dev', 'run', 'check'] as const;
  // A port of its own for each command (the invocations run at the same time), and `runner -h` alongside.
  const ports: number[] = [];
  for (const _ of commands) ports.push(await freePort());
  const [results, runner] = await Promise.all([
    inParallel([...commands.entries()], ([i, command]) => {
      const port = ports[i]!;
      // Every role would listen on `port`, and `dev` would start nats-server there, if --help started anything.
      const env = {
        LDBOX_RUNNER_PORT: String(port),
        LDBOX_GATEWAY_PORT: String(port),
        LDBOX_EXECUTOR_PORT: String(port),
        LDBOX_NATS_PORT: String(port),
        LDBOX_ADMIN_TOKEN: 'test-admin-token-0123456789',
      };
      return ldbox([command, '--help'], env);
    }),
    ldbox(['runner', '-h']),
  ]);
  for (const [i, command] of commands.entries()) {
    const r = results[i]!;
    const port = ports[i]!;
    t.equal(r.code, 0, `${command} --help exits 0 by itself`);
    t.equal(r.signal, null, `${command} --help was not killed`);
    t.equal(r.stderr, '', `${command}: nothing on stderr`);
    t.match(r.stdout, new RegExp(`^usage: ldbox ${command} `), `${command}: its usage first`);
    t.match(r.stdout, '\nSettings (environment):\n');
    for (const s of COMMAND_SETTINGS[command]) t.match(r.stdout, new RegExp(`\\n  ${s.name} +\\S`), `${command} --help shows ${s.name}`);
    t.match(r.stdout, /\n {2}LDBOX_\w+ +\S+ +\S/, 'name, default, meaning');
    t.ok(await portIsFree(port), `${command} --help left port ${port} free`);
  }
  t.match(runner.stdout, /\n {2}LDBOX_MAX_CODE_BYTES +1MiB +largest code, in bytes or with a unit \[1KiB to 64MiB\]\n/, 'a size setting: default and range');
  t.match(runner.stdout, /\n {2}LDBOX_LOG_LEVEL +info +service log level \(JSON lines on stdout\) \[fatal, error, warn, info, debug, trace, silent\]\n/);
});

t.test('bad arguments of a command: one line, exit 2, nothing started', async (t) => {
  const cases: [string[], string][] = [
    [['runner', 'extra'], 'unexpected argument "extra"\nsee \'ldbox runner --help\'\n'],
    [['gateway', '--port', '1'], "unknown option --port\nsee 'ldbox gateway --help'\n"],
    [['executor', '--help=yes'], "--help takes no value\nsee 'ldbox executor --help'\n"],
  ];
  const results = await inParallel(cases, ([args]) => ldbox(args));
  for (const [i, [args, stderr]] of cases.entries()) {
    const r = results[i]!;
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
  // The control: starting the executor loads it (here it stops at once: its port is taken, and NATS is not
  // there, so nothing holds the process open).
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const takenPort = String((taken.address() as AddressInfo).port);
  const controlEnv = { LDBOX_EXECUTOR_PORT: takenPort, NATS_URL: `nats://127.0.0.1:${await freePort()}`, LDBOX_DATA_KEY: TEST_DATA_KEY };
  const commands = [['--version'], ['--help'], ...['runner', 'gateway', 'executor', 'dev', 'run', 'check', 'reencrypt'].map((c) => [c, '--help'])];
  // All of them run a few at a time.
  const [control, badGatewayPort, ...loads] = await inParallel(
    [{ args: ['executor'], env: controlEnv }, { args: ['gateway'], env: { LDBOX_GATEWAY_PORT: 'x' } }, ...commands.map((args) => ({ args, env: {} }))],
    ({ args, env }) => modulesLoadedBy(t, args, env),
  );
  t.equal(control!.code, 1, 'the executor on a taken port exits 1');
  t.ok(
    control!.urls.some((u) => u.endsWith('/src/executor/executor-service.js')),
    'the log sees the executor loaded when it starts',
  );
  // The gateway reads its settings before it imports its module, as every role does.
  t.equal(badGatewayPort!.code, 2, 'the gateway with a bad port exits 2');
  t.ok(
    badGatewayPort!.urls.some((u) => u.endsWith('/src/cli/main.js')),
    'gateway with a bad port: the log has the CLI',
  );
  t.same(
    badGatewayPort!.urls.filter((u) => HEAVY.some((re) => re.test(u))),
    [],
    'a configuration error of the gateway loads none of them',
  );
  for (const [i, args] of commands.entries()) {
    const { code, urls } = loads[i]!;
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
