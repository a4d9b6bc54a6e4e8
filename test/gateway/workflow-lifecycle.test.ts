/**
 * Workflows over time, end to end (nats-server, gateway, runner, executor; Connect JSON as curl sends it,
 * and the typed Connect client in binary): UpdateWorkflow keeps the webhook and bumps the version that
 * executions record; code and templates are checked at create and update with the node and position;
 * ListExecutions across workflows with status and time filters, paged; ReplayExecution(s); CancelExecution
 * of a queued and of a running execution.
 */
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import t from 'tap';
import { ExecutionStatus, WorkflowService } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import type { Executor } from '../../src/executor/index.js';
import { JOBS_CONSUMER } from '../../src/nats/job-consumer.js';
import { JOBS_STREAM, jobSubject, KV_BUCKETS } from '../../src/nats/streams.js';
import { ExecutionRepository } from '../../src/store/execution-repository.js';
import { createFlow, getExecution, sharedRunner, stackFixture, waitForFinish } from '../executor/harness.js';
import { testClient, waitFor } from '../nats/util.js';
import { ADMIN_TOKEN, hook, rpc } from './harness.js';

/** A node that fails when the body says so, else returns its version tag and the body's `n`. */
const nodeOf = (tag: string) => ({
  id: 'a',
  code: `if (data.input.fail) throw new Error('asked to fail'); return { tag: ${JSON.stringify(tag)}, n: data.input.n };`,
  input: { fail: '{{trigger.output.body.fail}}', n: '{{trigger.output.body.n}}' },
});

/** Sends a webhook (`fail` and `n` false and 0 unless given: a template of a missing field fails the node) and returns its execution id. */
async function send(base: string, workflowId: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const r = await hook(base, workflowId, { body: { fail: false, n: 0, ...(body as object) }, headers });
  if (r.status !== 202) throw new Error(`webhook: ${r.status} ${r.text}`);
  return r.json.executionId;
}

/** Every execution ListExecutions returns for `filter`, page after page, and the pages' sizes. */
async function listAll(base: string, filter: Record<string, unknown>, pageSize: number): Promise<{ ids: string[]; pages: number[]; executions: any[] }> {
  const out = { ids: [] as string[], pages: [] as number[], executions: [] as any[] };
  let pageToken = '';
  for (let i = 0; i < 50; i++) {
    const r = await rpc(base, 'ListExecutions', { ...filter, pageSize, pageToken });
    if (r.status !== 200) throw new Error(`ListExecutions: ${r.status} ${r.text}`);
    const executions = r.json.executions ?? [];
    out.pages.push(executions.length);
    out.executions.push(...executions);
    out.ids.push(...executions.map((e: any) => e.id));
    pageToken = r.json.nextPageToken ?? '';
    if (pageToken === '') return out;
  }
  throw new Error('ListExecutions did not end');
}

const newestFirst = (ids: string[]) => [...ids].sort().reverse();

// The file's runner, a process of its own (harness.ts: one in this process runs under tap's slow module loader).
const runner = sharedRunner(t);

