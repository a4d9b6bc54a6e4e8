/**
 * Charging without a hot key (src/store/charge-ledger.ts), against a real nats-server: each execution's
 * cost is stored exactly once — under concurrent executions of one workspace, a redelivered job, a crash
 * between charging and recording, racing or interrupted roll-ups — and the spending cap holds under
 * concurrency within its stated overshoot (src/executor/spending-cap.ts).
 */
import { create, type JsonValue } from '@bufbuild/protobuf';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import type { ExecutionDeps } from '../../src/executor/run-execution.js';
import { runExecution } from '../../src/executor/run-execution.js';
import { ExecuteResponseSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { silentLogger } from '../../src/logging/logger.js';
import { JobPublisher } from '../../src/nats/job-publisher.js';
import { ensureKvBuckets } from '../../src/nats/streams.js';
import { ChargeLedger, chargeSubject, ensureChargesStream } from '../../src/store/charge-ledger.js';
import { type ExecutionRecord, ExecutionRepository } from '../../src/store/execution-repository.js';
import { ensureWorkspacesBucket, WorkspaceRepository } from '../../src/store/workspace-repository.js';
import { newExecutionId } from '../../src/workflows/ids.js';
import type { WorkflowRecord } from '../../src/workflows/workflow-model.js';
import { jobOf, workflowRecord } from '../helpers/execution-fixtures.js';
import { hook, rpc } from '../gateway/harness.js';
import { natsFixture, waitFor } from '../nats/util.js';
import { createFlow, getWorkspace, sharedRunner, stackFixture, waitForAllFinished, waitForFinish } from './harness.js';

// The end-to-end tests each start a stack of their own (executor settings, workspace totals), on one runner.
const runner = sharedRunner(t);

const SUCCEEDED = 'EXECUTION_STATUS_SUCCEEDED';
const FAILED = 'EXECUTION_STATUS_FAILED';
const WORKSPACES = { service: 'ldbox.workflows.v1.WorkspaceService' };

interface Stores {
  nc: NatsConnection;
  executions: ExecutionRepository;
  workspaces: WorkspaceRepository;
  ledger: ChargeLedger;
}

/** The stores the executor uses, over a fresh nats-server. */
async function stores(t: Test): Promise<Stores> {
  const { client, jsm } = await natsFixture(t);
  const nc = await client.whenConnected();
  const { executions } = await ensureKvBuckets(nc, jsm);
  const kv = await ensureWorkspacesBucket(nc, jsm);
  await ensureChargesStream(jsm, { maxAgeMs: 3600_000 });
  const ledger = new ChargeLedger(jetstream(nc), jsm, kv);
  return { nc, executions: new ExecutionRepository(executions, jsm), workspaces: new WorkspaceRepository(kv, ledger), ledger };
}

const rollUp = (s: Stores) => s.ledger.rollUp(async (ws, charges, end) => void (await s.workspaces.fold(ws, charges, end, new Date())));
const spent = async (s: Stores, ws = 'ws') => (await s.workspaces.get(ws, new Date())).spentUnits;

const workflow = (nodeIds: string[]) => workflowRecord(nodeIds);

/** The executor's dependencies over the real stores; each node "runs" for `wallTimeMs` (cost ceil(ms/100)). */
function deps(s: Stores, wf: WorkflowRecord, wallTimeMs: number, over: Partial<ExecutionDeps> = {}): ExecutionDeps {
  return {
    executions: s.executions,
    workflows: { get: async (id) => (id === wf.id ? wf : undefined) },
    charges: s.ledger,
    runners: {
      execute: async () => ({ response: create(ExecuteResponseSchema, { stats: { wallTimeMs } }), result: 1 as JsonValue }),
    },
    executeDeadlineMs: 10_000,
    executeDeadlineSlackMs: 1000,
    maxRecordBytes: () => 1024 * 1024,
    log: silentLogger(),
    ...over,
  };
}

t.test('the ledger stores one charge per execution, whoever sends it and however often', async (t) => {
  const s = await stores(t);
  const at = new Date().toISOString();
  const id = newExecutionId(new Date());
  const results = await Promise.all(Array.from({ length: 8 }, () => s.ledger.charge({ workspace: 'ws', executionId: id, units: 3, at })));
  t.same(
    results.filter((r) => r === 'charged'),
    ['charged'],
    'one of eight concurrent sends is stored',
  );
  t.equal(results.filter((r) => r === 'already_charged').length, 7, 'the others are refused');
  t.equal(await spent(s), 3);
  t.equal(await rollUp(s), 1, 'rolled up');
  // Past the duplicate window too: the refusal is by subject, not by message id.
  const jsm = await jetstreamManager(s.nc);
  t.equal((await jsm.streams.getMessage('CHARGES', { last_by_subj: chargeSubject('ws', id) }))?.seq, 1);
  t.equal(await s.ledger.charge({ workspace: 'ws', executionId: id, units: 5, at }), 'already_charged', 'a later charge with another amount is refused too');
  t.equal(await spent(s), 3, 'the spend is the first charge, counted once after the roll-up');
  await t.rejects(s.ledger.charge({ workspace: 'ws', executionId: newExecutionId(new Date()), units: 0, at }), {
    message: 'a charge is a positive whole number of units, got 0',
  });
});

t.test('the executor’s fast writes (PubAcks matched by token) keep both checks: one charge per execution, records fenced by revision', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const nc = await client.whenConnected();
  const { executions } = await ensureKvBuckets(nc, jsm);
  const kv = await ensureWorkspacesBucket(nc, jsm);
  await ensureChargesStream(jsm, { maxAgeMs: 3600_000 });
  const publisher = new JobPublisher(client, { timeoutMs: 3000 });
  t.teardown(() => publisher.close());
  const ledger = new ChargeLedger(jetstream(nc), jsm, kv, publisher);
  const at = new Date().toISOString();
  const id = newExecutionId(new Date());
  const results = await Promise.all(Array.from({ length: 6 }, () => ledger.charge({ workspace: 'ws', executionId: id, units: 2, at })));
  t.same(
    results.filter((r) => r === 'charged'),
    ['charged'],
  );
  t.equal(await ledger.charge({ workspace: 'ws', executionId: id, units: 2, at }), 'already_charged');
  t.equal(await new WorkspaceRepository(kv, ledger).get('ws', new Date()).then((w) => w.spentUnits), 2);

  const repo = new ExecutionRepository(executions, jsm, undefined, undefined, publisher);
  const wf = workflow(['a']);
  const rec: ExecutionRecord = {
    id,
    workflowId: wf.id,
    workspace: 'ws',
    status: 'running',
    trigger: { body: {}, query: {} },
    nodes: [],
    error: '',
    createdAt: at,
    startedAt: at,
    finishedAt: null,
    attempts: 1,
    costUnits: 0,
  };
  const r1 = await repo.write(rec, 0);
  await t.rejects(repo.write(rec, 0), { name: 'StaleRecordError' }, 'a second create is refused');
  const r2 = await repo.write({ ...rec, status: 'succeeded' }, r1);
  await t.rejects(repo.write({ ...rec, attempts: 2 }, r1), { name: 'StaleRecordError' }, 'a write at an old revision is refused');
  t.same(await repo.read(wf.id, id), { record: { ...rec, status: 'succeeded' }, revision: r2 }, 'read back through the KV API');
});

