/**
 * JobPublisher against a real nats-server 2.9 (src/nats/job-publisher.ts): PubAcks, de-duplication,
 * the typed failures (full, too_large, unavailable, rejected) and their exact 2.9 error codes.
 */
import t from 'tap';
import { JobPublisher } from '../../src/nats/job-publisher.js';
import { ensureJobsStream, jobSubject } from '../../src/nats/streams.js';
import { enc, natsFixture } from './util.js';

const job = (n: number) => enc.encode(JSON.stringify({ executionId: `ex${n}`, body: { n } }));

t.test('publish waits for the PubAck: ok with increasing seqs; concurrent publishes all acked', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  t.same(await pub.publish(jobSubject('wf1'), job(1)), { ok: true, stream: 'JOBS', seq: 1, duplicate: false });
  t.same(await pub.publish(jobSubject('wf1'), job(2)), { ok: true, stream: 'JOBS', seq: 2, duplicate: false });

  const many = await Promise.all(Array.from({ length: 2000 }, (_, i) => pub.publish(jobSubject('wf2'), job(i))));
  t.ok(
    many.every((r) => r.ok),
    '2000 concurrent publishes acked',
  );
  const seqs = new Set(many.map((r) => (r.ok ? r.seq : 0)));
  t.equal(seqs.size, 2000, 'each got its own seq (acks matched to the right publish)');
  t.equal(pub.pending, 0, 'nothing left pending');
  t.equal((await jsm.streams.info('JOBS')).state.messages, 2002);
});

t.test('a duplicate msgID inside the window is acked as duplicate with the first seq, stored once', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  const a = await pub.publish(jobSubject('wf1'), job(1), { msgID: 'wf1:delivery-1' });
  const b = await pub.publish(jobSubject('wf1'), job(1), { msgID: 'wf1:delivery-1' });
  const c = await pub.publish(jobSubject('wf1'), job(2), { msgID: 'wf1:delivery-2' });
  t.same(a, { ok: true, stream: 'JOBS', seq: 1, duplicate: false });
  t.same(b, { ok: true, stream: 'JOBS', seq: 1, duplicate: true }, 'duplicate: original seq');
  t.same(c, { ok: true, stream: 'JOBS', seq: 2, duplicate: false });
  t.equal((await jsm.streams.info('JOBS')).state.messages, 2);
});

t.test('a full stream (max_msgs) refuses new jobs with `full` and keeps the old ones', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm, { maxMsgs: 3 });
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  for (let i = 1; i <= 3; i++) t.ok((await pub.publish(jobSubject('wf'), job(i))).ok);
  const refused = await pub.publish(jobSubject('wf'), job(4));
  t.same(refused, { ok: false, error: 'full', message: 'maximum messages exceeded', errCode: 10077 }, '2.9: err_code 10077');
  const state = (await jsm.streams.info('JOBS')).state;
  t.equal(state.messages, 3, 'still 3 jobs');
  t.equal(state.first_seq, 1, 'the oldest job was not dropped');
  const first = await jsm.streams.getMessage('JOBS', { seq: 1 });
  t.same(first?.json(), { executionId: 'ex1', body: { n: 1 } });

  // Once a job is consumed (work queue: acked = deleted) there is room again.
  await jsm.consumers.add('JOBS', { durable_name: 'w', ack_policy: 'explicit' });
  const { jetstream } = await import('@nats-io/jetstream');
  const m = await (await jetstream(client.nc).consumers.get('JOBS', 'w')).next({ expires: 1000 });
  t.ok(await m?.ackAck());
  t.ok((await pub.publish(jobSubject('wf'), job(5))).ok, 'accepted again after one was consumed');
});

t.test('a full stream (max_bytes) refuses with `full`', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm, { maxBytes: 4096, maxMsgSize: 2048 });
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  const body = new Uint8Array(1000).fill(120);
  const results = [];
  for (let i = 0; i < 6; i++) results.push(await pub.publish(jobSubject('wf'), body));
  const firstRefusal = results.findIndex((r) => !r.ok);
  t.ok(firstRefusal > 0, 'some accepted, then refused');
  t.match(results[firstRefusal], { ok: false, error: 'full', message: 'maximum bytes exceeded', errCode: 10077 });
  t.ok(
    results.slice(firstRefusal).every((r) => !r.ok && r.error === 'full'),
    'all later ones refused too',
  );
});

