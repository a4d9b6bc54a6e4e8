/**
 * NATS going away mid-test, then coming back on the same port with the same data dir (kill -9 = a
 * process crash): every piece of src/nats must notice quickly, fail fast instead of hanging, keep no
 * acked job from being lost, and recover by itself without a restart of the client process.
 */
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsState } from '../../src/nats/connect.js';
import { claimIdempotencyKey } from '../../src/nats/idempotency.js';
import { ensureJobConsumer, runJobConsumer } from '../../src/nats/job-consumer.js';
import { JobPublisher, type PublishResult } from '../../src/nats/job-publisher.js';
import { watchKvBucket } from '../../src/nats/kv-cache.js';
import { KV_BUCKETS, ensureJobsStream, ensureKvBuckets, jobSubject } from '../../src/nats/streams.js';
import { enc, jobsAllAcked, natsFixture, reconnectAttempts, sleep, startTcpProxy, testClient, waitFor } from './util.js';

t.test('kill -9 mid-publish: fast `unavailable`, reconnecting state, then self-recovery with every acked job kept', async (t) => {
  const { server, client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const { idempotency } = await ensureKvBuckets(client.nc, jsm, { timeoutMs: 1000 });
  const pub = new JobPublisher(client, { timeoutMs: 2000 });
  t.teardown(() => pub.close());
  const states: NatsState[] = [];
  client.onState((s) => states.push(s));
  const attempts = reconnectAttempts(client.nc);

  // 300 acked jobs, then 300 more in flight when the server dies.
  for (let i = 0; i < 300; i++) {
    const r = await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: i })));
    if (!r.ok) throw new Error(r.message);
  }
  // Then 5000 publishes at once, and the kill from the 100th ack's callback: acks still outstanding.
  const inFlight: Array<Promise<PublishResult>> = [];
  let ackedSoFar = 0;
  let killedAt = 0;
  for (let i = 300; i < 5300; i++) {
    const p = pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: i })));
    void p.then((r) => {
      if (r.ok && ++ackedSoFar === 100) {
        killedAt = Date.now();
        process.kill(server.pid!, 'SIGKILL');
      }
    });
    inFlight.push(p);
  }
  await waitFor(() => killedAt > 0, 5000, 'acks arriving');
  await server.kill('SIGKILL'); // waits for the exit
  const results = await Promise.all(inFlight);
  t.ok(Date.now() - killedAt < 2500, `every in-flight publish answered (${Date.now() - killedAt} ms after the kill), none hangs`);
  const acked = results.filter((r): r is Extract<PublishResult, { ok: true }> => r.ok);
  t.ok(
    results.every((r) => r.ok || r.error === 'unavailable'),
    `in-flight publishes: acked or unavailable (${acked.length} acked, ${results.length - acked.length} unavailable)`,
  );
  // (How many acks were still outstanding at the kill varies: the kernel still delivers acks the server
  // wrote before dying. Publishes answered `unavailable` may have been stored: hence msgID de-dup.)

  await waitFor(() => client.state === 'reconnecting', 2000, 'reconnecting state');
  let t0 = Date.now();
  t.match(await pub.publish(jobSubject('wf'), enc.encode('{}')), { ok: false, error: 'unavailable', message: 'NATS reconnecting' });
  t.ok(Date.now() - t0 < 50, 'publish while NATS is down fails at once');
  t0 = Date.now();
  t.match(await claimIdempotencyKey(idempotency, 'wf', 'k', 'ex-1'), { ok: false, error: 'unavailable' });
  t.ok(Date.now() - t0 < 1500, `KV claim while down fails within its timeout (${Date.now() - t0} ms)`);

  // Down for a while (several reconnect attempts), then back: same port, same data dir.
  const before = attempts();
  await waitFor(() => attempts() >= before + 5, 10_000, 'five more reconnect attempts');
  t.equal(client.state, 'reconnecting', 'still retrying after five more failed reconnect attempts');
  await server.restart();
  await waitFor(() => client.state === 'connected', 5000, 'reconnected by itself');
  t.same(states, ['reconnecting', 'connected']);

  // JetStream may need a moment after the process start: retry briefly.
  let after: PublishResult | undefined;
  await waitFor(async () => (after = await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: 'after' })))).ok, 5000, 'publish after restart');
  t.ok(after?.ok, 'publishing works again');

  const jsm2 = await jetstreamManager(client.nc);
  const state = (await jsm2.streams.info('JOBS')).state;
  t.ok(state.messages >= 300 + acked.length + 1, `all acked jobs survived kill -9 (${state.messages} stored, ${300 + acked.length} acked before the kill)`);
  for (const seq of [1, 300, ...acked.map((a) => a.seq)]) {
    const m = await jsm2.streams.getMessage('JOBS', { seq });
    if (!m) t.fail(`acked seq ${seq} missing`);
  }
  t.match(await claimIdempotencyKey(idempotency, 'wf', 'k', 'ex-1'), { ok: true, first: true }, 'KV works again with the same handle');
});

