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
import { cancelledRecord, type ExecutionRecord, ExecutionRepository, queuedRecord } from '../../src/store/execution-repository.js';
import { isStaleRecord } from '../../src/store/store-errors.js';
import type { WorkflowRecord } from '../../src/workflows/workflow-model.js';
import { jobOf, workflowRecord } from '../helpers/execution-fixtures.js';
import type { ExecutionDeps } from '../../src/executor/run-execution.js';
import { ExecutionCancelledError, runExecution } from '../../src/executor/run-execution.js';
import { natsFixture, waitFor } from '../nats/util.js';

async function repository(t: Test): Promise<ExecutionRepository> {
  const { client, jsm } = await natsFixture(t);
  const { executions } = await ensureKvBuckets(await client.whenConnected(), jsm);
  return new ExecutionRepository(executions, jsm);
}

/** Records the status of every record write `fx` attempts (the bucket keeps one revision of a key, not its history). */
function recordWrites(fx: FakeExecutor, repo: ExecutionRepository): string[] {
  const attempted: string[] = [];
  fx.deps.executions = {
    read: (wf, id) => repo.read(wf, id),
    write: (r, rev) => {
      attempted.push(r.status);
      return repo.write(r, rev);
    },
  };
  return attempted;
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

t.test('the running record waits for calls longer than runningRecordDelayMs: a short run writes its final record only', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a']);

  const short = jobOf(wf);
  const quick = fakeExecutor('A', repo, wf, []);
  const quickWrites = recordWrites(quick, repo);
  quick.deps.runningRecordDelayMs = 60_000;
  t.equal(await runExecution(short, 1, quick.deps), 'succeeded');
  t.same(quickWrites, ['succeeded'], 'one write: the final record');

  const long = jobOf(wf);
  const held = gate();
  const slow = fakeExecutor('B', repo, wf, [], { a: held.wait });
  const slowWrites = recordWrites(slow, repo);
  slow.deps.runningRecordDelayMs = 20;
  const run = runExecution(long, 1, slow.deps);
  await waitFor(async () => (await repo.read(wf.id, long.executionId)).record?.status === 'running', 5000, 'the running record');
  t.same(slow.ran, [], 'written while the call is still under way');
  t.same(statuses((await repo.read(wf.id, long.executionId)).record), ['EXECUTION_STATUS_RUNNING'], 'with its node running');
  held.open();
  t.equal(await run, 'succeeded');
  t.same(slowWrites, ['running', 'succeeded']);

  const atOnce = jobOf(wf);
  const gated = gate();
  const eager = fakeExecutor('C', repo, wf, [], { a: gated.wait });
  const eagerWrites = recordWrites(eager, repo);
  const eagerRun = runExecution(atOnce, 1, eager.deps); // no delay: the running record before the call
  await waitFor(() => eager.calling.includes('a'), 5000, 'C calling node a');
  t.equal((await repo.read(wf.id, atOnce.executionId)).record?.status, 'running', 'written before the call started');
  gated.open();
  t.equal(await eagerRun, 'succeeded');
  t.same(eagerWrites, ['running', 'succeeded']);
});

t.test('a record created by another hand while a first call ran unrecorded: the attempt stops, it does not run the node again', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const aGate = gate();
  const bGate = gate();
  const first = fakeExecutor('A', repo, wf, charges, { a: aGate.wait });
  first.deps.runningRecordDelayMs = 60_000;
  const second = fakeExecutor('B', repo, wf, charges, { a: bGate.wait });

  const aRun = runExecution(job, 1, first.deps);
  await waitFor(() => first.calling.includes('a'), 5000, 'A calling node a');
  // A second copy of the job (or a redelivery) starts while A's call runs without a record.
  const bRun = runExecution(job, 2, second.deps);
  await waitFor(() => second.calling.includes('a'), 5000, 'B calling node a');
  const { record: mid } = await repo.read(wf.id, job.executionId);
  t.equal(mid?.status, 'running', 'B wrote its running record');

  aGate.open();
  t.equal(await aRun, 'superseded', 'A’s final create finds B’s record: it stops');
  t.same(first.ran, ['a'], 'A ran node a once: no start-over from the read');
  t.same((await repo.read(wf.id, job.executionId)).record, mid, 'B’s record is untouched');
  bGate.open();
  t.equal(await bRun, 'succeeded');
  // A's charge travels with its final write (run-execution.ts finish) and may land first: the ledger keeps one.
  t.equal(charges.length, 1, 'charged once');
});

