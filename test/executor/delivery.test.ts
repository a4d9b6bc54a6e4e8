/**
 * "Duplicate executions from one request" and "accepted but never ran", the two failures users of peer
 * systems report, checked end to end: every 202 becomes exactly one finished execution, and a retried
 * request with an Idempotency-Key runs once — also across a NATS restart in the middle of the load.
 */
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { hook, rpc } from '../gateway/harness.js';
import { jobsAllAcked, testClient, waitFor } from '../nats/util.js';
import { createFlow, sharedRunner, stackFixture, waitForFinish } from './harness.js';

// Each test has a stack of its own (the second restarts NATS), on one runner.
const runner = sharedRunner(t);

/** Every execution of a workflow, all pages. */
async function allExecutions(base: string, workflowId: string): Promise<any[]> {
  const out: any[] = [];
  let pageToken = '';
  do {
    const r = await rpc(base, 'ListExecutions', { workflowId, pageSize: 100, pageToken });
    if (r.status !== 200) throw new Error(`ListExecutions: ${r.status} ${r.text}`);
    out.push(...(r.json.executions ?? []));
    pageToken = r.json.nextPageToken ?? '';
  } while (pageToken);
  return out;
}

t.test('retries with one Idempotency-Key get one execution id and run once', async (t) => {
  const s = await stackFixture(t, { runner: await runner() });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return data.input', input: { n: '{{trigger.output.body.n}}' } }]);
  const replies = await Promise.all(Array.from({ length: 5 }, () => hook(s.base, wf.id, { body: { n: 1 }, headers: { 'idempotency-key': 'order-42' } })));
  t.same(
    replies.map((r) => r.status),
    [202, 202, 202, 202, 202],
  );
  const ids = new Set(replies.map((r) => r.json.executionId));
  t.equal(ids.size, 1, 'one execution id for all retries');
  const ex = await waitForFinish(s.base, [...ids][0]!);
  t.equal(ex.status, 'EXECUTION_STATUS_SUCCEEDED');
  t.equal(ex.attempts, 1);
  // A later retry, after the run finished, still gets the same id and starts nothing.
  const again = await hook(s.base, wf.id, { body: { n: 1 }, headers: { 'idempotency-key': 'order-42' } });
  t.equal(again.json.executionId, ex.id);
  // Had the retry queued a second job, the executor would have run it by the time every job is acked.
  const jsm = await jetstreamManager(await testClient(t, s.nats.url, 'ldbox-test-reader').whenConnected());
  await waitFor(async () => (await jobsAllAcked(jsm)).done, 10_000, 'every queued job handled');
  t.equal((await allExecutions(s.base, wf.id)).length, 1, 'one execution in all');
});

t.test('every accepted webhook runs exactly once, also when NATS restarts under load', async (t) => {
  // An ack sent while NATS restarts can be lost: that job comes back after the ack wait, then finds its
  // record finished. 5 s instead of the default 30 s bounds the wait for it (heartbeats every ~1.7 s
  // keep a running job's delivery alive; a job here runs for milliseconds).
  const s = await stackFixture(t, { runner: await runner(), executorEnv: { LDBOX_EXECUTOR_ACK_WAIT_MS: '5000' } });
  const wf = await createFlow(s.base, [{ id: 'a', code: 'return { n: data.input.n }', input: { n: '{{trigger.output.body.n}}' } }]);
  const accepted = new Map<string, number>();
  let refused = 0;
  const send = async (n: number) => {
    const r = await hook(s.base, wf.id, { body: { n } }).catch(() => undefined);
    if (r?.status === 202) accepted.set(r.json.executionId, n);
    else {
      refused++;
      if (r) t.equal(r.status, 503, `a webhook that was not stored is refused with 503, got ${r.status} ${r.text}`);
    }
  };
  const waves = async (from: number, count: number) => {
    for (let i = from; i < from + count; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => send(i + j)));
  };
  await waves(0, 100);
  const restart = s.nats.restart();
  await waves(100, 100); // during the restart: some are refused, none lost
  await restart;
  // The third wave starts once the gateway says it can store jobs again (a condition, not a pause).
  const readyBy = Date.now() + 30_000;
  while (
    (await fetch(`${s.base}/readyz`).then(
      (r) => r.status,
      () => 0,
    )) !== 200
  ) {
    if (Date.now() > readyBy) throw new Error('the gateway did not become ready after the NATS restart');
    await new Promise((r) => setTimeout(r, 100));
  }
  await waves(200, 100);
  t.ok(accepted.size >= 200, `most webhooks were accepted (${accepted.size} accepted, ${refused} refused)`);

  const deadline = Date.now() + 60_000;
  let executions: any[] = [];
  for (;;) {
    executions = await allExecutions(s.base, wf.id).catch(() => []);
    const done = executions.filter((e) => e.status === 'EXECUTION_STATUS_SUCCEEDED' || e.status === 'EXECUTION_STATUS_FAILED');
    if (done.length >= accepted.size || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const byId = new Map(executions.map((e) => [e.id, e]));
  t.equal(executions.length, byId.size, 'no execution is listed twice');
  t.same([...byId.keys()].sort(), [...accepted.keys()].sort(), 'the executions are exactly the accepted webhooks: none lost, none extra');
  const wrong = executions.filter((e) => e.status !== 'EXECUTION_STATUS_SUCCEEDED' || e.nodes.length !== 1 || e.nodes[0].output.n !== accepted.get(e.id));
  t.same(
    wrong.map((e) => `${e.id} ${e.status} ${e.error}`),
    [],
    'each succeeded once with its own input',
  );
});
