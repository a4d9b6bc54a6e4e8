/**
 * The job loop (src/nats/job-consumer.ts) keeps nothing per job once the job is done: after a few hundred
 * jobs the live Promise objects are as many as before them. Waiting "until a job frees a slot or the loop
 * stops" with `Promise.race([slotFreed, stopped])` on one long-lived `stopped` promise left a reaction
 * (and the race's promise) on it per wait, freed only at shutdown: the executor's heap grew in bench:soak.
 * Counted with `v8.queryObjects`, which collects garbage first, at two moments when the loop is idle.
 */
import { queryObjects } from 'node:v8';
import t from 'tap';
import { ensureJobConsumer, runJobConsumer } from '../../src/nats/job-consumer.js';
import { JobPublisher } from '../../src/nats/job-publisher.js';
import { ensureJobsStream, jobSubject } from '../../src/nats/streams.js';
import type { NatsClient } from '../../src/nats/connect.js';
import { enc, natsFixture, waitFor } from './util.js';

const WARM_UP = 50;
const JOBS = 400;

async function publish(client: NatsClient, from: number, to: number): Promise<void> {
  const pub = new JobPublisher(client);
  for (let i = from; i <= to; i++) {
    const r = await pub.publish(jobSubject('wf'), enc.encode(JSON.stringify({ n: i })), { msgID: `ex-${i}` });
    if (!r.ok) throw new Error(r.message);
  }
  pub.close();
}

const livePromises = (): number => queryObjects(Promise, { format: 'count' }) as number;

t.test('the job loop holds no promise per job done', async (t) => {
  const { client, jsm } = await natsFixture(t);
  await ensureJobsStream(jsm);
  await ensureJobConsumer(jsm, { ackWaitMs: 30_000 });
  let done = 0;
  const loop = runJobConsumer({
    client,
    ackWaitMs: 30_000,
    concurrency: 1, // every job fills the only slot: the loop waits for a free slot once per job
    handler: async () => {
      done++;
    },
    onExhausted: async () => void t.fail('not exhausted'),
  });
  t.teardown(() => loop.close());
  const idle = async (n: number) => {
    await waitFor(async () => done === n && (await jsm.streams.info('JOBS')).state.messages === 0, 20_000, `${n} jobs done and acked`);
  };

  // Warm up (connection, consumer, JIT), then count at rest: the loop waits on a fetch either time.
  await publish(client, 1, WARM_UP);
  await idle(WARM_UP);
  const before = livePromises();
  await publish(client, WARM_UP + 1, WARM_UP + JOBS);
  await idle(WARM_UP + JOBS);
  const after = livePromises();

  // The leak kept at least one promise per job (400); what is in flight at rest varies by a few.
  t.ok(after - before < JOBS / 10, `live promises ${before} before ${JOBS} jobs, ${after} after (at most ${JOBS / 10} more)`);
  await loop.close();
});