t.test('workflows over time', async (t) => {
  const stack = await stackFixture(t, { runner: await runner() });
  const { base } = stack;
  const client = createClient(WorkflowService, createConnectTransport({ baseUrl: base, httpVersion: '1.1', useBinaryFormat: true }));
  const auth = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

  await t.test('UpdateWorkflow keeps the URL and the secret and bumps the version that executions record', async (t) => {
    const created = await rpc(base, 'CreateWorkflow', {
      name: 'v1',
      workspace: 'ws',
      nodes: [nodeOf('v1')],
      webhook: { authMethod: 'AUTH_METHOD_HEADER' },
    });
    t.equal(created.status, 200, created.text);
    const wf = created.json.workflow;
    const secret = wf.webhook.secret;
    t.equal(wf.version, 1, 'a new workflow is version 1');
    const first = await waitForFinish(base, await send(base, wf.id, { n: 1 }, { 'x-webhook-secret': secret }));
    t.equal(first.status, 'EXECUTION_STATUS_SUCCEEDED');
    t.same(first.nodes[0].output, { tag: 'v1', n: 1 });
    t.equal(first.workflowVersion, 1, 'the execution records the version it ran');

    // The typed client, in binary: the same call as curl's JSON.
    const updated = await client.updateWorkflow(
      { workflow: { id: wf.id, name: 'v2', nodes: [{ id: 'a', code: nodeOf('v2').code, input: nodeOf('v2').input }], version: 1 } },
      auth,
    );
    t.equal(updated.workflow?.version, 2);
    t.equal(updated.workflow?.name, 'v2');
    t.equal(updated.workflow?.webhook?.url, wf.webhook.url, 'the webhook URL is kept');
    t.equal(updated.workflow?.webhook?.webhookId, wf.webhook.webhookId, 'the webhook id is kept');
    t.equal(updated.workflow?.webhook?.secret, '', 'no secret is shown (none was generated)');
    t.equal(updated.workflow?.webhook?.hasSecret, true);

    const read = await rpc(base, 'GetWorkflow', { id: wf.id });
    t.equal(read.json.workflow.version, 2);
    t.equal(read.json.workflow.nodes[0].code, nodeOf('v2').code);
    t.equal(read.json.workflow.workspace, 'ws', 'the workspace is kept');
    t.ok(Date.parse(read.json.workflow.updatedAt) >= Date.parse(read.json.workflow.createdAt), 'updatedAt is set');

    const second = await waitForFinish(base, await send(base, wf.id, { n: 2 }, { 'x-webhook-secret': secret }));
    t.equal(second.status, 'EXECUTION_STATUS_SUCCEEDED', 'the old secret still opens the webhook');
    t.same(second.nodes[0].output, { tag: 'v2', n: 2 }, 'the new code ran');
    t.equal(second.workflowVersion, 2);
    t.equal((await getExecution(base, first.id)).workflowVersion, 1, 'the earlier execution keeps its version');

    t.test('a stale version is ABORTED and changes nothing', async (t) => {
      const r = await rpc(base, 'UpdateWorkflow', { workflow: { id: wf.id, name: 'late', nodes: [nodeOf('late')], version: 1 } });
      t.equal(r.status, 409);
      t.equal(r.json.code, 'aborted');
      t.match(r.json.message, /is at version 2, not 1/);
      t.equal((await rpc(base, 'GetWorkflow', { id: wf.id })).json.workflow.name, 'v2');
    });

    t.test('concurrent updates all land, each its own version (compare-and-set)', async (t) => {
      const results = await Promise.all(
        ['c1', 'c2', 'c3', 'c4'].map((name) => rpc(base, 'UpdateWorkflow', { workflow: { id: wf.id, name, nodes: [nodeOf(name)] } })),
      );
      t.same(
        results.map((r) => r.status),
        [200, 200, 200, 200],
        results.map((r) => r.text).join('\n'),
      );
      t.same(results.map((r) => r.json.workflow.version).sort(), [3, 4, 5, 6], 'no two updates got the same version');
      const final = (await rpc(base, 'GetWorkflow', { id: wf.id })).json.workflow;
      t.equal(final.version, 6);
      t.equal(final.name, results.find((r) => r.json.workflow.version === 6)!.json.workflow.name, 'the last write is what is stored');
    });

    t.test('refusals name the field', async (t) => {
      const cases: Array<[unknown, number, string, RegExp]> = [
        [{}, 400, 'invalid_argument', /^workflow is required$/],
        [{ workflow: { id: 'wf_nope', name: 'x', nodes: [nodeOf('x')] } }, 400, 'invalid_argument', /^workflow\.id "wf_nope" is not a workflow id/],
        [{ workflow: { id: wf.id, name: '', nodes: [nodeOf('x')] } }, 400, 'invalid_argument', /^workflow\.name is required$/],
        [{ workflow: { id: wf.id, name: 'x', nodes: [] } }, 400, 'invalid_argument', /^workflow\.nodes must hold at least one node$/],
        [{ workflow: { id: wf.id, name: 'x', workspace: 'other', nodes: [nodeOf('x')] } }, 400, 'invalid_argument', /^workflow\.workspace cannot be changed/],
        [{ workflow: { id: 'wf_00000000000000000000', name: 'x', nodes: [nodeOf('x')] } }, 404, 'not_found', /not found/],
      ];
      for (const [body, status, code, message] of cases) {
        const r = await rpc(base, 'UpdateWorkflow', body);
        t.equal(r.status, status, JSON.stringify(body));
        t.equal(r.json.code, code);
        t.match(r.json.message, message);
      }
      const r = await rpc(base, 'UpdateWorkflow', { workflow: { id: wf.id, name: 'x', nodes: [nodeOf('x')], version: 'two' } });
      t.equal(r.status, 400, 'a wrong type is refused');
      t.equal(r.json.code, 'invalid_argument');
      t.match(r.json.message, /version/);
    });
  });

  await t.test('CreateWorkflow and UpdateWorkflow refuse code that does not parse and malformed templates, naming the node and the position', async (t) => {
    const ok = { id: 'first', code: 'return 1' };
    const bad = { id: 'send', code: 'const a = await data.input;\nreturn { a: a,, };' };
    const created = await rpc(base, 'CreateWorkflow', { name: 'n', workspace: 'ws', nodes: [ok, bad] });
    t.equal(created.status, 400);
    t.equal(created.json.code, 'invalid_argument');
    t.equal(created.json.message, `nodes[1].code: node "send" does not parse: Unexpected token ',' at line 2, column 15`);

    const wf = await createFlow(base, [ok]);
    const updated = await rpc(base, 'UpdateWorkflow', { workflow: { id: wf.id, name: 'n', nodes: [ok, bad] } });
    t.equal(updated.status, 400);
    t.equal(updated.json.message, `workflow.nodes[1].code: node "send" does not parse: Unexpected token ',' at line 2, column 15`);

    const template = await rpc(base, 'UpdateWorkflow', {
      workflow: { id: wf.id, name: 'n', nodes: [ok, { id: 'send', code: 'return 1', input: { text: 'Hello\n  {{trigger.output.body.name' } }] },
    });
    t.equal(template.status, 400);
    t.equal(
      template.json.message,
      'workflow.nodes[1].input.text: {{trigger.output.body.name: unclosed template: "}}" is missing (node "send", line 2, column 3 of the value)',
    );
    const root = await rpc(base, 'CreateWorkflow', {
      name: 'n',
      workspace: 'ws',
      nodes: [{ id: 'only', code: 'return 1', input: { x: 'a {{secrets.key}}' } }],
    });
    t.equal(root.status, 400);
    t.match(root.json.message, /^nodes\[0\]\.input\.x: \{\{secrets\.key\}\}: unknown root "secrets".* \(node "only", line 1, column 3 of the value\)$/);

    const after = (await rpc(base, 'GetWorkflow', { id: wf.id })).json.workflow;
    t.equal(after.version, 1, 'a refused update changes nothing');
    t.equal(after.nodes.length, 1);
  });

  await t.test('ListExecutions across workflows: statuses, time range, pages, newest first', async (t) => {
    const t0 = new Date().toISOString();
    const a = await createFlow(base, [nodeOf('a')]);
    const b = await createFlow(base, [nodeOf('b')]);
    const sent: Array<{ id: string; wf: string; fail: boolean }> = [];
    for (const [wf, fail] of [
      [a.id, false],
      [b.id, true],
      [a.id, true],
      [b.id, false],
      [a.id, false],
    ] as const) {
      const id = await send(base, wf, { fail, n: sent.length });
      sent.push({ id, wf, fail });
      // Ids carry their creation time in milliseconds: a tick apart, so that the order is the sending order.
      const at = Date.now();
      await waitFor(() => Date.now() > at, 1000, 'the next millisecond');
    }
    for (const s of sent) await waitForFinish(base, s.id);
    const mine = { createdAfter: t0 };

    const all = await listAll(base, mine, 2);
    t.same(all.ids, newestFirst(sent.map((s) => s.id)), 'both workflows, newest first');
    t.same(all.pages, [2, 2, 1], 'paged by 2');

    const failed = await listAll(base, { ...mine, statuses: ['EXECUTION_STATUS_FAILED'] }, 10);
    t.same(failed.ids, newestFirst(sent.filter((s) => s.fail).map((s) => s.id)), 'failed ones of both workflows');
    t.ok(
      failed.executions.every((e: any) => e.status === 'EXECUTION_STATUS_FAILED'),
      'all failed',
    );

    const either = await listAll(base, { ...mine, statuses: ['EXECUTION_STATUS_FAILED', 'EXECUTION_STATUS_SUCCEEDED'] }, 1);
    t.equal(either.ids.length, 5, 'several statuses: any of them');

    const ofA = await listAll(base, { ...mine, workflowId: a.id, statuses: ['EXECUTION_STATUS_SUCCEEDED'] }, 10);
    t.same(ofA.ids, newestFirst(sent.filter((s) => s.wf === a.id && !s.fail).map((s) => s.id)), 'one workflow and a status');

    const third = await getExecution(base, sent[2]!.id);
    const older = await listAll(base, { ...mine, createdBefore: third.createdAt }, 10);
    t.same(older.ids, newestFirst(sent.slice(0, 2).map((s) => s.id)), 'createdBefore: strictly older');
    const newer = await listAll(base, { createdAfter: third.createdAt }, 10);
    t.same(newer.ids, newestFirst(sent.slice(2).map((s) => s.id)), 'createdAfter: at or after');

    const none = await rpc(base, 'ListExecutions', { ...mine, statuses: ['EXECUTION_STATUS_CANCELLED'] });
    t.same(none.json.executions ?? [], [], 'no cancelled ones');

    t.test('refusals name the field', async (t) => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ workflowId: 'nope' }, /^workflowId "nope" is not a workflow id/],
        [{ statuses: ['EXECUTION_STATUS_UNSPECIFIED'] }, /^statuses\[0\] must be a status an execution can have/],
        [{ statuses: ['EXECUTION_STATUS_DONE'] }, /^statuses .* is not a known ExecutionStatus/],
        [{ statuses: [99] }, /^statuses\[0\] 99 is not a known ExecutionStatus/],
        [{ createdAfter: 'yesterday' }, /createdAfter|Timestamp/],
        [{ createdAfter: '2026-01-02T00:00:00Z', createdBefore: '2026-01-01T00:00:00Z' }, /^createdBefore .* must be later than createdAfter/],
        [{ pageToken: 'not-ours' }, /^pageToken is not a token from a previous ListExecutions call$/],
      ];
      for (const [body, message] of cases) {
        const r = await rpc(base, 'ListExecutions', body);
        t.equal(r.status, 400, JSON.stringify(body));
        t.equal(r.json.code, 'invalid_argument');
        t.match(r.json.message, message);
      }
    });

    t.test('the typed client in binary sees the same', async (t) => {
      const page = await client.listExecutions(
        { statuses: [ExecutionStatus.FAILED], createdAfter: { seconds: BigInt(Math.floor(Date.parse(t0) / 1000)) } },
        auth,
      );
      t.ok(page.executions.length >= 2);
      t.ok(page.executions.every((e) => e.status === ExecutionStatus.FAILED));
    });

    await t.test('ReplayExecution runs the trigger again as a new execution linked to the old one', async (t) => {
      const original = sent[2]!; // a failed one of workflow a
      // Fix the workflow first: the replay runs the current version.
      const fixed = await rpc(base, 'UpdateWorkflow', {
        workflow: { id: a.id, name: 'fixed', nodes: [{ ...nodeOf('fixed'), code: 'return { tag: "fixed", n: data.input.n };' }] },
      });
      t.equal(fixed.status, 200, fixed.text);
      const r = await rpc(base, 'ReplayExecution', { id: original.id });
      t.equal(r.status, 200, r.text);
      const replay = r.json.execution;
      t.not(replay.id, original.id);
      t.equal(replay.replayOf, original.id);
      t.equal(replay.status, 'EXECUTION_STATUS_QUEUED');
      t.equal(replay.workflowId, a.id);
      const done = await waitForFinish(base, replay.id);
      t.equal(done.status, 'EXECUTION_STATUS_SUCCEEDED', 'the fixed version ran the same trigger');
      t.same(done.trigger, (await getExecution(base, original.id)).trigger, 'the same trigger');
      t.same(done.nodes[0].output, { tag: 'fixed', n: 2 });
      t.equal(done.replayOf, original.id, 'the record keeps the link');
      t.equal(done.workflowVersion, 2);

      const unknown = await rpc(base, 'ReplayExecution', { id: 'ex_00000000000000000000000000' });
      t.equal(unknown.status, 404);
      const malformed = await rpc(base, 'ReplayExecution', { id: 'wf_x' });
      t.equal(malformed.status, 400);
      t.match(malformed.json.message, /^id "wf_x" is not an execution id/);
    });

    await t.test('ReplayExecutions replays every execution that matches the filters', async (t) => {
      const t1 = new Date().toISOString();
      const r = await rpc(base, 'ReplayExecutions', { statuses: ['EXECUTION_STATUS_FAILED'], createdAfter: t0, createdBefore: t1 });
      t.equal(r.status, 200, r.text);
      t.same(r.json, { count: 2 }, 'the two failed ones, of both workflows');
      const replays = await listAll(base, { createdAfter: t1 }, 10);
      t.same(
        replays.executions.map((e: any) => e.replayOf).sort(),
        sent
          .filter((s) => s.fail)
          .map((s) => s.id)
          .sort(),
        'each linked to one original',
      );
      for (const e of replays.executions) {
        const done = await waitForFinish(base, e.id);
        t.equal(done.status, done.workflowId === a.id ? 'EXECUTION_STATUS_SUCCEEDED' : 'EXECUTION_STATUS_FAILED', 'the current version of each workflow ran');
      }
      const nothing = await rpc(base, 'ReplayExecutions', {});
      t.equal(nothing.status, 400, 'no filter: refused');
      t.match(nothing.json.message, /at least one filter/);
      const empty = await rpc(base, 'ReplayExecutions', { workflowId: a.id, statuses: ['EXECUTION_STATUS_CANCELLED'] });
      t.same(empty.json, {}, 'nothing matched: count 0 (the default, not shown in JSON)');
    });
  });
});