t.test('the consumer loop and the KV cache ride out a server crash and resume on their own', async (t) => {
  const { server, client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  await ensureJobConsumer(jsm, { ackWaitMs: 2000 });
  const { workflows } = await ensureKvBuckets(client.nc, jsm);
  await workflows.put('wf1', JSON.stringify({ v: 1 }));
  const cache = watchKvBucket<{ v: number }>({ client, bucket: KV_BUCKETS.workflows });
  t.teardown(() => cache.close());
  await cache.whenReady();

  const processed = new Set<number>();
  const loop = runJobConsumer({
    client,
    ackWaitMs: 2000,
    concurrency: 2,
    handler: async (job) => {
      await sleep(10);
      processed.add(job.json<{ n: number }>().n);
    },
    onExhausted: async () => void t.fail('no job should be exhausted'),
  });
  t.teardown(() => loop.close());

  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  for (let i = 0; i < 100; i++) {
    const r = await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: i })));
    if (!r.ok) throw new Error(r.message);
  }
  await waitFor(() => processed.size >= 10, 3000, 'some jobs processed');
  const attempts = reconnectAttempts(client.nc);
  await server.kill('SIGKILL');
  const atKill = processed.size;
  t.ok(atKill < 100, `killed mid-run (${atKill} of 100 done)`);
  await waitFor(() => client.state === 'reconnecting', 2000, 'reconnecting');
  t.equal(cache.get('wf1')?.v, 1, 'cache keeps serving lookups while NATS is down');
  // Down for several reconnect attempts before it comes back.
  await waitFor(() => attempts() >= 5, 10_000, 'five reconnect attempts');

  await server.restart();
  await waitFor(() => client.state === 'connected', 5000, 'reconnected');
  await waitFor(async () => (await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: 100 })))).ok, 5000, 'publish after restart');
  await waitFor(() => processed.size === 101, 15_000, 'every job processed after the restart');
  t.pass(`consumer resumed: ${101 - atKill} jobs processed after the crash`);

  await workflows.put('wf2', JSON.stringify({ v: 1 }));
  await workflows.put('wf1', JSON.stringify({ v: 2 }));
  await waitFor(() => cache.get('wf2')?.v === 1 && cache.get('wf1')?.v === 2, 5000, 'cache sees changes after the restart');
  // The JetStreamManager made before the crash still works: the connection object survives reconnects.
  // An ack sent as the server died is lost: that job comes back after ack_wait (2 s) and is acked then;
  // a busy machine needs more than one such round.
  let last = '';
  await waitFor(
    async () => {
      const acked = await jobsAllAcked(jsm);
      last = acked.detail;
      return acked.done;
    },
    20_000,
    'every job acked',
  ).catch((err: Error) => {
    throw new Error(`${err.message} (${last})`);
  });
  t.pass(`every job acked (${last})`);
});

t.test('a graceful server restart (SIGTERM) is ridden out the same way', async (t) => {
  const { server, client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  t.ok((await pub.publish(jobSubject('wf'), enc.encode('{}'))).ok);
  await server.restart();
  await waitFor(async () => (await pub.publish(jobSubject('wf'), enc.encode('{}'))).ok, 5000, 'publish after restart');
  t.equal(client.state, 'connected');
});

t.test('one client cut off (partition) while others write: it reports reconnecting, then catches up, deletes included', async (t) => {
  const { server, client: writer, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const { workflows } = await ensureKvBuckets(writer.nc, jsm);
  await workflows.put('wf1', JSON.stringify({ v: 1 }));
  await workflows.put('wf2', JSON.stringify({ v: 1 }));

  const proxy = await startTcpProxy(t, server.port);
  const gateway = testClient(t, proxy.url, 'ldbox-gateway');
  await gateway.whenConnected();
  const cache = watchKvBucket<{ v: number }>({ client: gateway, bucket: KV_BUCKETS.workflows });
  t.teardown(() => cache.close());
  await cache.whenReady();
  t.equal(cache.size, 2);
  const pub = new JobPublisher(gateway, { timeoutMs: 2000 });
  t.teardown(() => pub.close());
  t.ok((await pub.publish(jobSubject('wf1'), enc.encode('{}'))).ok);

  const attempts = reconnectAttempts(gateway.nc);
  await proxy.cut();
  await waitFor(() => gateway.state === 'reconnecting', 2000, 'gateway notices');
  t.match(await pub.publish(jobSubject('wf1'), enc.encode('{}')), { ok: false, error: 'unavailable' }, 'webhooks would get 503');
  // Meanwhile the rest of the system goes on.
  await workflows.delete('wf1');
  await workflows.put('wf2', JSON.stringify({ v: 2 }));
  await workflows.put('wf3', JSON.stringify({ v: 1 }));
  t.equal(cache.get('wf1')?.v, 1, 'stale but available while cut off');

  // Cut off for a few reconnect attempts before the network comes back.
  await waitFor(() => attempts() >= 3, 10_000, 'three reconnect attempts');
  await proxy.restore();
  await waitFor(() => gateway.state === 'connected', 5000, 'gateway reconnects');
  await waitFor(() => !cache.has('wf1') && cache.get('wf2')?.v === 2 && cache.get('wf3')?.v === 1, 5000, 'cache caught up');
  t.same(Object.fromEntries(cache.entries()), { wf2: { v: 2 }, wf3: { v: 1 } });
  t.ok((await pub.publish(jobSubject('wf1'), enc.encode('{}'))).ok, 'publishing again');
});
