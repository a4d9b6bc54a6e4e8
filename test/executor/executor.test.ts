/**
 * The executor end to end: webhook → JetStream → executor → runner → execution record, against a real
 * nats-server and a real runner on loopback.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { hook, rpc } from '../gateway/harness.js';
import { waitFor } from '../nats/util.js';
import { createFlow, getExecution, getWorkspace, sharedRunner, sharedStack, stackFixture, waitForFinish } from './harness.js';

// Tests that need only fresh workflows share one stack; those that stop NATS or the executor, count what an
// executor did, or need other settings start a fresh stack, all on one runner (see harness.ts).
const runner = sharedRunner(t);
const shared = sharedStack(t, { sharedRunner: runner });

t.test('a webhook runs its workflow: trigger body and query reach the nodes, templates of every form, outputs chain', async (t) => {
  const s = await shared();
  const wf = await createFlow(
    s.base,
    [
      {
        id: 'first',
        code: 'ld.log("token is", data.auth.token); return { got: data.input, n: data.input.count + 1 };',
        input: {
          whole: '{{trigger.output.body.user}}',
          count: '{{trigger.output.body.count}}',
          text: 'hello {{trigger.output.body.user.name}}, page {{trigger.output.query.page}}',
          tags: '{{trigger.output.query.tag}}',
        },
        auth: { token: 's3cr3t-value' },
      },
      {
        id: 'second',
        code: 'return { doubled: data.input.n * 2, from: data.input.label };',
        input: { n: '{{nodes.first.output.n}}', label: 'n={{nodes.first.output.n}}' },
      },
    ],
    { workspace: 'chained' },
  );
  const r = await hook(s.base, wf.id, { body: { user: { name: 'Ada', id: 7 }, count: 41 }, query: 'page=3&tag=a&tag=b' });
  t.equal(r.status, 202);
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex));
  t.equal(ex.workflowId, wf.id);
  t.same(ex.trigger, {
    body: { user: { name: 'Ada', id: 7 }, count: 41 },
    query: { page: '3', tag: ['a', 'b'] },
    headers: ex.trigger.headers,
    method: 'POST',
  });
  t.equal(ex.trigger.headers['content-type'], 'application/json');
  t.equal(ex.nodes.length, 2);
  const [first, second] = ex.nodes;
  t.equal(first.id, 'first');
  t.equal(first.status, 'EXECUTION_STATUS_SUCCEEDED');
  t.same(
    first.output.got,
    { whole: { name: 'Ada', id: 7 }, count: 41, text: 'hello Ada, page 3', tags: ['a', 'b'] },
    'whole-value templates keep their JSON type, embedded ones interpolate',
  );
  t.same(first.logs, [{ level: 'LOG_LEVEL_INFO', message: 'token is [REDACTED]' }], 'auth values are redacted in recorded logs');
  t.same(second.output, { doubled: 84, from: 'n=42' }, "a later node reads an earlier node's output");
  t.ok(ex.startedAt && ex.finishedAt && ex.createdAt, 'timings are recorded');
  t.equal(ex.attempts, 1);
  t.ok(Number(ex.costUnits) >= 2, 'each node that ran costs at least one unit');
  t.notOk(JSON.stringify(ex).includes('s3cr3t-value'), 'the auth value appears nowhere in the execution');
  const ws = await getWorkspace(s.base, 'chained');
  t.equal(String(ws.spentUnits), String(ex.costUnits), 'the run was charged to its workspace once');
});

t.test('a code error fails the execution at that node; later nodes do not run', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [
    { id: 'boom', code: 'ld.log("before"); throw new TypeError("no such thing");' },
    { id: 'never', code: 'return 1' },
  ]);
  const r = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.error, 'node "boom" failed: TypeError: no such thing');
  t.equal(ex.nodes.length, 1, 'the node after the failure is absent');
  t.equal(ex.nodes[0].error.kind, 'NODE_ERROR_KIND_CODE');
  t.equal(ex.nodes[0].error.codeError.kind, 'ERROR_KIND_THROWN');
  t.same(ex.nodes[0].logs, [{ level: 'LOG_LEVEL_INFO', message: 'before' }]);
  t.equal(ex.attempts, 1, 'a user-code error is not retried');
});

t.test('a template path that does not exist fails the node before its code runs', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'ld.log("ran"); return 1', input: { email: '{{trigger.output.body.user.email}}' } }]);
  const r = await hook(s.base, wf.id, { body: { user: { name: 'x' } } });
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.nodes[0].error.kind, 'NODE_ERROR_KIND_TEMPLATE');
  t.match(ex.nodes[0].error.message, /input\.email.*\{\{trigger\.output\.body\.user\.email\}\}.*email/);
  t.notOk(ex.nodes[0].logs, 'the code did not run');
  t.match(ex.error, /^node "a" failed: /);
  t.equal(String(ex.costUnits ?? '0'), '0', 'nothing ran, nothing is charged');
});

t.test('timeouts and memory limits of a node are its own failure, typed', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [{ id: 'spin', code: 'while (true) {}', limits: { timeoutMs: 200 } }]);
  const r = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.nodes[0].error.codeError.kind, 'ERROR_KIND_TIMEOUT');
});

t.test('runners unreachable: the job is retried, then recorded as failed with the reason once attempts are used up', async (t) => {
  const s = await stackFixture(t, { noRunner: true, executorEnv: { LDBOX_EXECUTOR_MAX_ATTEMPTS: '2' } });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }]);
  const r = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, r.json.executionId, 30_000);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.equal(ex.attempts, 2);
  t.match(ex.error, /^node "a" failed: gave up after 2 attempts: .*no runner took the call/);
  t.equal(ex.nodes[0].error.kind, 'NODE_ERROR_KIND_RUNNER');
});

t.test('a runner that comes back: the retried job succeeds', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  // The first runner URL is a closed port: every call goes to the live one after the first refusal.
  await s.startExecutor({ LDBOX_RUNNER_URLS: `http://127.0.0.1:9,${s.runnerUrl}` });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return "ok"' }]);
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await hook(s.base, wf.id, { body: { i } })).json.executionId);
  for (const id of ids) {
    const ex = await waitForFinish(s.base, id);
    t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED');
    t.equal(ex.nodes[0].output, 'ok');
  }
});

t.test('a redelivered job of a finished execution changes nothing and is not charged again', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return Math.random()' }], { workspace: 'redelivered' });
  const r = await hook(s.base, wf.id, { body: {} });
  const first = await waitForFinish(s.base, r.json.executionId);
  // The same job again, as a redelivery after a lost ack would bring it (a new msg id defeats de-dup).
  const { connect } = await import('@nats-io/transport-node');
  const { jetstream } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: s.nats.url });
  t.teardown(() => nc.close());
  const job = { v: 1, executionId: first.id, workflowId: wf.id, workspace: 'redelivered', receivedAt: first.createdAt, trigger: { body: {}, query: {} } };
  await jetstream(nc).publish(`ldbox.jobs.${wf.id}`, JSON.stringify(job), { msgID: `${first.id}-again` });
  await waitFor(async () => (await s.executor!.inFlight) === 0 && (await pendingJobs(nc)) === 0, 10_000, 'the redelivered job was consumed');
  const after = await getExecution(s.base, first.id);
  t.same(after, first, 'the record is unchanged (same output, same finishedAt)');
  const ws = await getWorkspace(s.base, 'redelivered');
  t.equal(String(ws.spentUnits), String(first.costUnits), 'charged once');
});

t.test('record writes: a short run writes its final record only; one past LDBOX_RUNNING_RECORD_DELAY_MS writes running first', async (t) => {
  const s = await shared();
  const { connect } = await import('@nats-io/transport-node');
  const { Kvm } = await import('@nats-io/kv');
  const nc = await connect({ servers: s.nats.url });
  t.teardown(() => nc.close());
  const wf = await createFlow(
    s.base,
    [
      {
        id: 'a',
        code: 'const until = Date.now() + (data.input.ms || 0); while (Date.now() < until) {} return data.input.ms;',
        input: { ms: '{{trigger.output.body.ms}}' },
      },
    ],
    { workspace: 'writes' },
  );
  // Every write of the workflow's records, in order, as nats-server delivers them (updates only).
  const writes = new Map<string, string[]>();
  const watch = await (await new Kvm(nc).open('ldbox-executions')).watch({ key: `${wf.id}.*`, include: 'updates' as never });
  t.teardown(() => watch.stop());
  (async () => {
    for await (const e of watch) {
      const id = e.key.split('.')[1]!;
      writes.set(id, [...(writes.get(id) ?? []), (e.json() as { status: string }).status]);
    }
  })();
  const statusesOf = async (body: object): Promise<string[]> => {
    const id: string = (await hook(s.base, wf.id, { body })).json.executionId;
    await waitFor(() => writes.get(id)?.at(-1) === 'succeeded', 15_000, `the succeeded record of ${JSON.stringify(body)}`);
    return writes.get(id)!;
  };
  t.same(await statusesOf({ ms: 0 }), ['succeeded'], 'a short run: one write, the final record');
  t.same(await statusesOf({ ms: 600 }), ['running', 'succeeded'], 'a run of 600 ms (default delay 100 ms): running, then the end');
});

t.test("a node running longer than the runner's LDBOX_BODY_TIMEOUT_MS on ExecuteStream succeeds, run once", async (t) => {
  // The node's side effect: a request to this server, counted.
  let hits = 0;
  const counter = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  counter.listen(0, '127.0.0.1');
  await once(counter, 'listening');
  t.teardown(() => new Promise<void>((r) => counter.close(() => r())));
  const url = `http://127.0.0.1:${(counter.address() as AddressInfo).port}/hit`;
  // The body timeout used to reset the executor's ExecuteStream 300 ms after it opened, and the node with it.
  const s = await stackFixture(t, { runnerEnv: { LDBOX_BODY_TIMEOUT_MS: '300', LDBOX_EGRESS_ALLOW: '127.0.0.1' } });
  const wf = await createFlow(s.base, [
    { id: 'slow', code: `const r = await ld.request({ url: '${url}', method: 'POST', body: {} }); await ld.wait(1500); return { status: r.status };` },
  ]);
  const r = await hook(s.base, wf.id, { body: {} });
  const ex = await waitForFinish(s.base, r.json.executionId);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED', JSON.stringify(ex));
  t.same(ex.nodes[0].output, { status: 200 });
  t.equal(ex.attempts, 1, 'in one attempt');
  t.equal(hits, 1, 'the node ran once');
});

t.test('malformed jobs are removed and, when their ids can be read, recorded as failed', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }]);
  const { connect } = await import('@nats-io/transport-node');
  const { jetstream } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: s.nats.url });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  await js.publish(`ldbox.jobs.${wf.id}`, 'not json{');
  const exId = 'ex_' + '0'.repeat(26);
  await js.publish(`ldbox.jobs.${wf.id}`, JSON.stringify({ v: 1, executionId: exId, workflowId: wf.id, workspace: 'ws', receivedAt: 'never', trigger: {} }));
  await waitFor(async () => (await pendingJobs(nc)) === 0, 10_000, 'malformed jobs consumed');
  const ex = await getExecution(s.base, exId);
  t.equal(ex.status, 'EXECUTION_STATUS_FAILED');
  t.match(ex.error, /the job is malformed: receivedAt is not a time/);
  // The executor still serves.
  const r = await hook(s.base, wf.id, { body: {} });
  t.equal((await waitForFinish(s.base, r.json.executionId)).status, 'EXECUTION_STATUS_SUCCEEDED');
});

t.test('the executor serves /healthz, /readyz and /metrics with execution counts', async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const base = `http://127.0.0.1:${s.executor!.port}`;
  t.equal((await fetch(`${base}/healthz`)).status, 200);
  await waitFor(() => s.executor!.ready(), 10_000, 'executor ready');
  t.equal((await fetch(`${base}/readyz`)).status, 200);
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }]);
  const okId = (await hook(s.base, wf.id, { body: {} })).json.executionId;
  await waitForFinish(s.base, okId);
  // The record is final a moment before the executor counts the execution (it writes, then counts).
  let text = '';
  await waitFor(
    async () => /ldbox_executor_executions_total\{outcome="succeeded"\} 1/.test((text = await (await fetch(`${base}/metrics`)).text())),
    5000,
    'counted',
  );
  t.match(text, /ldbox_executor_executions_total\{outcome="succeeded"\} 1/);
  t.match(text, /ldbox_executor_execute_seconds_count\{outcome="ok"\} 1/);
  t.match(text, /ldbox_executor_queue_depth\{state="pending"\} 0/);
  t.match(text, /ldbox_executor_concurrency 4/);
  t.match(text, /ldbox_executor_nats_connected 1/);
  t.equal((await fetch(`${base}/nope`)).status, 404);
  await s.nats.kill('SIGTERM');
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 503, 10_000, 'not ready without NATS');
  await s.nats.restart();
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 20_000, 'ready again');
});

t.test('executions list newest first through the control plane', async (t) => {
  const s = await shared();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return data.input', input: { i: '{{trigger.output.body.i}}' } }]);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    ids.push((await hook(s.base, wf.id, { body: { i } })).json.executionId);
    await new Promise((r) => setTimeout(r, 5));
  }
  for (const id of ids) await waitForFinish(s.base, id);
  const r = await rpc(s.base, 'ListExecutions', { workflowId: wf.id, pageSize: 2 });
  t.equal(r.status, 200);
  t.same(
    r.json.executions.map((e: any) => e.id),
    [ids[2], ids[1]],
  );
  t.ok(r.json.nextPageToken);
  t.same(
    r.json.executions.map((e: any) => e.nodes[0].output),
    [{ i: 2 }, { i: 1 }],
  );
});

async function pendingJobs(nc: import('@nats-io/transport-node').NatsConnection): Promise<number> {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(nc);
  const info = await jsm.consumers.info('JOBS', 'executor');
  return info.num_pending + info.num_ack_pending;
}

t.test('stopping while NATS is away and a job runs: close() cancels the run and returns', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const ex = await s.startExecutor();
  const wf = await createFlow(s.base, [{ id: 'slow', code: 'await ld.wait(5000); return 1' }]);
  const id = (await hook(s.base, wf.id, { body: {} })).json.executionId;
  await waitFor(async () => (await getExecution(s.base, id))?.status === 'EXECUTION_STATUS_RUNNING', 10_000, 'running');
  await s.nats.kill('SIGKILL');
  const t0 = Date.now();
  await ex.close(500);
  t.ok(Date.now() - t0 < 8000, `close() returned in ${Date.now() - t0} ms, without waiting out the 5 s node or NATS`);
  t.equal(ex.inFlight, 0);
});

t.test('destroy() cancels a running job at once and gives it back; the executor is closed', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const ex = await s.startExecutor();
  t.equal(ex.state, 'ready');
  const wf = await createFlow(s.base, [{ id: 'slow', code: 'await ld.wait(20000); return 1' }]);
  const id = (await hook(s.base, wf.id, { body: {} })).json.executionId;
  await waitFor(async () => (await getExecution(s.base, id))?.status === 'EXECUTION_STATUS_RUNNING', 10_000, 'running');
  const t0 = Date.now();
  await ex.destroy();
  t.ok(Date.now() - t0 < 8000, `destroy() returned in ${Date.now() - t0} ms, without the 20 s node or the 10 s grace`);
  t.same([ex.state, ex.inFlight, ex.ready()], ['closed', 0, false]);
  t.equal(ex.close(), ex.destroy(), 'close() after destroy() is the same promise');
});
