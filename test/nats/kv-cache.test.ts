/**
 * KvCache (src/nats/kv-cache.ts) against a real nats-server 2.9: initial values, puts, updates, deletes,
 * purges, undecodable values, an empty bucket.
 */
import t from 'tap';
import { watchKvBucket } from '../../src/nats/kv-cache.js';
import { KV_BUCKETS, ensureKvBuckets } from '../../src/nats/streams.js';
import { natsFixture, waitFor } from './util.js';

interface Wf {
  id: string;
  v: number;
}

t.test('initial values, then puts, updates, deletes and purges are mirrored in memory', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const { workflows: kv } = await ensureKvBuckets(client.nc, jsm);
  await kv.put('wf1', JSON.stringify({ id: 'wf1', v: 1 }));
  await kv.put('wf2', JSON.stringify({ id: 'wf2', v: 1 }));
  await kv.put('wf2', JSON.stringify({ id: 'wf2', v: 2 }));
  await kv.put('gone', JSON.stringify({ id: 'gone', v: 1 }));
  await kv.delete('gone');

  const cache = watchKvBucket<Wf>({ client, bucket: KV_BUCKETS.workflows });
  t.teardown(() => cache.close());
  t.equal(cache.ready, false);
  await cache.whenReady();
  t.equal(cache.ready, true);
  t.same(Object.fromEntries(cache.entries()), { wf1: { id: 'wf1', v: 1 }, wf2: { id: 'wf2', v: 2 } }, 'latest values, deleted key absent');

  const changes: Array<[string, Wf | undefined]> = [];
  cache.onChange((k, v) => changes.push([k, v]));
  await kv.put('wf3', JSON.stringify({ id: 'wf3', v: 1 }));
  await waitFor(() => cache.has('wf3'), 2000, 'put seen');
  await kv.put('wf1', JSON.stringify({ id: 'wf1', v: 2 }));
  await waitFor(() => cache.get('wf1')?.v === 2, 2000, 'update seen');
  await kv.delete('wf2');
  await waitFor(() => !cache.has('wf2'), 2000, 'delete seen');
  await kv.purge('wf3');
  await waitFor(() => !cache.has('wf3'), 2000, 'purge seen');
  await kv.put('bad', 'not json');
  await kv.put('wf4', JSON.stringify({ id: 'wf4', v: 1 }));
  await waitFor(() => cache.has('wf4'), 2000, 'later put seen');
  t.equal(cache.has('bad'), false, 'undecodable value ignored, cache keeps working');
  t.same(changes, [
    ['wf3', { id: 'wf3', v: 1 }],
    ['wf1', { id: 'wf1', v: 2 }],
    ['wf2', undefined],
    ['wf3', undefined],
    ['bad', undefined],
    ['wf4', { id: 'wf4', v: 1 }],
  ]);
  t.equal(cache.size, 2);
});

t.test('an empty bucket is ready at once and fills up', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const { webhooks: kv } = await ensureKvBuckets(client.nc, jsm);
  const cache = watchKvBucket<string>({ client, bucket: KV_BUCKETS.webhooks, decode: (v) => new TextDecoder().decode(v) });
  t.teardown(() => cache.close());
  await cache.whenReady();
  t.equal(cache.size, 0);
  await kv.put('hook1', 'wf1');
  await waitFor(() => cache.get('hook1') === 'wf1', 2000, 'put seen');
});

t.test('a missing bucket: not ready, and ready once it is created', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const cache = watchKvBucket<Wf>({ client, bucket: KV_BUCKETS.workflows, retryDelayMs: 100 });
  t.teardown(() => cache.close());
  await new Promise((r) => setTimeout(r, 300));
  t.equal(cache.ready, false);
  const { workflows: kv } = await ensureKvBuckets(client.nc, jsm);
  await kv.put('wf1', JSON.stringify({ id: 'wf1', v: 1 }));
  await cache.whenReady();
  await waitFor(() => cache.has('wf1'), 2000, 'value seen');
});