t.test('a deferred running write that finds the record moved on ends the attempt once its call returns', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a', 'b']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const aGate = gate();
  const bGate = gate();
  const owner = fakeExecutor('B', repo, wf, charges, { b: bGate.wait });
  const late = fakeExecutor('A', repo, wf, charges, { a: aGate.wait });
  late.deps.runningRecordDelayMs = 10;
  const attempted = recordWrites(late, repo);
  const ownerWrites = recordWrites(owner, repo);

  const bRun = runExecution(job, 2, owner.deps);
  await waitFor(() => owner.calling.includes('b'), 5000, 'B calling node b');
  const { record: mid } = await repo.read(wf.id, job.executionId);
  // A starts as a first delivery (it assumes there is no record) and its running write comes due mid-call.
  const aRun = runExecution(job, 1, late.deps);
  await waitFor(() => late.calling.includes('a'), 5000, 'A calling node a');
  await waitFor(() => attempted.length === 1, 5000, 'A’s deferred running write');
  aGate.open();
  t.equal(await aRun, 'superseded');
  t.same(attempted, ['running'], 'A wrote nothing after its running write failed');
  t.same(late.ran, ['a'], 'A did not go on to node b');
  t.same((await repo.read(wf.id, job.executionId)).record, mid, 'B’s record is untouched');
  bGate.open();
  t.equal(await bRun, 'succeeded');
  t.same(ownerWrites, ['running', 'running', 'succeeded'], 'B’s writes: node a, node b, the end');
  t.equal(charges.length, 1);
});

t.test('cancelled before the deferred running write: the call is stopped and the record shows the node cancelled', async (t) => {
  const repo = await repository(t);
  const wf = workflow(['a', 'b']);
  const job = jobOf(wf);
  const charges: string[] = [];
  const fx = fakeExecutor('A', repo, wf, charges);
  fx.deps.runningRecordDelayMs = 60_000;
  let stoppedBy: unknown;
  fx.deps.runners = {
    // A call that runs until its signal stops it, as the runner client's does.
    execute: (init, opts) => {
      fx.calling.push(String(init.requestId).split('.').pop()!);
      return new Promise((_, reject) =>
        opts.signal?.addEventListener('abort', () => {
          stoppedBy = opts.signal?.reason;
          reject(new Error('the call was cancelled'));
        }),
      );
    },
  };
  const cancel = new AbortController();
  const run = runExecution(job, 1, fx.deps, cancel.signal);
  await waitFor(() => fx.calling.includes('a'), 5000, 'A calling node a');
  t.equal((await repo.read(wf.id, job.executionId)).record, undefined, 'no record yet: the control plane sees it queued');
  // What CancelExecution does for a queued execution: the cancelled record, then the announcement.
  await repo.write(cancelledRecord(queuedRecord(job), new Date()), 0);
  cancel.abort(new ExecutionCancelledError('cancelled'));
  t.equal(await run, 'cancelled');
  t.type(stoppedBy, ExecutionCancelledError, 'the call was stopped by the cancel');
  const { record } = await repo.read(wf.id, job.executionId);
  t.equal(record?.status, 'cancelled');
  t.same(statuses(record), ['EXECUTION_STATUS_CANCELLED'], 'node a is in the record, cancelled; b never started');
  t.ok((record?.nodes[0] as { startedAt?: string } | undefined)?.startedAt, 'with the time it started');
  t.equal(record?.charged, true, 'nothing is owed (a stopped node is not charged)');
  t.same(charges, []);
});