t.test('a crash between charging and recording: the redelivery charges again, refused; the total counts it once', async (t) => {
  const s = await stores(t);
  const wf = workflow(['a', 'b']);
  const job = jobOf(wf);
  // Attempt 1 charges, then "dies" before its final record write lands (the process is gone: it throws).
  const dying = deps(s, wf, 150, {
    executions: {
      read: (w, e) => s.executions.read(w, e),
      write: async (rec: ExecutionRecord, revision: number) => {
        if (rec.status === 'succeeded' || rec.status === 'failed') throw new Error('the executor died before recording');
        return s.executions.write(rec, revision);
      },
    },
  });
  await t.rejects(runExecution(job, 1, dying), { message: 'the executor died before recording' });
  const half = await s.executions.read(wf.id, job.executionId);
  t.equal(half.record?.status, 'running', 'not recorded as finished');
  t.equal(await spent(s), 4, 'but charged: two nodes of 150 ms, 2 units each');

  // The job comes back (redelivery): the last node runs again and the execution finishes; its charge is refused.
  t.equal(await runExecution(job, 2, deps(s, wf, 150)), 'succeeded');
  const done = (await s.executions.read(wf.id, job.executionId)).record!;
  t.equal(done.status, 'succeeded');
  t.equal(done.costUnits, 4);
  t.equal(done.charged, true, 'the finished record says it is charged');
  t.equal(await spent(s), 4, 'charged once');
  // And once more after a finished record (a lost ack): nothing new.
  t.equal(await runExecution(job, 3, deps(s, wf, 150)), 'already_finished');
  t.equal(await rollUp(s), 1);
  t.equal(await rollUp(s), 0, 'nothing left to roll up');
  t.equal(await spent(s), 4, 'charged once, after the roll-up too');
});

