/**
 * The executor killed with SIGKILL mid-run (a real child process: `node bin/ldbox.js executor`), against a
 * real nats-server, gateway and runner on loopback.
 *
 * What must hold (src/executor/run-execution.ts, module comment): the execution *record* is exactly once —
 * one execution, each node entered once, finished once, charged once — while the *side effect* of the
 * node that was running when the executor died is at least once (it runs again on the redelivery; the
 * counter server below sees it twice). Nodes that had succeeded before the crash are not run again.
 * A crash during the last attempt is still recorded, as failed, through the consumer's extra
 * deliveries (src/nats/job-consumer.ts, module comment).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { hook, rpc } from '../gateway/harness.js';
import { testClient, waitFor } from '../nats/util.js';
import { createFlow, getExecution, getWorkspace, type StackFixture, sharedRunner, stackFixture, waitForFinish } from './harness.js';
import { TEST_DATA_KEY } from '../helpers/data-keys.js';
import { nodeChild } from '../helpers/ldbox-cli.js';

const BIN = fileURLToPath(new URL('../../../bin/ldbox.js', import.meta.url));
const ACK_WAIT_MS = 2000;
const SUCCEEDED = 'EXECUTION_STATUS_SUCCEEDED';
const FAILED = 'EXECUTION_STATUS_FAILED';
const RUNNING = 'EXECUTION_STATUS_RUNNING';

// Each test kills an executor on a stack of its own; the runner (never killed here) is the file's one.
const runner = sharedRunner(t, { LDBOX_EGRESS_ALLOW: '127.0.0.1' });

// ---------------------------------------------------------------------------------------------------
// A counting HTTP server: the nodes' side effect. `hold(path)` makes the next hit on `path` wait for
// `release()`, so a node is provably mid-run while the test kills its executor.

interface Counter {
  url: string;
  hits(path: string): number;
  bodies(path: string): unknown[];
  hold(path: string): void;
  release(): void;
}

async function counterServer(t: Test): Promise<Counter> {
  const bodies = new Map<string, unknown[]>();
  const holds = new Set<string>();
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown = Buffer.concat(chunks).toString('utf8');
      try {
        body = JSON.parse(body as string);
      } catch {
        /* keep the text */
      }
      const list = bodies.get(path) ?? [];
      list.push(body);
      bodies.set(path, list);
      const n = list.length;
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ n }));
      };
      if (holds.delete(path)) held.push(Object.assign(res, { answer }));
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits: (path) => bodies.get(path)?.length ?? 0,
    bodies: (path) => bodies.get(path) ?? [],
    hold: (path) => void holds.add(path),
    release() {
      for (const res of held.splice(0)) {
        try {
          (res as http.ServerResponse & { answer(): void }).answer();
        } catch {
          /* the runner gave up on the request */
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The executor as a child process, killed (SIGKILL) at test end whatever happens.

interface ChildExecutor {
  proc: ChildProcess;
  /** Its stdout and stderr so far (debug-level JSON logs), for failure messages. */
  output(): string;
  /** Resolves with the `executor: http://...` line's URL. */
  url: Promise<string>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of liveChildren) p.kill('SIGKILL');
});

function spawnExecutor(t: Test, env: Record<string, string>): ChildExecutor {
  // The child sees only the settings given here (no stray LDBOX_* or NATS_URL of the caller's shell).
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LDBOX_') && !k.startsWith('NATS_')));
  // Without tap's module loader (ldbox-cli.ts, withoutTapLoader): it only slows the child's start.
  const proc = spawn(...nodeChild([BIN, 'executor']), { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(proc);
  const exited = new Promise<void>((r) => proc.once('exit', () => (liveChildren.delete(proc), r())));
  let out = '';
  let resolveUrl!: (u: string) => void;
  let rejectUrl!: (e: Error) => void;
  const url = new Promise<string>((res, rej) => ((resolveUrl = res), (rejectUrl = rej)));
  url.catch(() => undefined);
  const onData = (d: Buffer) => {
    out = (out + d.toString('utf8')).slice(-200_000);
    const m = /^executor: (http:\/\/\S+) /m.exec(out);
    if (m) resolveUrl(m[1]!);
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  proc.once('exit', (code, signal) => rejectUrl(new Error(`executor exited (${code ?? signal}) before printing its URL:\n${out}`)));
  const kill = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  };
  t.teardown(kill);
  return { proc, output: () => out, url, kill };
}

function childEnv(s: StackFixture, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NATS_URL: s.nats.url,
    LDBOX_RUNNER_URLS: s.runnerUrl!,
    LDBOX_EXECUTOR_PORT: '0',
    LDBOX_EXECUTOR_ACK_WAIT_MS: String(ACK_WAIT_MS),
    LDBOX_LOG_LEVEL: 'debug',
    LDBOX_DATA_KEY: TEST_DATA_KEY,
    ...extra,
  };
}

/** Waits for `cond`, failing with the child's log in the message. */
async function waitWithLog(child: ChildExecutor, cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  try {
    await waitFor(cond, timeoutMs, what);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- executor child output ---\n${child.output()}`);
  }
}

/** Jobs of the executors' consumer not yet settled (pending + delivered-but-unacked), through one client per test. */
function unsettledJobs(t: Test, s: StackFixture): () => Promise<number> {
  const nc = testClient(t, s.nats.url, 'ldbox-test-crash').whenConnected();
  return async () => {
    const info = await (await jetstreamManager(await nc)).consumers.info('JOBS', 'executor');
    return info.num_pending + info.num_ack_pending;
  };
}

/**
 * Waits until the job is settled on the server (acked, or termed). What "no late run" needs: a settled job
 * is never delivered again, whatever ack wait passes, so once this holds the record and the counter can
 * only change through a bug that the assertions after it catch. A wait on that condition, not a pause of
 * an ack wait.
 */
async function waitUntilSettled(unsettled: () => Promise<number>): Promise<void> {
  await waitFor(async () => (await unsettled()) === 0, 15_000, 'the job settled on the server');
}

const units = (v: unknown): string => String(v ?? '0');

// ---------------------------------------------------------------------------------------------------

t.test('SIGKILL mid-node: the job is redelivered and the record is exactly once; the interrupted side effect is at least once (twice)', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const counter = await counterServer(t);
  const wf = await createFlow(s.base, [
    {
      id: 'call',
      code: `const r = await ld.request({ url: '${counter.url}/hit', method: 'POST', body: { executionInput: data.input } }); return { status: r.status };`,
      input: { order: '{{trigger.output.body.order}}' },
    },
    { id: 'after', code: 'return { callStatus: data.input.status, doubled: data.input.status * 2 };', input: { status: '{{nodes.call.output.status}}' } },
  ]);
  counter.hold('/hit');
  const child = spawnExecutor(t, childEnv(s));
  await child.url;

  const r = await hook(s.base, wf.id, { body: { order: 42 } });
  t.equal(r.status, 202);
  const id: string = r.json.executionId;
  await waitWithLog(child, () => counter.hits('/hit') === 1, 15_000, 'node "call" hit the counter');
  // The first node's running record is written once the call has run LDBOX_RUNNING_RECORD_DELAY_MS.
  await waitWithLog(child, async () => (await getExecution(s.base, id)).status === RUNNING, 15_000, 'the running record');
  const running = await getExecution(s.base, id);
  t.equal(running.status, RUNNING, 'the execution is running');
  t.same(
    running.nodes.map((n: any) => [n.id, n.status]),
    [['call', RUNNING]],
    'node "call" is running when the executor is killed',
  );
  t.equal(running.attempts, 1);

  await child.kill();
  t.equal(child.proc.signalCode, 'SIGKILL');
  counter.release(); // the first call's response arrives after its executor died

  await s.startExecutor({ LDBOX_EXECUTOR_ACK_WAIT_MS: String(ACK_WAIT_MS) });
  const ex = await waitForFinish(s.base, id, 15_000);
  t.equal(ex.status, SUCCEEDED, JSON.stringify(ex));
  t.equal(ex.attempts, 2, 'attempt 1 died with the executor, attempt 2 finished');
  t.same(
    ex.nodes.map((n: any) => [n.id, n.status]),
    [
      ['call', SUCCEEDED],
      ['after', SUCCEEDED],
    ],
    'each node appears once, succeeded (no entry left over from the killed attempt)',
  );
  t.same(ex.nodes[1].output, { callStatus: 200, doubled: 400 });
  t.ok(ex.finishedAt, 'finishedAt is set');
  t.equal(ex.error ?? '', '');

  const list = await rpc(s.base, 'ListExecutions', { workflowId: wf.id });
  t.equal(list.status, 200);
  t.same(
    list.json.executions.map((e: any) => e.id),
    [id],
    'one execution for the one webhook call',
  );
  const ws = await getWorkspace(s.base, 'ws');
  t.ok(Number(ex.costUnits) >= 2, 'both nodes of the finishing attempt cost');
  t.equal(units(ws.spentUnits), units(ex.costUnits), 'charged once, the cost of the finishing attempt');

  // At least once for the node that was running: its request was made again by attempt 2.
  t.equal(counter.hits('/hit'), 2, 'the interrupted node ran twice (at-least-once side effect)');
  t.same(counter.bodies('/hit'), [{ executionInput: { order: 42 } }, { executionInput: { order: 42 } }], 'both with the same input');

  // No late third run: once the job is settled nothing can redeliver it; nothing has changed and nothing is left in the queue.
  const unsettled = unsettledJobs(t, s);
  await waitUntilSettled(unsettled);
  t.same(await getExecution(s.base, id), ex, 'the record is unchanged once the job is settled');
  t.equal(counter.hits('/hit'), 2, 'no third request');
  t.equal(units((await getWorkspace(s.base, 'ws')).spentUnits), units(ex.costUnits), 'still charged once');
  t.equal(await unsettled(), 0, 'the job is acked');
});

t.test('SIGKILL while the second node runs: the redelivery resumes after the first node, which does not run again', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const counter = await counterServer(t);
  const wf = await createFlow(s.base, [
    { id: 'one', code: `const r = await ld.request({ url: '${counter.url}/one', method: 'POST', body: { n: 1 } }); return { first: r.json.n };` },
    {
      id: 'two',
      code: `const r = await ld.request({ url: '${counter.url}/two', method: 'POST', body: data.input }); return { fromOne: data.input.first, n: r.json.n };`,
      input: { first: '{{nodes.one.output.first}}' },
    },
  ]);
  counter.hold('/two');
  const child = spawnExecutor(t, childEnv(s));
  await child.url;

  const id: string = (await hook(s.base, wf.id, { body: {} })).json.executionId;
  await waitWithLog(child, () => counter.hits('/two') === 1, 15_000, 'node "two" hit the counter');
  const running = await getExecution(s.base, id);
  t.equal(running.status, RUNNING);
  t.same(
    running.nodes.map((n: any) => [n.id, n.status]),
    [
      ['one', SUCCEEDED],
      ['two', RUNNING],
    ],
    'node "one" succeeded and is recorded; node "two" is running',
  );
  const oneBefore = running.nodes[0];

  await child.kill();
  counter.release();
  await s.startExecutor({ LDBOX_EXECUTOR_ACK_WAIT_MS: String(ACK_WAIT_MS) });
  const ex = await waitForFinish(s.base, id, 15_000);
  t.equal(ex.status, SUCCEEDED, JSON.stringify(ex));
  t.equal(ex.attempts, 2);
  t.same(
    ex.nodes.map((n: any) => [n.id, n.status]),
    [
      ['one', SUCCEEDED],
      ['two', SUCCEEDED],
    ],
  );
  t.same(ex.nodes[0], oneBefore, "node one's entry is the one recorded by attempt 1 (reused, not re-run)");
  t.same(ex.nodes[1].output, { fromOne: 1, n: 2 }, "node two ran again, reading node one's recorded output");
  t.equal(counter.hits('/one'), 1, 'node one ran once');
  t.equal(counter.hits('/two'), 2, 'node two, interrupted, ran twice');
  const ws = await getWorkspace(s.base, 'ws');
  t.equal(units(ws.spentUnits), units(ex.costUnits), 'charged once');

  const unsettled = unsettledJobs(t, s);
  await waitUntilSettled(unsettled);
  t.same(await getExecution(s.base, id), ex, 'unchanged once the job is settled');
  t.equal(counter.hits('/one'), 1);
  t.equal(counter.hits('/two'), 2);
  t.equal(await unsettled(), 0);
});

t.test('SIGKILL during the last attempt: the execution is recorded failed through the extra delivery, not lost or left running', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const counter = await counterServer(t);
  const wf = await createFlow(s.base, [
    { id: 'call', code: `const r = await ld.request({ url: '${counter.url}/hit', method: 'POST', body: {} }); return r.status;` },
    { id: 'after', code: 'return 1' },
  ]);
  counter.hold('/hit');
  const child = spawnExecutor(t, childEnv(s, { LDBOX_EXECUTOR_MAX_ATTEMPTS: '1' }));
  await child.url;

  const id: string = (await hook(s.base, wf.id, { body: {} })).json.executionId;
  await waitWithLog(child, () => counter.hits('/hit') === 1, 15_000, 'node "call" hit the counter');
  // The first node's running record is written once the call has run LDBOX_RUNNING_RECORD_DELAY_MS.
  await waitWithLog(child, async () => (await getExecution(s.base, id)).status === RUNNING, 15_000, 'the running record');

  await child.kill();
  counter.release();

  await s.startExecutor({ LDBOX_EXECUTOR_ACK_WAIT_MS: String(ACK_WAIT_MS), LDBOX_EXECUTOR_MAX_ATTEMPTS: '1' });
  const ex = await waitForFinish(s.base, id, 15_000);
  t.equal(ex.status, FAILED, JSON.stringify(ex));
  // Attempt 1 ran the node and died; delivery 2 (an extra one past LDBOX_EXECUTOR_MAX_ATTEMPTS) only
  // recorded the failure, and is not counted as an attempt.
  t.equal(ex.attempts, 1);
  t.equal(ex.error, 'node "call" failed: gave up after 1 attempt: the executor stopped during the last one');
  t.ok(ex.finishedAt, 'finishedAt is set');
  t.same(
    ex.nodes.map((n: any) => [n.id, n.status]),
    [['call', FAILED]],
    'the node left running is marked failed; the next node never started',
  );
  t.equal(ex.nodes[0].error.kind, 'NODE_ERROR_KIND_RUNNER');
  t.match(ex.nodes[0].error.message, /the executor stopped during the last one/);
  t.equal(counter.hits('/hit'), 1, 'no further attempt ran the node');
  t.equal((await rpc(s.base, 'ListExecutions', { workflowId: wf.id })).json.executions.length, 1);
  t.equal(units((await getWorkspace(s.base, 'ws')).spentUnits), units(ex.costUnits), 'charged what was recorded (nothing finished)');

  const unsettled = unsettledJobs(t, s);
  await waitUntilSettled(unsettled);
  t.same(await getExecution(s.base, id), ex, 'unchanged once the job is settled');
  t.equal(await unsettled(), 0, 'the job was removed from the queue (term), not left unacked');
});