t.test('too large: over the stream max_msg_size (10054) or over the server max_payload (not sent)', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm, { maxMsgSize: 1024 });
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  t.match(await pub.publish(jobSubject('wf'), new Uint8Array(2000)), {
    ok: false,
    error: 'too_large',
    errCode: 10054,
    message: /message size exceeds maximum/,
  });
  const overPayload = await pub.publish(jobSubject('wf'), new Uint8Array(1024 * 1024 + 1));
  t.match(overPayload, { ok: false, error: 'too_large', message: /exceeds the NATS max_payload of 1048576/ });
  t.equal((await jsm.streams.info('JOBS')).state.messages, 0);
  t.ok((await pub.publish(jobSubject('wf'), new Uint8Array(100))).ok, 'the connection is fine afterwards');
});

t.test('no stream for the subject: `unavailable` (no responders) at once, not after the timeout', async (t) => {
  const { client } = await natsFixture(t);
  const pub = new JobPublisher(client, { timeoutMs: 5000 });
  t.teardown(() => pub.close());
  const t0 = Date.now();
  const r = await pub.publish(jobSubject('wf'), job(1));
  t.match(r, { ok: false, error: 'unavailable', message: /no responders/ });
  t.ok(Date.now() - t0 < 1000, `answered in ${Date.now() - t0} ms`);
});

t.test('no PubAck within the timeout: `unavailable`', async (t) => {
  const { client } = await natsFixture(t);
  // Something listens on the subject but never answers (a stuck responder).
  const sink = client.nc.subscribe('stuck.>');
  t.teardown(() => sink.unsubscribe());
  const pub = new JobPublisher(client, { timeoutMs: 300 });
  t.teardown(() => pub.close());
  const t0 = Date.now();
  const r = await pub.publish('stuck.x', job(1));
  const took = Date.now() - t0;
  t.match(r, { ok: false, error: 'unavailable', message: 'no PubAck within 300 ms' });
  t.ok(took >= 290 && took < 1000, `timed out after ${took} ms`);
  t.equal(pub.pending, 0);
});

t.test('expectStream mismatch is `rejected`', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  t.match(await pub.publish(jobSubject('wf'), job(1), { expectStream: 'OTHER' }), { ok: false, error: 'rejected', message: /expected stream does not match/ });
  t.match(await pub.publish(jobSubject('wf'), job(1), { expectStream: 'JOBS', headers: { 'X-Trace': 'abc' } }), { ok: true });
  const m = await jsm.streams.getMessage('JOBS', { seq: 1 });
  t.equal(m?.header.get('X-Trace'), 'abc', 'extra headers stored');
});

t.test('the headers as nats-server stores them: every header, exact values; a line break is `rejected`, nothing sent, nothing thrown', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  const r = await pub.publish(jobSubject('wf'), job(1), {
    msgID: 'ex_1',
    expectStream: 'JOBS',
    headers: { 'Ldbox-Not-Before': '1700000000000', 'X-Trace': ' padded ' },
  });
  t.match(r, { ok: true, seq: 1 });
  const m = await jsm.streams.getMessage('JOBS', { seq: 1 });
  t.same([...(m?.header.keys() ?? [])].sort(), ['Ldbox-Not-Before', 'Nats-Expected-Stream', 'Nats-Msg-Id', 'X-Trace'], 'the four headers, nothing else');
  t.equal(m?.header.get('Nats-Msg-Id'), 'ex_1');
  t.equal(m?.header.get('Ldbox-Not-Before'), '1700000000000');
  t.equal(m?.header.get('X-Trace'), 'padded', 'trimmed, as nats.js does');
  t.match(await pub.publish(jobSubject('wf'), job(1), { msgID: 'ex_1' }), { ok: true, duplicate: true, seq: 1 }, 'Nats-Msg-Id de-duplicates');
  for (const headers of [{ 'X-Trace': 'a\r\nNats-Msg-Id: forged' }, { 'X-Tr\nace': 'a' }] as Record<string, string>[]) {
    t.match(await pub.publish(jobSubject('wf'), job(2), { headers }), { ok: false, error: 'rejected', message: /cannot contain|not a valid character/ });
  }
  t.equal((await jsm.streams.info('JOBS')).state.messages, 1, 'the refused ones were not sent');
});

t.test('a closed publisher answers `unavailable`', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  pub.close();
  t.match(await pub.publish(jobSubject('wf'), job(1)), { ok: false, error: 'unavailable', message: 'publisher closed' });
});
