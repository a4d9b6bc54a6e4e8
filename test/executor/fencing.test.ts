/**
 * Fenced execution records, against a real nats-server: every write is a compare-and-set on the KV
 * revision the attempt read or last wrote, so an executor that lost its job (redelivered to another
 * after an ack timeout, or cut off from NATS) cannot overwrite the newer attempt's record; it stops.
 */
import { Writable } from 'node:stream';
import { create, type JsonValue } from '@bufbuild/protobuf';
import pino from 'pino';
import t, { type Test } from 'tap';
import { ExecuteResponseSchema } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { ensureKvBuckets } from '../../src/nats/streams.js';
import { type ExecutionRecord, ExecutionRepository } from '../../src/store/execution-repository.js';
import { isStaleRecord } from '../../src/store/store-errors.js';
import type { WorkflowRecord } from '../../src/workflows/workflow-model.js';
import { jobOf, workflowRecord } from '../helpers/execution-fixtures.js';
import type { ExecutionDeps } from '../../src/executor/run-execution.js';
import { runExecution } from '../../src/executor/run-execution.js';
import { natsFixture, waitFor } from '../nats/util.js';

async function repository(t: Test): Promise<ExecutionRepository> {
  const { client, jsm } = await natsFixture(t);
  const { executions } = await ensureKvBuckets(await client.whenConnected(), jsm);
  return new ExecutionRepository(executions, jsm);
}

const workflow = (nodeIds: string[]) => workflowRecord(nodeIds, 'export default () => 1');

/** A gate a fake runner call waits on. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

interface FakeExecutor {
  deps: ExecutionDeps;
  /** Node ids this executor ran, in order. */
  ran: string[];
  /** Node ids that have started their runner call (an entry while the call waits on its gate). */
  calling: string[];
  /** Log lines at warn and above, and all lines. */
  problems: () => unknown[];
  lines: () => Array<{ level: number; msg: string }>;
}

/**
 * The executor's dependencies around a real ExecutionRepository: runner calls answer `{ by: name, node }`
 * (after the node's gate opens, when it has one); charges are counted in `charges`.
 */
function fakeExecutor(name: string, repo: ExecutionRepository, wf: WorkflowRecord, charges: string[], gates: Record<string, Promise<void>> = {}): FakeExecutor {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const ran: string[] = [];
  const calling: string[] = [];
  const deps: ExecutionDeps = {
    executions: repo,
    workflows: { get: async (id) => (id === wf.id ? wf : undefined) },
    // Like the ledger: the first charge of an execution is stored, every later one refused.
    charges: {
      charge: async (c) => {
        if (charges.some((x) => x.endsWith(`:${c.executionId}`))) return 'already_charged';
        charges.push(`${name}:${c.workspace}:${c.units}:${c.executionId}`);
        return 'charged';
      },
    },
    runners: {
      execute: async (init) => {
        const node = String(init.requestId).split('.').pop()!;
        calling.push(node);
        await gates[node];
        ran.push(node);
        return { response: create(ExecuteResponseSchema, { stats: { wallTimeMs: 50 } }), result: { by: name, node } as JsonValue };
      },
    },
    executeDeadlineMs: 10_000,
    executeDeadlineSlackMs: 1000,
    maxRecordBytes: () => 1024 * 1024,
    log: pino({ level: 'info' }, sink),
  };
  return { deps, ran, calling, lines: () => lines, problems: () => lines.filter((l) => l.level >= 40) };
}

const outputs = (r: ExecutionRecord | undefined) => (r?.nodes ?? []).map((n) => (n as { output?: unknown }).output);
const statuses = (r: ExecutionRecord | undefined) => (r?.nodes ?? []).map((n) => (n as { status?: unknown }).status);

t.test('write is a compare-and-set: create once, then only from the revision last read', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a']);
  const job = jobOf(wf);
  const rec: ExecutionRecord = {
    id: job.executionId,
    workflowId: wf.id,
    workspace: 'ws',
    status: 'running',
    trigger: job.trigger,
    nodes: [],
    error: '',
    createdAt: job.receivedAt,
    startedAt: job.receivedAt,
    finishedAt: null,
    attempts: 1,
    costUnits: 0,
  };
  t.same(await repo.read(wf.id, job.executionId), { record: undefined, revision: 0 }, 'never written: revision 0');
  const r1 = await repo.write(rec, 0);
  t.ok(r1 > 0, 'created');
  await t.rejects(repo.write({ ...rec, attempts: 9 }, 0), { name: 'StaleRecordError' }, 'a second create loses');
  const r2 = await repo.write({ ...rec, attempts: 2 }, r1);
  t.ok(r2 > r1, 'updated from the revision read');
  const stale = await repo.write({ ...rec, attempts: 7 }, r1).catch((err) => err);
  t.ok(isStaleRecord(stale), 'a write from an older revision loses');
  t.same(await repo.read(wf.id, job.executionId), { record: { ...rec, attempts: 2 }, revision: r2 }, 'the record is the newer write');
});