t.test('the final record stored but its charge lost: the redelivery finds the record and charges it, once', async (t) => {
  const s = await stores(t);
  const wf = workflow(['a']);
  const job = jobOf(wf);
  // Charge and final record go out together; here the charge never arrives (NATS failed it, or the executor died).
  const lost = deps(s, wf, 150, {
    charges: {
      charge: async () => {
        throw new Error('the charge was lost');
      },
    },
  });
  await t.rejects(runExecution(job, 1, lost), { message: 'the charge was lost' }, 'the attempt fails: the job is not acked');
  const rec = (await s.executions.read(wf.id, job.executionId)).record!;
  t.equal(rec.status, 'succeeded', 'the record was written');
  t.equal(rec.charged, true);
  t.equal(await spent(s), 0, 'nothing charged yet');
  t.equal(await runExecution(job, 2, deps(s, wf, 150)), 'already_finished', 'the redelivery finds it finished');
  t.equal(await spent(s), 2, 'and charges it: one node of 150 ms, 2 units');
  t.equal(await runExecution(job, 3, deps(s, wf, 150)), 'already_finished');
  t.equal(await spent(s), 2, 'once');
});

t.test('a finished record owing its cost (`charged: false`) is charged on redelivery, once; one without the field owes nothing', async (t) => {
  const s = await stores(t);
  const wf = workflow(['a']);
  const job = jobOf(wf);
  const now = new Date().toISOString();
  const legacy: ExecutionRecord = {
    id: job.executionId,
    workflowId: wf.id,
    workspace: 'ws',
    status: 'succeeded',
    trigger: job.trigger,
    nodes: [],
    error: '',
    createdAt: now,
    startedAt: now,
    finishedAt: now,
    attempts: 1,
    costUnits: 3,
    charged: false,
  };
  await s.executions.write(legacy, 0);
  t.equal(await runExecution(job, 2, deps(s, wf, 10)), 'already_finished');
  t.equal(await runExecution(job, 3, deps(s, wf, 10)), 'already_finished');
  t.equal(await spent(s), 3, 'charged once');
  // One from before the field existed owes nothing.
  const older = { ...legacy, id: newExecutionId(new Date()) } as Partial<ExecutionRecord>;
  delete older.charged;
  await s.executions.write(older as ExecutionRecord, 0);
  t.equal(await runExecution({ ...job, executionId: older.id! }, 2, deps(s, wf, 10)), 'already_finished');
  t.equal(await spent(s), 3, 'not charged');
});

