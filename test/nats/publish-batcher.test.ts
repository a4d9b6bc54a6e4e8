/**
 * PublishBatcher (src/nats/publish-batcher.ts) over a real JobPublisher and nats-server: publishes asked
 * for by independent promise chains during one event-loop turn reach the publisher together, in order, in
 * one synchronous pass after the turn (so nats.js writes them in one flush), each getting its own PubAck.
 */
import t from 'tap';
import { JobPublisher, type PublishOptions, type PublishResult } from '../../src/nats/job-publisher.js';
import { PublishBatcher, type Publisher } from '../../src/nats/publish-batcher.js';
import { ensureJobsStream, jobSubject } from '../../src/nats/streams.js';
import { enc, natsFixture } from './util.js';

/** The real publisher, noting each call and whether a microtask ran since the first call of its pass. */
class Recording implements Publisher {
  readonly calls: Array<{ n: number; pass: number }> = [];
  #pass = 0;
  #inPass = false;
  constructor(private readonly inner: Publisher) {}
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishResult> {
    if (!this.#inPass) {
      this.#inPass = true;
      this.#pass++;
      // Runs as soon as the current synchronous pass ends: a later call is then in another pass.
      queueMicrotask(() => (this.#inPass = false));
    }
    this.calls.push({ n: (JSON.parse(new TextDecoder().decode(data)) as { n: number }).n, pass: this.#pass });
    return this.inner.publish(subject, data, opts);
  }
}

const job = (n: number) => enc.encode(JSON.stringify({ n }));

t.test('publishes of one turn from independent promise chains go out in one pass, after the turn, in order', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  const recording = new Recording(pub);
  const batcher = new PublishBatcher(recording);

  // 20 chains, each publishing after a different number of microtask hops (as jobs at different points
  // of their run do): without the batcher they would reach nats.js in several passes, one flush each.
  const results = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      for (let hop = 0; hop < i % 5; hop++) await Promise.resolve();
      const r = batcher.publish(jobSubject('wf'), job(i));
      t.equal(recording.calls.length, 0, `publish ${i} waits for the end of the turn`);
      return r;
    }),
  );
  t.same(
    recording.calls.map((c) => c.pass),
    Array(20).fill(1),
    'all 20 in one synchronous pass',
  );
  const order = [0, 5, 10, 15, 1, 6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14, 19];
  t.same(
    recording.calls.map((c) => c.n),
    order,
    'in the order they were asked for',
  );
  t.same(
    results.map((r) => (r.ok ? r.seq : r.error)),
    Array.from({ length: 20 }, (_, i) => order.indexOf(i) + 1),
    'each resolves with its own PubAck (the stream seq of its message)',
  );

  // A publish of a later turn is a pass of its own.
  await new Promise((r) => setImmediate(r));
  const later = await batcher.publish(jobSubject('wf'), job(99));
  t.same(later, { ok: true, stream: 'JOBS', seq: 21, duplicate: false });
  t.same(recording.calls.at(-1), { n: 99, pass: 2 });
  t.equal((await jsm.streams.info('JOBS')).state.messages, 21);
});

t.test('a publisher that throws fails its own publish as unavailable; the rest of the pass still goes', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  const pub = new JobPublisher(client);
  t.teardown(() => pub.close());
  const throwing: Publisher = {
    publish: (subject, data, opts) => {
      if ((JSON.parse(new TextDecoder().decode(data)) as { n: number }).n === 1) throw new Error('boom');
      return pub.publish(subject, data, opts);
    },
  };
  const batcher = new PublishBatcher(throwing);
  const [a, b, c] = await Promise.all([0, 1, 2].map((n) => batcher.publish(jobSubject('wf'), job(n))));
  t.same(a, { ok: true, stream: 'JOBS', seq: 1, duplicate: false });
  t.same(b, { ok: false, error: 'unavailable', message: 'boom' });
  t.same(c, { ok: true, stream: 'JOBS', seq: 2, duplicate: false });
});