t.test('a stale executor loses the race after another finished the job: it stops, the record and charge are the newer one', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a', 'b']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const aGate = gate();
  const stale = fakeExecutor('A', repo, wf, charges, { a: aGate.wait });
  const newer = fakeExecutor('B', repo, wf, charges);

  // A picks the job up and hangs in node a (cut off, or simply slow past the ack wait)…
  const aRun = runExecution(job, 1, stale.deps);
  await waitFor(() => stale.calling.includes('a'), 5000, 'A calling node a');
  // …so the job is redelivered to B, which resumes it and finishes.
  t.equal(await runExecution(job, 2, newer.deps), 'succeeded', 'B runs the redelivery to the end');
  const { record: done, revision } = await repo.read(wf.id, job.executionId);
  t.equal(done?.status, 'succeeded');

  aGate.open();
  t.equal(await aRun, 'already_finished', 'A finds the record finished when it writes, and stops');
  t.same(stale.ran, ['a'], 'A did not go on to node b');
  const after = await repo.read(wf.id, job.executionId);
  t.equal(after.revision, revision, 'A wrote nothing');
  t.same(after.record, done, 'the record is B’s');
  t.same(outputs(after.record), [
    { by: 'B', node: 'a' },
    { by: 'B', node: 'b' },
  ]);
  t.equal(after.record?.attempts, 2);
  t.equal(after.record?.charged, true);
  t.same(charges, [`B:ws:2:${job.executionId}`], 'charged once, by B (A’s late charge refused)');
  t.same(stale.problems(), [], 'no warning or error from A');
  t.ok(
    stale.lines().some((l) => l.level === 30 && /finished by another executor/.test(l.msg)),
    'A says at info that it stopped',
  );
});

t.test('a stale executor loses the race while the newer one still runs: it stops (superseded), the history stays exact', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a', 'b', 'c']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const aGate = gate();
  const bGate = gate();
  const stale = fakeExecutor('A', repo, wf, charges, { b: aGate.wait });
  const newer = fakeExecutor('B', repo, wf, charges, { c: bGate.wait });

  const aRun = runExecution(job, 1, stale.deps);
  await waitFor(() => stale.calling.includes('b'), 5000, 'A calling node b');
  // B takes over: it reuses A's node a, runs b and hangs in c.
  const bRun = runExecution(job, 2, newer.deps);
  await waitFor(() => newer.calling.includes('c'), 5000, 'B calling node c');
  const { record: mid } = await repo.read(wf.id, job.executionId);
  t.same(statuses(mid), ['EXECUTION_STATUS_SUCCEEDED', 'EXECUTION_STATUS_SUCCEEDED', 'EXECUTION_STATUS_RUNNING']);

  aGate.open();
  t.equal(await aRun, 'superseded', 'A finds the record moved on, and stops');
  t.same(stale.ran, ['a', 'b'], 'A did not go on to node c');
  t.same((await repo.read(wf.id, job.executionId)).record, mid, 'A’s node b result did not replace B’s');
  t.ok(
    stale.lines().some((l) => l.level === 30 && /taken over by another executor/.test(l.msg)),
    'A says at info that it stopped',
  );

  bGate.open();
  t.equal(await bRun, 'succeeded');
  const { record: done } = await repo.read(wf.id, job.executionId);
  t.equal(done?.status, 'succeeded');
  t.same(
    outputs(done),
    [
      { by: 'A', node: 'a' },
      { by: 'B', node: 'b' },
      { by: 'B', node: 'c' },
    ],
    'one entry per node: A’s a (reused), then B’s b and c',
  );
  t.same(newer.ran, ['b', 'c'], 'B did not run node a again');
  t.equal(charges.length, 1, 'charged once');
  t.same([...stale.problems(), ...newer.problems()], [], 'no warning or error');
});

t.test('a job redelivered after another executor finished it: the record stays SUCCEEDED with its original history', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a', 'b']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const first = fakeExecutor('A', repo, wf, charges);
  t.equal(await runExecution(job, 1, first.deps), 'succeeded');
  const before = await repo.read(wf.id, job.executionId);

  const again = fakeExecutor('B', repo, wf, charges);
  t.equal(await runExecution(job, 2, again.deps), 'already_finished');
  t.equal(await runExecution(job, 3, again.deps), 'already_finished', 'and again');
  const after = await repo.read(wf.id, job.executionId);
  t.same(after, before, 'same record, same revision: nothing written');
  t.equal(after.record?.status, 'succeeded');
  t.same(outputs(after.record), [
    { by: 'A', node: 'a' },
    { by: 'A', node: 'b' },
  ]);
  t.same(again.ran, [], 'nothing ran again');
  t.same(charges, [`A:ws:2:${job.executionId}`], 'charged once');
});