t.test('roll-ups racing each other, or dying half-way, count every charge once', async (t) => {
  const s = await stores(t);
  const at = new Date().toISOString();
  let want = 0;
  for (let i = 0; i < 30; i++) {
    const units = 1 + (i % 3);
    want += units;
    await s.ledger.charge({ workspace: i % 2 ? 'ws' : 'other.ws', executionId: newExecutionId(new Date()), units, at });
  }
  // One roll-up dies after folding the first workspace, before moving the cursor.
  let folded = 0;
  await t.rejects(
    s.ledger.rollUp(async (ws, charges, end) => {
      if (folded++ > 0) throw new Error('died');
      await s.workspaces.fold(ws, charges, end, new Date());
    }),
    { message: 'died' },
  );
  // Three racing roll-ups pick up from the old cursor.
  await Promise.all([rollUp(s), rollUp(s), rollUp(s)]);
  t.equal(await rollUp(s), 0, 'all rolled up');
  const both = (await spent(s, 'ws')) + (await spent(s, 'other.ws'));
  t.equal(both, want, 'every charge counted once');
  const kv = await new Kvm(jetstream(s.nc)).open('ldbox-workspaces');
  const rec = (await kv.get('ws'))!.json<{ spentUnits: number }>();
  t.equal(rec.spentUnits, await spent(s, 'ws'), 'the record alone holds the total once rolled up');
});

t.test('concurrent executions of one workspace are each charged once, and GetWorkspace reports the total', async (t) => {
  const s = await stackFixture(t, { runner: await runner(), executorEnv: { LDBOX_EXECUTOR_CONCURRENCY: '8' } });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return data.input' }]);
  const ids = (await Promise.all(Array.from({ length: 40 }, (_, i) => hook(s.base, wf.id, { body: { i } })))).map((r) => r.json.executionId as string);
  const done = await waitForAllFinished(s.base, ids, 30_000);
  t.same(
    done.map((e) => e.status),
    ids.map(() => SUCCEEDED),
  );
  const total = done.reduce((n, e) => n + Number(e.costUnits), 0);
  t.ok(total >= 40, 'each execution cost at least one unit');
  t.equal(Number((await getWorkspace(s.base, 'ws')).spentUnits), total, 'exact before the roll-up');
  // The executor rolls up every second: the record then holds the total, and the report is unchanged.
  const client = await (await import('@nats-io/transport-node')).connect({ servers: s.nats.url });
  t.teardown(() => client.close());
  const kv = await new Kvm(jetstream(client)).open('ldbox-workspaces');
  await waitFor(async () => (await kv.get('ws'))?.json<{ spentUnits: number }>().spentUnits === total, 10_000, 'the roll-up');
  t.equal(Number((await getWorkspace(s.base, 'ws')).spentUnits), total, 'exact after the roll-up');
});

t.test('the spending cap under concurrency: the spend ends within budget + concurrency × one execution’s cost', async (t) => {
  const CONCURRENCY = 4;
  const BUDGET = 3;
  const s = await stackFixture(t, { runner: await runner(), executorEnv: { LDBOX_EXECUTOR_CONCURRENCY: String(CONCURRENCY) } });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }], { workspace: 'capped' });
  t.equal((await rpc(s.base, 'SetWorkspaceBudget', { name: 'capped', monthlyBudgetUnits: String(BUDGET) }, WORKSPACES)).status, 200);
  const answers = await Promise.all(Array.from({ length: 24 }, () => hook(s.base, wf.id, { body: {} })));
  const ids = answers.filter((r) => r.status === 202).map((r) => r.json.executionId as string);
  t.ok(ids.length > BUDGET + CONCURRENCY, `${ids.length} webhooks accepted before the gateway saw the spend`);
  const done = await waitForAllFinished(s.base, ids, 30_000);
  const ran = done.filter((e) => e.status === SUCCEEDED);
  const refused = done.filter((e) => e.status === FAILED);
  t.equal(ran.length + refused.length, ids.length);
  for (const e of refused) {
    t.match(e.error, /^workspace capped has spent its monthly budget \(\d+ of 3 units\): the execution was not run$/);
    t.equal(e.nodes?.length ?? 0, 0, 'a refused execution ran no node');
    t.equal(e.costUnits ?? '0', '0', 'and costs nothing');
  }
  const total = Number((await getWorkspace(s.base, 'capped')).spentUnits);
  const maxCost = Math.max(...ran.map((e) => Number(e.costUnits)));
  t.equal(
    total,
    ran.reduce((n, e) => n + Number(e.costUnits), 0),
    'the spend is what ran',
  );
  t.ok(total >= BUDGET, `the budget was reached (${total})`);
  t.ok(total <= BUDGET - 1 + CONCURRENCY * maxCost, `overshoot ${total - BUDGET} within concurrency × cost = ${CONCURRENCY * maxCost}`);
  t.ok(refused.length > 0, 'executions past the cap were refused');
});

