/**
 * Idempotency-Key claims in KV (src/nats/idempotency.ts) against a real nats-server 2.9: first / repeat,
 * the race of concurrent first requests, confirm / release, and expiry with the bucket's TTL.
 */
import t from 'tap';
import { claimIdempotencyKey, confirmIdempotencyKey, idempotencyKvKey, releaseIdempotencyKey } from '../../src/nats/idempotency.js';
import { KV_BUCKETS, ensureKvBucket, ensureKvBuckets } from '../../src/nats/streams.js';
import { natsFixture, sleep } from './util.js';

t.test('first claim wins; a repeat gets the stored execution id; scopes are separate', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const { idempotency: kv } = await ensureKvBuckets(client.nc, jsm);
  const first = await claimIdempotencyKey(kv, 'wf1', 'key-1', 'ex-A');
  t.match(first, { ok: true, first: true });
  const repeat = await claimIdempotencyKey(kv, 'wf1', 'key-1', 'ex-B');
  t.match(repeat, { ok: true, first: false, executionId: 'ex-A', state: 'claimed' });
  t.match(await claimIdempotencyKey(kv, 'wf2', 'key-1', 'ex-C'), { ok: true, first: true }, 'same key, other workflow');
  t.match(await claimIdempotencyKey(kv, 'wf1', 'key-2', 'ex-D'), { ok: true, first: true }, 'other key');
  // Scope/key boundaries cannot be confused by concatenation.
  t.not(idempotencyKvKey('a', 'bc'), idempotencyKvKey('ab', 'c'));
  // Header values of any shape: unicode, dots, spaces, long.
  const odd = 'ключ . with spaces/and*wildcards>' + 'x'.repeat(2000);
  t.match(await claimIdempotencyKey(kv, 'wf1', odd, 'ex-E'), { ok: true, first: true });
  t.match(await claimIdempotencyKey(kv, 'wf1', odd, 'ex-F'), { ok: true, first: false, executionId: 'ex-E' });
});

t.test('concurrent first requests: exactly one wins, all see its execution id', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const { idempotency: kv } = await ensureKvBuckets(client.nc, jsm);
  for (let round = 0; round < 5; round++) {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => claimIdempotencyKey(kv, 'wf', `race-${round}`, `ex-${round}-${i}`)));
    const winners = results.flatMap((r, i) => (r.ok && r.first ? [i] : []));
    t.equal(winners.length, 1, `round ${round}: one winner`);
    const winnerId = `ex-${round}-${winners[0]}`;
    t.ok(
      results.every((r) => r.ok && (r.first || r.executionId === winnerId)),
      `round ${round}: the others got ${winnerId}`,
    );
  }
});

t.test('confirm marks the claim queued; release frees the key for a fresh claim', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const { idempotency: kv } = await ensureKvBuckets(client.nc, jsm);
  const a = await claimIdempotencyKey(kv, 'wf', 'k', 'ex-1');
  if (!a.ok || !a.first) throw new Error('expected first');
  t.ok(await confirmIdempotencyKey(kv, 'wf', 'k', 'ex-1', a.revision));
  t.match(await claimIdempotencyKey(kv, 'wf', 'k', 'ex-2'), { ok: true, first: false, executionId: 'ex-1', state: 'queued' });
  t.notOk(await confirmIdempotencyKey(kv, 'wf', 'k', 'ex-1', a.revision), 'stale revision: no overwrite');

  const b = await claimIdempotencyKey(kv, 'wf', 'k2', 'ex-3');
  if (!b.ok || !b.first) throw new Error('expected first');
  t.ok(await releaseIdempotencyKey(kv, 'wf', 'k2', b.revision), 'released (publish failed)');
  t.match(await claimIdempotencyKey(kv, 'wf', 'k2', 'ex-4'), { ok: true, first: true }, 'retry starts afresh');
  const c = await claimIdempotencyKey(kv, 'wf', 'k2', 'ex-5');
  t.match(c, { ok: true, first: false, executionId: 'ex-4' });
  t.notOk(await releaseIdempotencyKey(kv, 'wf', 'k2', b.revision), 'a stale release does not delete the new claim');
});

t.test('a key is honoured for the bucket TTL, then free again', async (t) => {
  const { client, jsm } = await natsFixture(t);
  const kv = await ensureKvBucket(client.nc, jsm, `${KV_BUCKETS.idempotency}-short`, { ttlMs: 1000 });
  t.match(await claimIdempotencyKey(kv, 'wf', 'k', 'ex-1'), { ok: true, first: true });
  await sleep(400);
  t.match(await claimIdempotencyKey(kv, 'wf', 'k', 'ex-2'), { ok: true, first: false, executionId: 'ex-1' }, 'inside the TTL');
  const end = Date.now() + 5000;
  let r;
  do {
    await sleep(200);
    r = await claimIdempotencyKey(kv, 'wf', 'k', 'ex-3');
  } while (!(r.ok && r.first) && Date.now() < end);
  t.match(r, { ok: true, first: true }, 'after the TTL the key can be claimed again');
});
