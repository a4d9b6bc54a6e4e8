/**
 * The executor's durable pull consumer (src/nats/job-consumer.ts) against a real nats-server 2.9:
 * redelivery after no ack, heartbeats that keep a long job, bounded attempts with the last one detected,
 * a crash in the last attempt still recorded, and the 2.9 `term` quirk.
 */
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import type { NatsClient } from '../../src/nats/connect.js';
import { Job, ensureJobConsumer, runJobConsumer } from '../../src/nats/job-consumer.js';
import { JobPublisher } from '../../src/nats/job-publisher.js';
import { ensureJobsStream, jobSubject } from '../../src/nats/streams.js';
import { enc, natsFixture, sleep, waitFor } from './util.js';
import type { JetStreamManager } from '@nats-io/jetstream';

async function setup(client: NatsClient, jsm: JetStreamManager, n: number, opts: { ackWaitMs: number; maxAttempts?: number }) {
  await ensureJobsStream(jsm);
  await ensureJobConsumer(jsm, opts);
  const pub = new JobPublisher(client);
  for (let i = 1; i <= n; i++) {
    const r = await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: i })), { msgID: `ex-${i}` });
    if (!r.ok) throw new Error(r.message);
  }
  pub.close();
}

const messages = async (jsm: JetStreamManager) => (await jsm.streams.info('JOBS')).state.messages;

/** Jobs the consumer could still deliver: pending, or delivered and awaiting an ack. */
async function unsettled(jsm: JetStreamManager): Promise<number> {
  const info = await jsm.consumers.info('JOBS', 'executor');
  return info.num_pending + info.num_ack_pending;
}

t.test('a job not acked within ack_wait is redelivered, with the delivery count', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 1, { ackWaitMs: 1000 });
  const c = await jetstream(client.nc).consumers.get('JOBS', 'executor');
  const m1 = await c.next({ expires: 1000 });
  const j1 = new Job(m1!, 5);
  t.equal(j1.attempt, 1);
  t.equal(j1.msgID, 'ex-1', 'Nats-Msg-Id readable as the execution id');
  t.same(j1.json(), { n: 1 });
  const t0 = Date.now();
  const m2 = await c.next({ expires: 3000 }); // nothing acked: comes back after ack_wait
  const j2 = new Job(m2!, 5);
  t.equal(j2.seq, j1.seq, 'the same job');
  t.equal(j2.attempt, 2);
  t.ok(Date.now() - t0 >= 800, `redelivered after ~ack_wait (${Date.now() - t0} ms)`);
  t.ok(await j2.ack(), 'ack confirmed by the server');
  t.equal(await messages(jsm), 0, 'acked job removed from the work queue');
});

t.test('heartbeats keep a job that runs longer than ack_wait; it is delivered once', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 1, { ackWaitMs: 1000 });
  const attempts: number[] = [];
  const loop = runJobConsumer({
    client,
    ackWaitMs: 1000,
    concurrency: 2, // a second slot would receive a redelivery if the heartbeat failed
    handler: async (job) => {
      attempts.push(job.attempt);
      await sleep(2500);
    },
    onExhausted: async () => void t.fail('not exhausted'),
  });
  t.teardown(() => loop.close());
  await waitFor(async () => attempts.length === 1 && (await messages(jsm)) === 0, 6000, 'job done');
  await sleep(300);
  t.same(attempts, [1], 'one delivery, no redelivery during the 2.5 s run');
  await loop.close();
});

t.test('failed attempts are retried with a delay; the last one is flagged and recorded, then the job is removed', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 1, { ackWaitMs: 2000, maxAttempts: 3 });
  const seen: Array<{ attempt: number; last: boolean; at: number }> = [];
  const exhausted: Array<{ attempt: number; error: string }> = [];
  const loop = runJobConsumer({
    client,
    ackWaitMs: 2000,
    maxAttempts: 3,
    retryDelayMs: () => 200,
    handler: async (job) => {
      seen.push({ attempt: job.attempt, last: job.isLastAttempt, at: Date.now() });
      throw new Error(`boom ${job.attempt}`);
    },
    onExhausted: async (job, error) => {
      exhausted.push({ attempt: job.attempt, error: (error as Error).message });
    },
  });
  t.teardown(() => loop.close());
  await waitFor(() => exhausted.length === 1, 5000, 'exhausted');
  await waitFor(async () => (await messages(jsm)) === 0, 2000, 'job removed');
  t.same(
    seen.map((s) => [s.attempt, s.last]),
    [
      [1, false],
      [2, false],
      [3, true],
    ],
  );
  t.ok(seen[1]!.at - seen[0]!.at >= 180, 'nak delay respected');
  t.same(exhausted, [{ attempt: 3, error: 'boom 3' }], 'failure recorded once, on the last attempt');
  // Term removed it for good: nothing is left for the consumer to deliver (no job pending, none awaiting an
  // ack whose ack_wait could run out), and a flush has brought in anything the server had sent before.
  await waitFor(async () => (await unsettled(jsm)) === 0, 5000, 'nothing left to deliver');
  await client.nc.flush();
  t.equal(seen.length, 3, 'never delivered again');
  await loop.close();
});