t.test('the spending cap with two executors: the overshoot stays within (concurrency × executors) × one execution’s cost', async (t) => {
  const CONCURRENCY = 3;
  const EXECUTORS = 2;
  const BUDGET = 2;
  const s = await stackFixture(t, { runner: await runner(), executorEnv: { LDBOX_EXECUTOR_CONCURRENCY: String(CONCURRENCY) } });
  await s.startExecutor();
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }], { workspace: 'capped2' });
  t.equal((await rpc(s.base, 'SetWorkspaceBudget', { name: 'capped2', monthlyBudgetUnits: String(BUDGET) }, WORKSPACES)).status, 200);
  const answers = await Promise.all(Array.from({ length: 30 }, () => hook(s.base, wf.id, { body: {} })));
  const ids = answers.filter((r) => r.status === 202).map((r) => r.json.executionId as string);
  const done = await waitForAllFinished(s.base, ids, 30_000);
  const ran = done.filter((e) => e.status === SUCCEEDED);
  t.ok(
    done.every((e) => e.status === SUCCEEDED || /has spent its monthly budget/.test(e.error)),
    'every execution either ran or was refused for the budget',
  );
  const total = Number((await getWorkspace(s.base, 'capped2')).spentUnits);
  const maxCost = Math.max(...ran.map((e) => Number(e.costUnits)));
  t.equal(
    total,
    ran.reduce((n, e) => n + Number(e.costUnits), 0),
    'the spend is what ran',
  );
  t.ok(total >= BUDGET, `the budget was reached (${total})`);
  t.ok(total <= BUDGET - 1 + CONCURRENCY * EXECUTORS * maxCost, `overshoot ${total - BUDGET} within ${CONCURRENCY} × ${EXECUTORS} executors × cost ${maxCost}`);
});

t.test('an executor started beside a gateway older than the ledger creates the CHARGES stream, with the records’ retention', async (t) => {
  const s = await stackFixture(t, { noExecutor: true, runner: await runner() });
  const client = await (await import('@nats-io/transport-node')).connect({ servers: s.nats.url });
  t.teardown(() => client.close());
  const jsm = await jetstreamManager(client);
  t.ok(await jsm.streams.delete('CHARGES'), 'as an older gateway leaves it: absent');
  const executor = await s.startExecutor();
  await waitFor(() => executor.ready(), 10_000, 'the executor ready');
  const [charges, records] = await Promise.all([jsm.streams.info('CHARGES'), jsm.streams.info('KV_ldbox-executions')]);
  t.equal(charges.config.max_age, records.config.max_age, 'kept as long as execution records');
  t.equal(charges.config.num_replicas, records.config.num_replicas);
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return 1' }]);
  const ex = await waitForFinish(s.base, (await hook(s.base, wf.id, { body: {} })).json.executionId);
  t.equal(ex.status, SUCCEEDED);
  t.equal((await getWorkspace(s.base, 'ws')).spentUnits, ex.costUnits, 'charged');
});
