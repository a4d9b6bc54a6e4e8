/**
 * `ldbox dev` as a user starts it (the real bin script in a child process, its own nats-server), and the
 * README's quickstart block run with bash against it, word for word except for the gateway's port and the
 * data dir (the test cannot take port 8080 or write into the checkout).
 */
import { spawn, execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { BIN, nodeChild, withoutTapLoader } from '../helpers/ldbox-cli.js';

// The two subtests start an `ldbox dev` each, in data dirs and on ports of their own: they run at the same time.
t.jobs = 2;

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));

/** `ldbox dev` on ports the system picks, one worker, its data in `dataDir`, its own nats-server; `extra` on top. */
function devEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LDBOX_DATA_DIR: dataDir,
    LDBOX_GATEWAY_PORT: '0',
    LDBOX_RUNNER_PORT: '0',
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_NATS_PORT: '0',
    LDBOX_POOL_SIZE: '1',
    LDBOX_LOG_LEVEL: 'warn',
    NATS_URL: '',
    ...extra,
  };
}

/** The shell block between the quickstart markers of the README. */
function quickstartBlock(): string {
  const readme = readFileSync(README, 'utf8');
  const m = /<!-- quickstart:begin -->\s*```sh\n([\s\S]*?)```\s*<!-- quickstart:end -->/.exec(readme);
  if (!m) throw new Error('README has no quickstart block between the markers');
  return m[1]!;
}

t.test('ldbox dev runs everything; the README quickstart works against it; Ctrl-C stops it all', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ldbox-dev-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const child = spawn(...nodeChild([BIN, 'dev']), {
    env: devEnv(dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  const deadline = Date.now() + 60_000;
  while (!/ldbox dev is ready/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`ldbox dev did not get ready:\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const gateway = /gateway +(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
  t.ok(gateway, 'the gateway URL is printed');
  t.match(out, /runner +http:\/\/127\.0\.0\.1:\d+/);
  t.match(out, /executor +http:\/\/127\.0\.0\.1:\d+/);
  const consoleUrl = /console +(http:\/\/127\.0\.0\.1:\d+\/console\/)/.exec(out)?.[1];
  t.equal(consoleUrl, `${gateway}/console/`, 'the console URL is printed');
  const page = await fetch(consoleUrl!);
  t.equal(page.status, 200, 'and the console is served there');
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(out, /NATS +nats:\/\/127\.0\.0\.1:\d+/);
  const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  t.match(out, token, 'the generated admin token is printed and kept in the data dir');
  const keyFile = join(dataDir, 'data-key');
  t.equal(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64').length, 32, 'a data key is generated into the data dir');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'readable by its owner only');
  t.match(out, `data key      kept in ${keyFile}`);

  const block = quickstartBlock();
  t.match(block, /^GW=http:\/\/127\.0\.0\.1:8080$/m, 'the README uses the default port');
  const script = block.replace(/^GW=http:\/\/127\.0\.0\.1:8080$/m, `GW=${gateway}`).replaceAll('.ldbox/admin-token', join(dataDir, 'admin-token'));
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(...withoutTapLoader('bash', ['-euo', 'pipefail', '-c', script]), { timeout: 60_000 }, (e, stdout, stderr) =>
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : -1) : 0, stdout, stderr }),
    );
  });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^\{"executionId":"ex_[0-9a-z]{26}"\}$/m, 'the webhook was accepted');
  const shown = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  t.equal(shown.execution.status, 'EXECUTION_STATUS_SUCCEEDED', run.stdout);
  t.same(shown.execution.nodes[0].output, { greeting: 'hello Ada' });
  t.same(shown.execution.nodes[0].logs, [{ level: 'LOG_LEVEL_INFO', message: 'greeting Ada' }]);
  t.same(shown.execution.trigger.body, { name: 'Ada' });

  // A fresh start of everything logs no warning (LDBOX_LOG_LEVEL=warn: any log line here is one).
  t.same(
    out.split('\n').filter((l) => /"level":(40|50|60)/.test(l)),
    [],
    'no warning or error from start to here',
  );
  const natsPid = Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8'));
  child.kill('SIGINT');
  t.equal(await exited, 0, `ldbox dev exits 0 on Ctrl-C\n${err}`);
  t.notOk(existsSync(`/proc/${natsPid}`) && readFileSync(`/proc/${natsPid}/cmdline`, 'utf8').includes('nats-server'), 'its nats-server is stopped');
  t.notOk(existsSync(join(dataDir, 'nats', 'nats-server.pid')), 'and its pid file removed');
});

t.test('ldbox dev keeps its data key: a workflow with auth stored by one run opens in the next', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ldbox-dev-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const start = async () => {
    const child = spawn(...nodeChild([BIN, 'dev']), {
      // The first test starts dev with the defaults, warm-up included; these two starts only need the
      // data key kept between them, so they skip the warm-up (10,000 calls, ~1 s of both cores each).
      env: devEnv(dataDir, { LDBOX_RUNNER_WARMUP_CALLS: '0' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const deadline = Date.now() + 60_000;
    while (!/ldbox dev is ready/.test(out)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`ldbox dev did not get ready:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const gateway = /gateway +(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const call = async (method: string, body: unknown) => {
      const res = await fetch(`${gateway}/ldbox.workflows.v1.WorkflowService/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const stop = async () => {
      child.kill('SIGINT');
      t.equal(await exited, 0, 'ldbox dev exits 0');
    };
    return { call, stop };
  };

  const first = await start();
  const key = readFileSync(join(dataDir, 'data-key'), 'utf8');
  const created = await first.call('CreateWorkflow', {
    name: 'kept',
    workspace: 'ws',
    nodes: [{ id: 'a', code: 'return 1', auth: { token: 'dev-secret-value' } }],
  });
  t.equal(created.status, 200);
  await first.stop();

  const second = await start();
  t.equal(readFileSync(join(dataDir, 'data-key'), 'utf8'), key, 'the key is reused, not replaced');
  const got = await second.call('GetWorkflow', { id: created.json.workflow.id });
  t.equal(got.status, 200, JSON.stringify(got.json));
  t.same(got.json.workflow.nodes[0].auth, { token: '[REDACTED]' });
  await second.stop();
});