t.test('a process dying during the last attempt: the job comes back once more and is recorded as failed, not run', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 1, { ackWaitMs: 1000, maxAttempts: 2 });
  // Two "executors" that pull the job and die without settling it.
  const c = await jetstream(client.nc).consumers.get('JOBS', 'executor');
  t.equal((await c.next({ expires: 1000 }))?.info.deliveryCount, 1);
  t.equal((await c.next({ expires: 3000 }))?.info.deliveryCount, 2);
  const handled: number[] = [];
  const exhausted: Array<{ attempt: number; error: unknown }> = [];
  const loop = runJobConsumer({
    client,
    ackWaitMs: 1000,
    maxAttempts: 2,
    handler: async (job) => void handled.push(job.attempt),
    onExhausted: async (job, error) => void exhausted.push({ attempt: job.attempt, error }),
  });
  t.teardown(() => loop.close());
  await waitFor(() => exhausted.length === 1, 5000, 'exhausted');
  t.same(exhausted, [{ attempt: 3, error: undefined }], 'delivery 3 > 2 attempts: recorded as failed');
  t.same(handled, [], 'the handler did not run it again');
  await waitFor(async () => (await messages(jsm)) === 0, 2000, 'job removed');
  await loop.close();
});

t.test('if recording the failure fails, the job is retried within the extra deliveries', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 1, { ackWaitMs: 2000, maxAttempts: 1 });
  let calls = 0;
  const loop = runJobConsumer({
    client,
    ackWaitMs: 2000,
    maxAttempts: 1,
    retryDelayMs: () => 100,
    handler: async () => {
      throw new Error('fail');
    },
    onExhausted: async () => {
      calls++;
      if (calls === 1) throw new Error('KV down');
    },
  });
  t.teardown(() => loop.close());
  await waitFor(() => calls === 2, 5000, 'second recording');
  await waitFor(async () => (await messages(jsm)) === 0, 2000, 'job removed');
  await loop.close();
});

t.test('nats-server 2.9 ignores `term` with a reason; Job.term() sends a bare term that removes the job', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 2, { ackWaitMs: 1000 });
  const c = await jetstream(client.nc).consumers.get('JOBS', 'executor');
  const raw = await c.next({ expires: 1000 });
  raw!.term('with a reason'); // what nats.js would send for term(reason)
  const job = new Job((await c.next({ expires: 1000 }))!, 5);
  job.term();
  await sleep(100);
  t.equal(await messages(jsm), 1, 'the bare term removed its job; the one with a reason is still there');
  const back = await c.next({ expires: 3000 });
  t.equal(back?.seq, raw!.seq, 'the job terminated with a reason came back after ack_wait');
  t.equal(back?.info.deliveryCount, 2);
  back!.term();
});

t.test('concurrency: jobs are spread over the slots; stop waits for jobs in flight', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await setup(client, jsm, 12, { ackWaitMs: 5000 });
  let running = 0;
  let maxRunning = 0;
  const done: number[] = [];
  const loop = runJobConsumer({
    client,
    ackWaitMs: 5000,
    concurrency: 4,
    handler: async (job) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(50);
      running--;
      done.push(job.json<{ n: number }>().n);
    },
    onExhausted: async () => void t.fail('not exhausted'),
  });
  await waitFor(() => done.length === 12, 5000, 'all done');
  t.equal(maxRunning, 4, 'four at a time');
  t.same(
    [...done].sort((a, b) => a - b),
    Array.from({ length: 12 }, (_, i) => i + 1),
  );
  const t0 = Date.now();
  await loop.close();
  t.ok(Date.now() - t0 < 500, `stop does not wait out the pending pulls (${Date.now() - t0} ms)`);
  t.equal(await messages(jsm), 0);

  // A job in flight when stop is called is finished (and acked) before stop resolves.
  const loop2 = runJobConsumer({
    client,
    ackWaitMs: 5000,
    handler: async (job) => {
      running++;
      await sleep(400);
      running--;
      done.push(job.json<{ n: number }>().n);
    },
    onExhausted: async () => void t.fail('not exhausted'),
  });
  const pub = new JobPublisher(client);
  await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: 13 })));
  pub.close();
  await waitFor(() => running === 1, 3000, 'slow job running');
  await loop2.close();
  t.equal(done.at(-1), 13, 'stop waited for the job in flight');
  t.equal(await messages(jsm), 0, 'and it was acked');
});
