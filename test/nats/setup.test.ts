/**
 * Stream, consumer and KV set-up against a real nats-server 2.9 (src/nats/streams.ts, job-consumer.ts),
 * the connection's start-before-NATS behaviour (connect.ts), and the test helper's restart.
 */
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureJobConsumer } from '../../src/nats/job-consumer.js';
import { KV_BUCKETS, checkMaxPayload, ensureJobsStream, ensureKvBuckets, ensureStream, jobsStreamConfig, maxJobBytes } from '../../src/nats/streams.js';
import { freePort, startNatsServer } from '../helpers/nats-server.js';
import { natsFixture, testClient, sleep } from './util.js';

const MiB = 1024 * 1024;
const NS = 1_000_000;

t.test('JOBS stream: work queue, file storage, discard new, dedup window; ensure is idempotent and updates limits', async (t) => {
  const { jsm } = await natsFixture(t);
  const a = await ensureJobsStream(jsm, { maxMsgs: 1000, maxBytes: 64 * MiB });
  t.equal(a.config.name, 'JOBS');
  t.same(a.config.subjects, ['ldbox.jobs.>']);
  t.equal(a.config.retention, 'workqueue');
  t.equal(a.config.storage, 'file');
  t.equal(a.config.discard, 'new', 'a full stream refuses new jobs instead of dropping old ones');
  t.equal(a.config.max_msgs, 1000);
  t.equal(a.config.max_bytes, 64 * MiB);
  t.equal(a.config.max_msg_size, maxJobBytes(5 * MiB), 'max_msg_size from the default body limit');
  t.equal(a.config.duplicate_window, 120_000 * NS, 'duplicate window 2 min');
  t.equal(a.config.max_age, 0, 'no age limit: it would drop accepted jobs silently');

  const b = await ensureJobsStream(jsm, { maxMsgs: 1000, maxBytes: 64 * MiB });
  t.same(b.config, a.config, 'second ensure changes nothing');
  t.equal((await jsm.streams.names().next()).length, 1, 'still one stream');

  const c = await ensureJobsStream(jsm, { maxMsgs: 50, maxBytes: 64 * MiB, duplicateWindowMs: 60_000 });
  t.equal(c.config.max_msgs, 50, 'limit updated in place');
  t.equal(c.config.duplicate_window, 60_000 * NS);

  // Three processes starting at once.
  const infos = await Promise.all([1, 2, 3].map(() => ensureJobsStream(jsm, { maxMsgs: 50, maxBytes: 64 * MiB, duplicateWindowMs: 60_000 })));
  t.ok(
    infos.every((i) => i.config.max_msgs === 50),
    'concurrent ensures agree',
  );
});

t.test('an existing stream of the wrong retention is refused with a clear message', async (t) => {
  const { jsm } = await natsFixture(t);
  await jsm.streams.add({ ...jobsStreamConfig(), retention: 'limits' } as never);
  await t.rejects(ensureJobsStream(jsm), /stream JOBS exists with retention="limits", wanted "workqueue"/);
  // ensureStream with a different name is unaffected.
  const other = await ensureStream(jsm, jobsStreamConfig({ name: 'JOBS2', subjects: ['other.>'] }));
  t.equal(other.config.retention, 'workqueue');
});

t.test('KV buckets: created once, TTLs as configured, updated when changed', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const nc = client.nc;
  const buckets = await ensureKvBuckets(nc, jsm);
  t.same(Object.keys(buckets).sort(), ['executions', 'idempotency', 'webhooks', 'workflows']);
  const info = async (name: string) => (await jsm.streams.info(`KV_${name}`)).config;
  t.equal((await info(KV_BUCKETS.idempotency)).max_age, 24 * 3600_000 * NS, 'idempotency keys honoured 24 h');
  t.equal((await info(KV_BUCKETS.executions)).max_age, 7 * 24 * 3600_000 * NS, 'executions kept 7 days');
  t.equal((await info(KV_BUCKETS.workflows)).max_age, 0, 'workflows never expire');
  t.equal((await info(KV_BUCKETS.workflows)).storage, 'file');

  await buckets.workflows.put('wf1', '{"id":"wf1"}');
  const again = await ensureKvBuckets(nc, jsm);
  t.equal((await again.workflows.get('wf1'))?.string(), '{"id":"wf1"}', 'ensure again keeps data');

  await ensureKvBuckets(nc, jsm, { idempotencyTtlMs: 3600_000, workflowsHistory: 5 });
  t.equal((await info(KV_BUCKETS.idempotency)).max_age, 3600_000 * NS, 'TTL updated in place');
  t.equal((await info(KV_BUCKETS.workflows)).max_msgs_per_subject, 5, 'history updated in place');
});

t.test('durable consumer: explicit ack, ack_wait, max_deliver = attempts + extra; idempotent', async (t) => {
  const { jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const a = await ensureJobConsumer(jsm);
  t.equal(a.config.durable_name, 'executor');
  t.equal(a.config.ack_policy, 'explicit');
  t.equal(a.config.ack_wait, 30_000 * NS);
  t.equal(a.config.max_deliver, 7, '5 attempts + 2 deliveries to record a crash in the last one');
  const b = await ensureJobConsumer(jsm);
  t.same(b.config, a.config, 'idempotent');
  const c = await ensureJobConsumer(jsm, { ackWaitMs: 60_000, maxAttempts: 3 });
  t.equal(c.config.ack_wait, 60_000 * NS);
  t.equal(c.config.max_deliver, 5);
});

t.test('max_payload: the 1 MB server default does not fit the default body limit; a configured one does', async (t) => {
  const small = await natsFixture(t);
  t.match(checkMaxPayload(small.client.nc, maxJobBytes(5 * MiB)), /max_payload is 1048576 bytes but jobs may be up to/);
  const big = await natsFixture(t, { maxPayload: 8 * MiB });
  t.equal(big.client.nc.info?.max_payload, 8 * MiB, 'helper config file applied');
  t.equal(checkMaxPayload(big.client.nc, maxJobBytes(5 * MiB)), undefined);
});

t.test('a role starts before NATS: connecting, then connected once the server comes up', async (t) => {
  const port = await freePort();
  const client = testClient(t, `nats://127.0.0.1:${port}`);
  const states: string[] = [];
  client.onState((s) => states.push(s));
  await sleep(400);
  t.equal(client.state, 'connecting', 'not ready while NATS is absent');
  t.throws(() => client.nc, /NATS is connecting/);
  const server = await startNatsServer({ port });
  t.teardown(() => server.stop());
  const nc = await client.whenConnected();
  t.equal(client.state, 'connected');
  t.same(states, ['connected']);
  const jsm = await jetstreamManager(nc);
  t.ok(await ensureJobsStream(jsm), 'usable');
});

t.test('close() stops a client that never connected, and rejects waiters', async (t) => {
  const port = await freePort();
  const client = testClient(t, `nats://127.0.0.1:${port}`);
  const waiting = client.whenConnected();
  await sleep(200);
  await client.close();
  t.equal(client.state, 'closed');
  await t.rejects(waiting, /closed/);
});

t.test('test helper: restart keeps port and data dir', async (t) => {
  const { server, client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const port = server.port;
  const pid = server.pid;
  await server.restart();
  t.equal(server.port, port);
  t.not(server.pid, pid, 'a new process');
  await sleep(50);
  const nc = await client.whenConnected();
  const jsm2 = await jetstreamManager(nc);
  t.equal((await jsm2.streams.info('JOBS')).config.name, 'JOBS', 'stream survived');
});