t.test('CancelExecution', async (t) => {
  const stack = await stackFixture(t, { noExecutor: true });
  const { base } = stack;
  const executors: Executor[] = [];

  await t.test('a queued execution never runs', async (t) => {
    const wf = await createFlow(base, [nodeOf('q')]);
    const id = await send(base, wf.id, { n: 1 });
    t.equal((await getExecution(base, id)).status, 'EXECUTION_STATUS_QUEUED');
    const queued = await rpc(base, 'ListExecutions', { statuses: ['EXECUTION_STATUS_QUEUED'] });
    t.same(
      queued.json.executions.map((e: any) => e.id),
      [id],
      'listed as queued across workflows (from the stream)',
    );
    const r = await rpc(base, 'CancelExecution', { id });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.execution.status, 'EXECUTION_STATUS_CANCELLED');
    t.equal(r.json.execution.error, 'cancelled with CancelExecution');
    t.same(
      ((await rpc(base, 'ListExecutions', { statuses: ['EXECUTION_STATUS_QUEUED'] })).json.executions ?? []).map((e: any) => e.id),
      [],
      'no longer queued',
    );
    t.same(
      (await rpc(base, 'ListExecutions', { workflowId: wf.id, statuses: ['EXECUTION_STATUS_CANCELLED'] })).json.executions.map((e: any) => e.id),
      [id],
      'listed as cancelled',
    );

    const nc = await testClient(t, stack.nats.url, 'ldbox-test-jobs').whenConnected();
    const jsm = await jetstreamManager(nc);
    const job = await jsm.streams.getMessage(JOBS_STREAM, { last_by_subj: jobSubject(wf.id, id) }).catch(() => null);
    t.notOk(job, 'its job left the queue');

    // An executor now: a later webhook of the same workflow runs; the cancelled one stays as it was.
    const ex = await stack.startExecutor();
    executors.push(ex);
    const later = await waitForFinish(base, await send(base, wf.id, { n: 2 }));
    t.equal(later.status, 'EXECUTION_STATUS_SUCCEEDED');
    const cancelled = await getExecution(base, id);
    t.equal(cancelled.status, 'EXECUTION_STATUS_CANCELLED');
    t.same(cancelled.nodes ?? [], [], 'no node ran');
    t.equal(cancelled.attempts ?? 0, 0);
    await waitFor(() => ex.inFlight === 0, 5000, 'the executor idle');

    const again = await rpc(base, 'CancelExecution', { id });
    t.equal(again.status, 400, 'an ended execution cannot be cancelled');
    t.equal(again.json.code, 'failed_precondition');
    t.match(again.json.message, /has already ended \(cancelled\)/);
    const done = await rpc(base, 'CancelExecution', { id: later.id });
    t.equal(done.json.code, 'failed_precondition');
    t.match(done.json.message, /has already ended \(succeeded\)/);
  });

  await t.test('a running execution is stopped in the sandbox, and later nodes do not run', async (t) => {
    const wf = await createFlow(base, [
      { id: 'spin', code: 'while (true) {}', limits: { timeoutMs: 100000 } },
      { id: 'after', code: 'return "should not run"' },
    ]);
    const id = await send(base, wf.id, {});
    await waitFor(async () => (await getExecution(base, id))?.nodes?.[0]?.status === 'EXECUTION_STATUS_RUNNING', 15_000, 'the node running');
    const started = Date.now();
    const r = await rpc(base, 'CancelExecution', { id });
    t.equal(r.status, 200, r.text);
    t.equal(r.json.execution.status, 'EXECUTION_STATUS_CANCELLED');
    t.equal(r.json.execution.nodes[0].status, 'EXECUTION_STATUS_CANCELLED', 'the running node is cancelled');
    t.ok(r.json.execution.nodes[0].finishedAt, 'and finished');
    // Stopped well before the node's 100 s timeout: no job is left in flight.
    await waitFor(() => executors.every((e) => e.inFlight === 0), 20_000, 'the executor idle');
    t.ok(Date.now() - started < 20_000, 'stopped, not timed out');
    const pool = stack.runner!.connect;
    await waitFor(async () => (await pool.getPoolStatus({})).busy === 0, 20_000, 'no sandbox busy in the runner');
    t.pass('the sandbox call was stopped in the runner');
    const record = await getExecution(base, id);
    t.equal(record.status, 'EXECUTION_STATUS_CANCELLED', 'the record stays cancelled');
    t.equal(record.nodes.length, 1, 'the next node never ran');
    const nc = await testClient(t, stack.nats.url, 'ldbox-test-jobs2').whenConnected();
    const jsm = await jetstreamManager(nc);
    await waitFor(async () => (await jsm.consumers.info(JOBS_STREAM, JOBS_CONSUMER).catch(() => undefined))?.num_ack_pending === 0, 10_000, 'the job acked');
    // The runner is free again.
    const next = await waitForFinish(base, await send(base, (await createFlow(base, [nodeOf('next')])).id, { n: 3 }));
    t.equal(next.status, 'EXECUTION_STATUS_SUCCEEDED');
  });

  await t.test('an executor that missed the announcement stops at its next record write', async (t) => {
    // The record is cancelled directly in the store, so no executor hears of it: only the fence can stop the run.
    const nc = await testClient(t, stack.nats.url, 'ldbox-test-store').whenConnected();
    const kv = await new Kvm(jetstream(nc)).open(KV_BUCKETS.executions);
    const store = new ExecutionRepository(kv, await jetstreamManager(nc));
    const wf = await createFlow(base, [
      { id: 'busy', code: 'const end = Date.now() + 1500; while (Date.now() < end) {} return 1' },
      { id: 'after', code: 'return "should not run"' },
    ]);
    const id = await send(base, wf.id, {});
    await waitFor(async () => (await getExecution(base, id))?.nodes?.[0]?.status === 'EXECUTION_STATUS_RUNNING', 15_000, 'the node running');
    const done = await store.cancel(id, new Date());
    t.equal(done?.cancelled, true);
    await waitFor(() => executors.every((e) => e.inFlight === 0), 20_000, 'the executor idle');
    const record = await getExecution(base, id);
    t.equal(record.status, 'EXECUTION_STATUS_CANCELLED', 'the late write did not overwrite the cancel');
    t.same(
      record.nodes.map((n: any) => [n.id, n.status]),
      [['busy', 'EXECUTION_STATUS_CANCELLED']],
      'the next node never ran',
    );
  });

  await t.test('the new methods need the admin token', async (t) => {
    for (const method of ['UpdateWorkflow', 'ReplayExecution', 'ReplayExecutions', 'CancelExecution', 'ListExecutions']) {
      const r = await rpc(base, method, {}, { token: null });
      t.equal(r.status, 401, method);
      t.equal(r.json.code, 'unauthenticated', method);
    }
  });

  await t.test('unknown and malformed ids', async (t) => {
    const unknown = await rpc(base, 'CancelExecution', { id: 'ex_00000000000000000000000000' });
    t.equal(unknown.status, 404);
    t.equal(unknown.json.code, 'not_found');
    const malformed = await rpc(base, 'CancelExecution', { id: 42 });
    t.equal(malformed.status, 400);
    t.equal(malformed.json.code, 'invalid_argument');
    const typed = createClient(WorkflowService, createConnectTransport({ baseUrl: base, httpVersion: '1.1' }));
    const err = await typed.cancelExecution({ id: 'nope' }, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).catch((e: unknown) => e);
    t.ok(err instanceof ConnectError);
    t.equal((err as ConnectError).code, Code.InvalidArgument);
    t.match((err as ConnectError).rawMessage, /^id "nope" is not an execution id/);
  });
});
