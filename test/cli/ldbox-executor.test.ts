/**
 * `ldbox executor` as an operator runs it: the real bin script in a child process. A bad environment
 * exits 2 with `configuration error: ...`; a good one prints `executor: http://host:port ...` with the
 * bound port, serves /healthz (and /readyz once NATS and the gateway's buckets are there), and exits 0
 * promptly on SIGTERM.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import t, { type Test } from 'tap';
import { gatewayFixture } from '../gateway/harness.js';
import { freePort } from '../helpers/nats-server.js';
import { waitFor } from '../nats/util.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { BIN, nodeChild } from '../helpers/ldbox-cli.js';

/** The caller's environment without stray ldbox settings, plus `env`. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LDBOX_') && !k.startsWith('NATS_')));
  return { ...base, LDBOX_DATA_KEY: TEST_DATA_KEY, ...env };
}

function runToExit(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(...nodeChild([BIN, 'executor']), { env: cleanEnv(env), timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

interface Served {
  proc: ChildProcess;
  /** The URL of the `executor: ...` line. */
  url: string;
  line: string;
  output(): string;
  /** Resolves with the exit code and signal. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

// The subtests share nothing (each starts its own executor, NATS or port holder): two run at a time.
t.jobs = 2;

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Spawns `ldbox executor` and resolves once it printed its URL line; SIGKILLed at test end if still running. */
async function serve(t: Test, env: Record<string, string>): Promise<Served> {
  const proc = spawn(...nodeChild([BIN, 'executor']), { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.once('exit', (code, signal) => {
      live.delete(proc);
      r({ code, signal });
    }),
  );
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exit;
  });
  let out = '';
  let stdout = '';
  proc.stdout!.on('data', (d: Buffer) => ((stdout += d.toString('utf8')), (out += d.toString('utf8'))));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "executor:" line within 15 s:\n${out}`)), 15_000);
    const check = () => {
      const m = /^executor: .*$/m.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    };
    proc.stdout!.on('data', check);
    void exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`ldbox executor exited (${code ?? signal}) before printing its URL:\n${out}`));
    });
  });
  const url = /^executor: (http:\/\/\S+) /.exec(line)?.[1];
  if (!url) throw new Error(`unexpected line: ${line}`);
  return { proc, url, line, output: () => out, exit };
}

/** SIGTERM, then the exit code and how long the exit took. */
async function terminate(s: Served): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const t0 = Date.now();
  s.proc.kill('SIGTERM');
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 15_000);
  const r = await s.exit;
  clearTimeout(timer);
  return { ...r, ms: Date.now() - t0 };
}

t.test('a bad environment exits 2 with "configuration error: ..." on stderr', async (t) => {
  // A few representative rules; test/config/executor-config.test.ts has every message.
  const cases: [Record<string, string>, string][] = [
    [{ LDBOX_EXECUTOR_PORT: 'abc' }, 'LDBOX_EXECUTOR_PORT must be a whole number from 0 to 65535, got "abc"'],
    [{ NATS_URL: 'http://nats:4222' }, 'NATS_URL must be nats://host:port, tls://host:port or host:port (comma-separated), got "http://nats:4222"'],
    [
      { LDBOX_RUNNER_URLS: 'http://a:1,grpc://runner:50051' },
      'LDBOX_RUNNER_URLS: "grpc://runner:50051" must be http://host:port or https://host:port (HTTP/2 cleartext or over TLS; no credentials, path, query or fragment)',
    ],
    [{ LDBOX_RUNNER_TOKEN: 'short' }, 'LDBOX_RUNNER_TOKEN must be at least 16 characters long'],
  ];
  await Promise.all(
    cases.map(async ([env, message]) => {
      const r = await runToExit(env);
      const what = JSON.stringify(env);
      t.equal(r.code, 2, `exit code, ${what}`);
      t.equal(r.stderr, `configuration error: ${message}\n`, `stderr, ${what}`);
      t.equal(r.stdout, '', `nothing on stdout, ${what}`);
    }),
  );
});

t.test('a good environment: prints its bound URL, /healthz and /readyz answer, SIGTERM exits 0 promptly', async (t) => {
  const gw = await gatewayFixture(t); // nats-server plus the stream and buckets the executor opens
  const s = await serve(t, {
    NATS_URL: gw.nats.url,
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_RUNNER_URLS: 'http://127.0.0.1:50051/, http://127.0.0.2:50052',
  });
  t.match(s.line, /^executor: http:\/\/127\.0\.0\.1:\d+ \(\/healthz, \/readyz, \/metrics\); runners http:\/\/127\.0\.0\.1:50051, http:\/\/127\.0\.0\.2:50052$/);
  const port = Number(new URL(s.url).port);
  t.not(port, 0, 'the printed port is the bound one, not the configured 0');
  const health = await fetch(`${s.url}/healthz`);
  t.equal(health.status, 200);
  t.same(await health.json(), { status: 'ok' });
  await waitFor(async () => (await fetch(`${s.url}/readyz`)).status === 200, 15_000, 'readyz 200').catch((err) => {
    throw new Error(`${(err as Error).message}\n${s.output()}`);
  });
  t.match(await (await fetch(`${s.url}/metrics`)).text(), /ldbox_executor_concurrency 16/);

  const r = await terminate(s);
  t.equal(r.code, 0, `exit code 0 after SIGTERM\n${s.output()}`);
  t.equal(r.signal, null);
  t.ok(r.ms < 5000, `exited promptly (${r.ms} ms)`);
  t.match(s.output(), /"msg":"executor stopped"/, 'it logged its orderly stop');
});

t.test('NATS not there yet: it still starts and serves /healthz (not ready), and SIGTERM still exits 0 promptly', async (t) => {
  const deadPort = await freePort();
  const s = await serve(t, { NATS_URL: `nats://127.0.0.1:${deadPort}`, LDBOX_EXECUTOR_PORT: '0' });
  t.not(Number(new URL(s.url).port), 0);
  t.equal((await fetch(`${s.url}/healthz`)).status, 200);
  const ready = await fetch(`${s.url}/readyz`);
  t.equal(ready.status, 503);
  t.match(await ready.json(), { status: 'not_ready', consumerReady: false });
  const r = await terminate(s);
  t.equal(r.code, 0, `exit code 0 after SIGTERM\n${s.output()}`);
  t.ok(r.ms < 5000, `exited promptly (${r.ms} ms)`);
});

t.test('its port taken: exits 1 with a one-line message, not a stack trace', async (t) => {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => taken.close());
  const port = (taken.address() as import('node:net').AddressInfo).port;
  // NATS is not reachable on purpose: the process must still exit (nothing left holding it open).
  const r = await runToExit({ LDBOX_EXECUTOR_PORT: String(port), NATS_URL: `nats://127.0.0.1:${await freePort()}` });
  t.equal(r.code, 1);
  t.match(r.stderr, `ldbox executor: cannot listen on 127.0.0.1:${port}: the address is in use (EADDRINUSE)`);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
});
